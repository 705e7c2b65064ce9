#include "server/chat_output.h"

#include <random>

namespace ds4::server {

void ChatDelta::append(ChatDelta&& d) {
  reasoning += d.reasoning;
  content += d.content;
  for (auto& c : d.tool_calls) tool_calls.push_back(std::move(c));
}

std::string new_tool_call_id() {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

ChatOutput::ChatOutput(ChatOutputOptions o) {
  const auto& f = o.format;
  if (!f.think_open.empty() && !f.think_close.empty())
    reasoning_ = std::make_unique<ReasoningParser>(f.think_open, f.think_close, o.starts_in_reasoning);
  if (o.parse_tools && !f.tool_open.empty() && !f.tool_close.empty())
    tools_ = std::make_unique<ToolCallParser>(o.tool_names, f.tool_open, f.tool_close);
  // The forced text goes through both parsers, as if the model had written it.
  if (!o.forced_prefix.empty()) pending_ = feed(o.forced_prefix);
}

void ChatOutput::add_content(std::string_view text, bool final, ChatDelta& out) {
  if (!tools_) {
    out.content.append(text);
    return;
  }
  ToolCallOutput t = tools_->feed(text);
  if (final) {
    ToolCallOutput f = tools_->finish();
    t.content += f.content;
    for (auto& c : f.calls) t.calls.push_back(std::move(c));
  }
  out.content += t.content;
  for (auto& c : t.calls) out.tool_calls.push_back({new_tool_call_id(), std::move(c.name), std::move(c.arguments)});
}

ChatDelta ChatOutput::feed(std::string_view text) {
  ChatDelta out = std::move(pending_);
  pending_ = {};
  if (!reasoning_) {
    add_content(text, false, out);
    return out;
  }
  ReasoningSplit s = reasoning_->feed(text);
  out.reasoning += s.reasoning;
  add_content(s.content, false, out);
  return out;
}

ChatDelta ChatOutput::finish() {
  ChatDelta out = std::move(pending_);
  pending_ = {};
  if (!reasoning_) {
    add_content("", true, out);
    return out;
  }
  ReasoningSplit s = reasoning_->finish();
  out.reasoning += s.reasoning;
  add_content(s.content, true, out);
  return out;
}

}  // namespace ds4::server
