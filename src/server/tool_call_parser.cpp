#include "server/tool_call_parser.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/tag_scanner.h"

namespace ds4::server {

std::optional<ParsedToolCall> parse_tool_call_body(std::string_view body, const std::vector<std::string>& known) {
  // The body comes from the model, so it is bounded by max_tokens; nesting is bounded like a request's so
  // serialising the arguments cannot recurse without limit.
  int depth = 0, max_depth = 0;
  bool in_str = false, esc = false;
  for (char c : body) {
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
    } else if (c == '"') in_str = true;
    else if (c == '{' || c == '[') max_depth = std::max(max_depth, ++depth);
    else if (c == '}' || c == ']') --depth;
  }
  if (max_depth > 64) return std::nullopt;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return std::nullopt;
  ParsedToolCall call{name->get<std::string>(), "{}"};
  if (call.name.empty()) return std::nullopt;
  if (!known.empty() && std::find(known.begin(), known.end(), call.name) == known.end()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");  // some Qwen variants name it so
  if (args != j.end() && !args->is_null()) {
    if (args->is_object()) {
      call.arguments = args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else if (args->is_string()) {  // arguments already serialised by the model
      auto inner = nlohmann::ordered_json::parse(args->get<std::string>(), nullptr, false);
      if (inner.is_discarded() || !inner.is_object()) return std::nullopt;
      call.arguments = args->get<std::string>();
    } else {
      return std::nullopt;
    }
  }
  return call;
}

ToolCallParser::ToolCallParser(std::vector<std::string> known_names, std::string open_tag, std::string close_tag)
    : known_(std::move(known_names)), open_(std::move(open_tag)), close_(std::move(close_tag)) {}

void ToolCallParser::emit_content(std::string_view text, ToolCallOutput& out) {
  // Hold trailing whitespace: if a call follows, it is dropped with the call's surroundings.
  const size_t t = trailing_space(text);
  if (t == text.size()) {
    space_.append(text);
    return;
  }
  out.content += space_;
  space_.clear();
  out.content.append(text.substr(0, text.size() - t));
  space_.assign(text.substr(text.size() - t));
}

void ToolCallParser::close_call(std::string_view body, bool closed, ToolCallOutput& out) {
  if (auto call = parse_tool_call_body(body, known_)) {
    space_.clear();  // whitespace before a call is not content
    out.calls.push_back(std::move(*call));
    ++calls_made_;
    return;
  }
  std::string raw = open_;
  raw.append(body);
  if (closed) raw += close_;
  out.content += space_;
  space_.clear();
  out.content += raw;
}

ToolCallOutput ToolCallParser::feed(std::string_view text) {
  held_.append(text);
  ToolCallOutput out;
  for (;;) {
    if (inside_) {
      auto m = find_tag(held_, close_);
      if (!m || !m->complete) return out;
      const std::string body = held_.substr(0, m->pos);
      held_.erase(0, m->pos + close_.size());
      inside_ = false;
      close_call(body, true, out);
      continue;
    }
    auto m = find_tag(held_, open_);
    if (!m) {
      emit_content(held_, out);
      held_.clear();
      return out;
    }
    emit_content(std::string_view(held_).substr(0, m->pos), out);
    if (!m->complete) {
      held_.erase(0, m->pos);
      return out;
    }
    held_.erase(0, m->pos + open_.size());
    inside_ = true;
  }
}

ToolCallOutput ToolCallParser::finish() {
  ToolCallOutput out;
  if (inside_) {
    close_call(held_, false, out);
  } else {
    emit_content(held_, out);  // an unfinished open tag is content
  }
  held_.clear();
  inside_ = false;
  if (calls_made_ == 0 || !out.content.empty()) out.content += space_;
  space_.clear();
  return out;
}

}  // namespace ds4::server
