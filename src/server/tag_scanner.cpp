#include "server/tag_scanner.h"

namespace ds4::server {
namespace {
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
}  // namespace

std::optional<TagMatch> find_tag(std::string_view text, std::string_view tag) {
  if (auto p = text.find(tag); p != std::string_view::npos) return TagMatch{p, true};
  // Only the last tag.size()-1 characters can begin an occurrence that is still incomplete.
  const size_t first = text.size() >= tag.size() ? text.size() - tag.size() + 1 : 0;
  for (size_t p = first; p < text.size(); ++p)
    if (tag.substr(0, text.size() - p) == text.substr(p)) return TagMatch{p, false};
  return std::nullopt;
}

size_t skip_space(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && is_space(text[i])) ++i;
  return i;
}

size_t trailing_space(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && is_space(text[text.size() - 1 - n])) ++n;
  return n;
}

}  // namespace ds4::server
