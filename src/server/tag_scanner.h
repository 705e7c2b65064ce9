// Finding a tag (such as "<tool_call>") in text that arrives in pieces: either a complete occurrence, or a
// suffix of the text that may still become one once more text arrives (the caller holds that suffix back).
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace ds4::server {

struct TagMatch {
  size_t pos = 0;         // where the tag (or its possible beginning) starts
  bool complete = false;  // false: text[pos..] is a proper prefix of the tag
};

// The first complete occurrence of `tag`; else the earliest suffix of `text` that is a proper prefix of
// `tag`; else nullopt. `tag` must not be empty.
std::optional<TagMatch> find_tag(std::string_view text, std::string_view tag);

// Index of the first character that is not ASCII whitespace (text.size() when there is none).
size_t skip_space(std::string_view text);

// Length of the trailing ASCII whitespace.
size_t trailing_space(std::string_view text);

}  // namespace ds4::server
