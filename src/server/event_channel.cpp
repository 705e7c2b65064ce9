#include "server/event_channel.h"

namespace ds4::server {

bool EventChannel::push_token(const engine::TokenEvent& ev) {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return closed_ || events_.size() < capacity_; });
    if (closed_) return false;
    events_.push_back(Event{ev, std::nullopt});
  }
  cv_.notify_all();
  return true;
}

void EventChannel::push_done(engine::GenerationResult result) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(Event{std::nullopt, std::move(result)});  // never waits: the end always gets through
  }
  cv_.notify_all();
}

std::deque<EventChannel::Event> EventChannel::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !events_.empty(); });
  std::deque<Event> out;
  out.swap(events_);
  lock.unlock();
  cv_.notify_all();  // room for a waiting worker
  return out;
}

void EventChannel::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool EventChannel::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace ds4::server
