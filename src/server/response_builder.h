// The JSON bodies of OpenAI responses: chat.completion and chat.completion.chunk, text_completion (whole
// and streamed), usage and logprobs, and the model list. Every builder takes plain values, so streamed and
// whole responses share one shape.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/chat_output.h"

namespace ds4::server {

using ojson = nlohmann::ordered_json;

// What every response and chunk of one request repeats.
struct ResponseMeta {
  std::string id;  // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;
  std::string model;
  uint64_t seed = 0;  // the seed the request ran with, reported as "seed" (and in system_fingerprint)
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct TokenLogprobEntry {
  std::string token;  // the token's text
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;  // most likely alternatives
};

// "chatcmpl-" / "cmpl-" followed by 24 random alphanumerics.
std::string new_response_id(const std::string& prefix);

ojson usage_json(const Usage& u);

// {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]}
ojson chat_logprobs_json(const std::vector<TokenLogprobEntry>& entries);
// The legacy completions shape: tokens, token_logprobs, top_logprobs, text_offset (from `text_offset0`).
ojson completion_logprobs_json(const std::vector<TokenLogprobEntry>& entries, size_t text_offset0);

// A whole chat.completion. `finish_reason`: stop, length or tool_calls. `logprobs`: null when not asked.
ojson chat_completion_json(const ResponseMeta& m, const ChatDelta& message, const std::string& finish_reason,
                           const Usage& usage, const ojson& logprobs);

// One chat.completion.chunk with a single choice. `delta` is the JSON delta object; `with_usage_null` adds
// "usage": null (streams with include_usage carry it on every chunk).
ojson chat_chunk_json(const ResponseMeta& m, const ojson& delta, const std::optional<std::string>& finish_reason,
                      const ojson& logprobs, bool with_usage_null);
// The delta object for a ChatDelta; tool calls get consecutive indexes starting at `first_tool_index`.
ojson chat_delta_json(const ChatDelta& d, size_t first_tool_index);
// The final chunk of a stream with include_usage: no choices, the usage.
ojson chat_usage_chunk_json(const ResponseMeta& m, const Usage& usage);

ojson text_completion_json(const ResponseMeta& m, const std::string& text, const std::string& finish_reason,
                           const Usage& usage, const ojson& logprobs);
ojson text_chunk_json(const ResponseMeta& m, const std::string& text, const std::optional<std::string>& finish_reason,
                      const ojson& logprobs, bool with_usage_null);
ojson text_usage_chunk_json(const ResponseMeta& m, const Usage& usage);

ojson model_list_json(const std::string& id, int64_t created, int64_t context_length);

// Serialises for the wire: compact, and invalid UTF-8 (which a model can produce) becomes U+FFFD instead of
// an exception.
std::string dump_json(const ojson& j);

}  // namespace ds4::server
