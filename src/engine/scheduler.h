// Admission and execution of generation requests: a bounded queue and worker threads that run each
// request's generation, streaming its tokens through callbacks. submit() returns a handle at once; the
// caller learns the tokens and the result through the callbacks and may cancel at any time.
//
// The interface does not assume one request at a time: several workers run sequences side by side, and
// a batched decoder (the CUDA backend) can replace the per-sequence loop behind the same submit/callback
// contract.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/generator.h"

namespace ds4::engine {

// Runs one request to the end (engine::generate bound to a model and tokenizer, or a test double).
using GenerateFn = std::function<GenerationResult(const GenerationRequest&, const TokenCallback&)>;
// Called exactly once per accepted request, on a worker thread (or in shutdown), after the sequence is
// released: finish_reason "cancelled" when it was cancelled, "error" with .error when generation failed.
using DoneCallback = std::function<void(GenerationResult)>;

struct SchedulerOptions {
  int workers = 1;          // sequences generated at once
  size_t max_queued = 64;   // requests waiting for a worker; more are refused
};

class Job {
 public:
  // Before it starts: it never runs. Running: generation stops at its next token.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  friend class Scheduler;
  GenerationRequest request_;
  TokenCallback on_token_;
  DoneCallback on_done_;
  std::atomic<bool> cancelled_{false};
};

class Scheduler {
 public:
  Scheduler(GenerateFn generate, SchedulerOptions options);
  ~Scheduler();  // shutdown()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // nullptr when the queue is full (the caller answers "try again later"). on_token runs on the worker
  // thread for each emitted token; returning false cancels the request.
  std::shared_ptr<Job> submit(GenerationRequest request, TokenCallback on_token, DoneCallback on_done);

  size_t queued() const;                       // waiting, not cancelled
  size_t active() const { return active_; }    // being generated now
  const SchedulerOptions& options() const { return options_; }

  // Cancels every queued and running request (each gets its on_done) and joins the workers. Idempotent.
  void shutdown();

 private:
  void worker_loop();
  static GenerationResult cancelled_result(const GenerationRequest& r);
  static void finish(Job& job, GenerationResult result);

  GenerateFn generate_;
  SchedulerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::shared_ptr<Job>> running_;
  bool stopping_ = false;
  std::atomic<size_t> active_{0};
  std::vector<std::thread> workers_;
};

}  // namespace ds4::engine
