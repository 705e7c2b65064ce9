// Hands one request's generation events from the scheduler's worker thread to the HTTP thread that
// answers the client. The worker never blocks on the client: events queue here (bounded by max_tokens)
// and the reader takes them in batches.
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

  // Worker side. push_token returns false once the reader has gone (the worker then cancels).
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
  bool closed_ = false;
};

}  // namespace ds4::server
