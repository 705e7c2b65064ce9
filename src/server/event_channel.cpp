#include "server/event_channel.h"

namespace ds4::server {

bool EventChannel::push_token(const engine::TokenEvent& ev) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    events_.push_back(Event{ev, std::nullopt});
  }
  cv_.notify_one();
  return true;
}

void EventChannel::push_done(engine::GenerationResult result) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(Event{std::nullopt, std::move(result)});
  }
  cv_.notify_one();
}

std::deque<EventChannel::Event> EventChannel::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !events_.empty(); });
  std::deque<Event> out;
  out.swap(events_);
  return out;
}

void EventChannel::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
}

bool EventChannel::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace ds4::server
