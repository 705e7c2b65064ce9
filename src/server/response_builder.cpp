#include "server/response_builder.h"

#include <random>

namespace ds4::server {
namespace {

std::string fingerprint(uint64_t seed) { return "ds4-0.1.0-seed-" + std::to_string(seed); }

ojson bytes_of(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

ojson tool_calls_json(const std::vector<ToolCall>& calls, size_t first_index, bool with_index) {
  ojson out = ojson::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    ojson c = ojson::object();
    if (with_index) c["index"] = first_index + i;
    c["id"] = calls[i].id;
    c["type"] = "function";
    c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

ojson envelope(const ResponseMeta& m, const char* object) {
  ojson j = ojson::object();
  j["id"] = m.id;
  j["object"] = object;
  j["created"] = m.created;
  j["model"] = m.model;
  j["system_fingerprint"] = fingerprint(m.seed);
  j["seed"] = m.seed;
  return j;
}

}  // namespace

std::string new_response_id(const std::string& prefix) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

ojson usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

ojson chat_logprobs_json(const std::vector<TokenLogprobEntry>& entries) {
  ojson content = ojson::array();
  for (const auto& e : entries) {
    ojson top = ojson::array();
    for (const auto& [tok, lp] : e.top) top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
    content.push_back({{"token", e.token}, {"logprob", e.logprob}, {"bytes", bytes_of(e.token)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

ojson completion_logprobs_json(const std::vector<TokenLogprobEntry>& entries, size_t text_offset0) {
  ojson tokens = ojson::array(), lps = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  size_t off = text_offset0;
  for (const auto& e : entries) {
    tokens.push_back(e.token);
    lps.push_back(e.logprob);
    ojson top = ojson::object();
    for (const auto& [tok, lp] : e.top) top[tok] = lp;
    tops.push_back(top);
    offsets.push_back(off);
    off += e.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

ojson chat_completion_json(const ResponseMeta& m, const ChatDelta& message, const std::string& finish_reason,
                           const Usage& usage, const ojson& logprobs) {
  ojson msg = ojson::object();
  msg["role"] = "assistant";
  // With tool calls and no text, content is null, as OpenAI returns it.
  if (message.content.empty() && !message.tool_calls.empty()) msg["content"] = nullptr;
  else msg["content"] = message.content;
  if (!message.reasoning.empty()) msg["reasoning_content"] = message.reasoning;
  if (!message.tool_calls.empty()) msg["tool_calls"] = tool_calls_json(message.tool_calls, 0, false);
  ojson choice = {{"index", 0}, {"message", msg}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  ojson j = envelope(m, "chat.completion");
  j["choices"] = ojson::array({choice});
  j["usage"] = usage_json(usage);
  return j;
}

ojson chat_delta_json(const ChatDelta& d, size_t first_tool_index) {
  ojson delta = ojson::object();
  if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
  if (!d.content.empty()) delta["content"] = d.content;
  if (!d.tool_calls.empty()) delta["tool_calls"] = tool_calls_json(d.tool_calls, first_tool_index, true);
  return delta;
}

ojson chat_chunk_json(const ResponseMeta& m, const ojson& delta, const std::optional<std::string>& finish_reason,
                      const ojson& logprobs, bool with_usage_null) {
  ojson choice = {{"index", 0}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
  if (finish_reason) choice["finish_reason"] = *finish_reason;
  ojson j = envelope(m, "chat.completion.chunk");
  j["choices"] = ojson::array({choice});
  if (with_usage_null) j["usage"] = nullptr;
  return j;
}

ojson chat_usage_chunk_json(const ResponseMeta& m, const Usage& usage) {
  ojson j = envelope(m, "chat.completion.chunk");
  j["choices"] = ojson::array();
  j["usage"] = usage_json(usage);
  return j;
}

ojson text_completion_json(const ResponseMeta& m, const std::string& text, const std::string& finish_reason,
                           const Usage& usage, const ojson& logprobs) {
  ojson choice = {{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  ojson j = envelope(m, "text_completion");
  j["choices"] = ojson::array({choice});
  j["usage"] = usage_json(usage);
  return j;
}

ojson text_chunk_json(const ResponseMeta& m, const std::string& text, const std::optional<std::string>& finish_reason,
                      const ojson& logprobs, bool with_usage_null) {
  ojson choice = {{"index", 0}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", nullptr}};
  if (finish_reason) choice["finish_reason"] = *finish_reason;
  ojson j = envelope(m, "text_completion");
  j["choices"] = ojson::array({choice});
  if (with_usage_null) j["usage"] = nullptr;
  return j;
}

ojson text_usage_chunk_json(const ResponseMeta& m, const Usage& usage) {
  ojson j = envelope(m, "text_completion");
  j["choices"] = ojson::array();
  j["usage"] = usage_json(usage);
  return j;
}

ojson model_list_json(const std::string& id, int64_t created, int64_t context_length) {
  ojson model = {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "ds4"},
                 {"max_model_len", context_length}};
  return {{"object", "list"}, {"data", ojson::array({model})}};
}

std::string dump_json(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

}  // namespace ds4::server
