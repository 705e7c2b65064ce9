#include "engine/stop_strings.h"

#include <algorithm>

namespace ds4::engine {
namespace {

// Bytes at the end of `s` that begin a UTF-8 character without completing it (0 when the last character
// is complete). Malformed bytes count as complete, so a bad stream cannot be held back for ever.
size_t incomplete_utf8_tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    const auto b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    return back < need ? back : 0;
  }
  return 0;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {}

size_t StopMatcher::stop_prefix_suffix_length() const {
  size_t best = 0;
  const std::string_view held(held_);
  for (const auto& stop : stops_) {
    // Proper prefixes only: a whole stop string in held_ has already been reported as a match.
    for (size_t k = std::min(stop.size() - (stop.empty() ? 0 : 1), held.size()); k > best; --k) {
      if (held.ends_with(std::string_view(stop).substr(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

StopFeed StopMatcher::feed(std::string_view piece) {
  StopFeed out;
  if (stopped_) {
    out.stopped = true;
    out.stop_index = stop_index_;
    return out;
  }
  held_.append(piece);
  // A match cannot begin in text already emitted: held_ always starts at the longest suffix that could
  // begin a stop string, so searching held_ from its start sees every match.
  size_t best_end = std::string::npos, best_len = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty()) continue;
    const size_t pos = held_.find(stops_[i]);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stops_[i].size();
    if (end < best_end || (end == best_end && stops_[i].size() > best_len)) {
      best_end = end;
      best_len = stops_[i].size();
      stop_index_ = i;
    }
  }
  if (best_end != std::string::npos) {
    out.text = held_.substr(0, best_end - best_len);
    out.stopped = stopped_ = true;
    out.stop_index = stop_index_;
    held_.clear();
    return out;
  }
  const size_t keep = std::max(stop_prefix_suffix_length(), incomplete_utf8_tail(held_));
  out.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace ds4::engine
