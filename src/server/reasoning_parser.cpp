#include "server/reasoning_parser.h"

#include "server/tag_scanner.h"

namespace ds4::server {

ReasoningParser::ReasoningParser(std::string open_tag, std::string close_tag, bool starts_inside)
    : open_(std::move(open_tag)),
      close_(std::move(close_tag)),
      state_(starts_inside ? State::Reasoning : State::Start),
      skip_space_(starts_inside) {}

ReasoningSplit ReasoningParser::feed(std::string_view text) {
  held_.append(text);
  ReasoningSplit out;
  drain(out);
  return out;
}

void ReasoningParser::drain(ReasoningSplit& out) {
  for (;;) {
    if (state_ == State::Start) {
      const size_t s = skip_space(held_);
      const std::string_view rest = std::string_view(held_).substr(s);
      if (rest.empty()) return;  // only whitespace so far: it may precede the open tag
      if (rest.size() < open_.size() && open_.compare(0, rest.size(), rest) == 0) return;  // maybe the tag
      if (rest.substr(0, open_.size()) == open_) {
        held_.erase(0, s + open_.size());
        state_ = State::Reasoning;
        skip_space_ = true;
      } else {
        state_ = State::Content;
        skip_space_ = false;
      }
      continue;
    }
    if (skip_space_) {
      const size_t s = skip_space(held_);
      held_.erase(0, s);
      if (held_.empty()) return;
      skip_space_ = false;
    }
    if (state_ == State::Content) {
      out.content += held_;
      held_.clear();
      return;
    }
    // Reasoning: release everything before the close tag, or before what may become it.
    auto m = find_tag(held_, close_);
    if (!m) {
      out.reasoning += held_;
      held_.clear();
      return;
    }
    out.reasoning += held_.substr(0, m->pos);
    if (!m->complete) {
      held_.erase(0, m->pos);
      return;
    }
    held_.erase(0, m->pos + close_.size());
    state_ = State::Content;
    skip_space_ = true;
  }
}

ReasoningSplit ReasoningParser::finish() {
  ReasoningSplit out;
  if (state_ == State::Reasoning) {
    if (!skip_space_) out.reasoning += held_;
  } else if (!(state_ == State::Content && skip_space_)) {
    // Start: whitespace alone or an unfinished open tag is plain content.
    out.content += held_;
  }
  held_.clear();
  return out;
}

}  // namespace ds4::server
