// Hands one request's generation events from the scheduler's worker thread to the HTTP thread that
// answers the client. Events queue here and the reader takes them in batches. The queue is bounded: a
// client that reads slower than the model generates holds its generation back (instead of the server
// buffering the whole answer), and a client that stops reading is found out by the write timeout, which
// closes the channel and so releases the worker.
#pragma once
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/generator.h"

namespace ds4::server {

class EventChannel {
 public:
  // One token, or the end of the request.
  struct Event {
    std::optional<engine::TokenEvent> token;
    std::optional<engine::GenerationResult> done;
  };

  explicit EventChannel(size_t capacity = 4096) : capacity_(capacity) {}

  // Worker side. push_token waits while the queue is full; it returns false once the reader has gone
  // (the worker then cancels).
  bool push_token(const engine::TokenEvent& ev);
  void push_done(engine::GenerationResult result);

  // Reader side: blocks until an event is ready, then takes all ready events.
  std::deque<Event> wait();
  void close();  // the reader has gone: later tokens are refused
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  size_t capacity_;
  bool closed_ = false;
};

}  // namespace ds4::server
