#include "engine/scheduler.h"

#include <algorithm>
#include <new>

namespace ds4::engine {

Scheduler::Scheduler(GenerateFn generate, SchedulerOptions options)
    : generate_(std::move(generate)), options_(options) {
  if (options_.workers < 1) options_.workers = 1;
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

std::shared_ptr<Job> Scheduler::submit(GenerationRequest request, TokenCallback on_token, DoneCallback on_done) {
  auto job = std::make_shared<Job>();
  job->request_ = std::move(request);
  job->on_token_ = std::move(on_token);
  job->on_done_ = std::move(on_done);
  {
    std::lock_guard lock(mu_);
    if (stopping_) return nullptr;
    // Cancelled jobs still in the queue are dropped here rather than counted against the bound.
    std::erase_if(queue_, [](const std::shared_ptr<Job>& j) {
      if (!j->cancelled()) return false;
      finish(*j, cancelled_result(j->request_));
      return true;
    });
    if (queue_.size() >= options_.max_queued) return nullptr;
    queue_.push_back(job);
  }
  cv_.notify_one();
  return job;
}

size_t Scheduler::queued() const {
  std::lock_guard lock(mu_);
  return size_t(std::count_if(queue_.begin(), queue_.end(), [](const auto& j) { return !j->cancelled(); }));
}

GenerationResult Scheduler::cancelled_result(const GenerationRequest& r) {
  GenerationResult res;
  res.finish_reason = "cancelled";
  res.prompt_tokens = int64_t(r.prompt.size());
  res.seed = r.seed.value_or(0);
  return res;
}

void Scheduler::worker_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      if (!job->cancelled()) {
        running_.push_back(job);
        ++active_;
      }
    }
    if (job->cancelled()) {
      finish(*job, cancelled_result(job->request_));
      continue;
    }
    GenerationResult result;
    try {
      result = generate_(job->request_, [&job](const TokenEvent& ev) {
        if (job->cancelled()) return false;
        if (job->on_token_ && !job->on_token_(ev)) {
          job->cancel();
          return false;
        }
        return !job->cancelled();
      });
    } catch (const Error& e) {
      result = cancelled_result(job->request_);
      result.finish_reason = "error";
      result.error = e;
    } catch (const std::bad_alloc&) {
      result = cancelled_result(job->request_);
      result.finish_reason = "error";
      result.error = Error(ErrorKind::Internal, "out of memory while generating");
    } catch (const std::exception& e) {
      result = cancelled_result(job->request_);
      result.finish_reason = "error";
      result.error = Error(ErrorKind::Internal, e.what());
    }
    if (job->cancelled() && result.finish_reason != "error") result.finish_reason = "cancelled";
    {
      // The sequence is released before the caller hears the result, so whoever observes the end of a
      // request also observes it gone from active().
      std::lock_guard lock(mu_);
      std::erase(running_, job);
      --active_;
    }
    finish(*job, std::move(result));
  }
}

void Scheduler::finish(Job& job, GenerationResult result) {
  // A throwing callback must not take the worker (and the process) down with it.
  try {
    job.on_done_(std::move(result));
  } catch (...) {
  }
}

void Scheduler::shutdown() {
  std::deque<std::shared_ptr<Job>> left;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    left.swap(queue_);
    for (auto& j : running_) j->cancel();
  }
  cv_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
  for (auto& j : left) finish(*j, cancelled_result(j->request_));
}

}  // namespace ds4::engine
