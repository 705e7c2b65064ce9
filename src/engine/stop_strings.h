// Stop strings on streamed text. Text is emitted as soon as it can no longer be the start of a stop
// string; a suffix that could be is held back until the next piece decides. When a stop string
// completes, the text before it is released and the stop string itself (and anything after it) is not.
//
// Which stop wins: the one that completes first in the text (the smallest end offset), and of those the
// longest. That is what a byte-by-byte stream would see, so the output does not depend on how the text
// was cut into pieces. Emitted text never ends inside a UTF-8 character: an incomplete trailing
// sequence is held too (flush() releases it as is).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::engine {

struct StopFeed {
  std::string text;       // safe to emit now (on a stop: the text before the stop string)
  bool stopped = false;   // a stop string completed; later pieces are ignored
  size_t stop_index = 0;  // index into the list given to StopMatcher, when stopped
};

class StopMatcher {
 public:
  // Empty stop strings are ignored (they would match before any text).
  explicit StopMatcher(std::vector<std::string> stop_strings);

  StopFeed feed(std::string_view piece);

  // End of generation without a stop: releases the held text. Empty after a stop.
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& held() const { return held_; }

 private:
  size_t stop_prefix_suffix_length() const;  // longest suffix of held_ that begins some stop string

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  size_t stop_index_ = 0;
};

}  // namespace ds4::engine
