// The typed form of the OpenAI request bodies this server accepts (POST /v1/chat/completions and
// /v1/completions). Parsing validates every field it reads: wrong types, values out of range, and fields
// whose meaning the server cannot honour (n > 1, logit_bias, JSON response formats, ...) are ApiErrors
// naming the field; fields that do not change the output (user, metadata, ...) are accepted and ignored.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/sampling_params.h"

namespace ds4::server {

enum class ToolChoiceMode { Auto, None, Required, Function };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::Auto;
  std::string function;  // for Function: the tool that must be called
};

// The fields both endpoints share.
struct GenerationOptions {
  std::string model;
  std::optional<int64_t> max_tokens;  // absent: up to the end of the context
  engine::SamplingParams sampling;    // the request's, else the model's defaults
  std::optional<uint64_t> seed;       // absent: the server draws one and reports it
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  int top_logprobs = -1;              // -1: no logprobs; else the chosen token's and this many alternatives
};

struct ChatRequest {
  GenerationOptions options;
  // Validated messages as the chat template expects them: "developer" is renamed "system", text parts
  // are joined into one content string, null content stays null.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // [{"type":"function","function":{...}}]
  ToolChoice tool_choice;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
};

struct CompletionRequest {
  GenerationOptions options;
  std::variant<std::string, std::vector<int32_t>> prompt;  // text, or token ids (range-checked later)
};

// Throw ApiError (400) for anything invalid. Sampling fields the body leaves out take `defaults` (the
// model's generation_config.json).
ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams& defaults = {});
CompletionRequest parse_completion_request(std::string_view body, const engine::SamplingParams& defaults = {});

// Deeper JSON than this is refused before it is parsed (the validators and the template recurse).
constexpr int kMaxJsonDepth = 64;

}  // namespace ds4::server
