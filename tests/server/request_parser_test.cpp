// The OpenAI request parser: accepted bodies become the typed request; every invalid body is a 400 naming
// the field (OpenAI error shape), never a crash.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/request.h"

namespace ds4::server {
namespace {

// The ApiError a body produces (fails the test when it parses).
template <class Parse>
ApiError error_of(Parse parse, const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "");
}

ApiError chat_error(const std::string& body) {
  return error_of([](std::string_view b) { return parse_chat_request(b); }, body);
}
ApiError completion_error(const std::string& body) {
  return error_of([](std::string_view b) { return parse_completion_request(b); }, body);
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";

TEST(ChatRequest, ParsesEveryField) {
  auto r = parse_chat_request(R"({"model": "m", )" + kMsgs + R"(, "max_completion_tokens": 7, "max_tokens": 9,
      "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "presence_penalty": 0.5,
      "frequency_penalty": -0.5, "seed": 18446744073709551615, "stop": ["a", "b"], "stream": true,
      "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 3, "n": 1, "user": "u",
      "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
      "tool_choice": {"type": "function", "function": {"name": "f"}}, "chat_template_kwargs": {"enable_thinking": false}})");
  const auto& o = r.options;
  EXPECT_EQ(o.model, "m");
  EXPECT_EQ(o.max_tokens, 7);  // max_completion_tokens wins
  EXPECT_DOUBLE_EQ(o.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(o.sampling.top_p, 0.9);
  EXPECT_EQ(o.sampling.top_k, 40);
  EXPECT_DOUBLE_EQ(o.sampling.min_p, 0.05);
  EXPECT_DOUBLE_EQ(o.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(o.sampling.frequency_penalty, -0.5);
  EXPECT_EQ(o.seed, UINT64_MAX);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.stream);
  EXPECT_TRUE(o.include_usage);
  EXPECT_EQ(o.top_logprobs, 3);
  EXPECT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tool_choice.mode, ToolChoiceMode::Function);
  EXPECT_EQ(r.tool_choice.function, "f");
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
}

TEST(ChatRequest, DefaultsAndNulls) {
  auto r = parse_chat_request(R"({"model": "m", )" + kMsgs + R"(, "temperature": null, "stop": "x", "seed": null})");
  EXPECT_FALSE(r.options.max_tokens);
  EXPECT_DOUBLE_EQ(r.options.sampling.temperature, 1.0);
  EXPECT_EQ(r.options.stop, std::vector<std::string>{"x"});
  EXPECT_FALSE(r.options.seed);
  EXPECT_FALSE(r.options.stream);
  EXPECT_EQ(r.options.top_logprobs, -1);
  EXPECT_EQ(r.tool_choice.mode, ToolChoiceMode::None);  // no tools
}

TEST(ChatRequest, ModelDefaultsFillWhatTheBodyLeavesOut) {
  engine::SamplingParams d;
  d.temperature = 0.7;
  d.top_k = 20;
  d.top_p = 0.8;
  auto r = parse_chat_request(R"({"model": "m", )" + kMsgs + R"(, "top_p": 0.5})", d);
  EXPECT_DOUBLE_EQ(r.options.sampling.temperature, 0.7);
  EXPECT_EQ(r.options.sampling.top_k, 20);
  EXPECT_DOUBLE_EQ(r.options.sampling.top_p, 0.5);
  auto c = parse_completion_request(R"({"model": "m", "prompt": "x", "temperature": 0})", d);
  EXPECT_DOUBLE_EQ(c.options.sampling.temperature, 0.0);
  EXPECT_EQ(c.options.sampling.top_k, 20);
}

TEST(ChatRequest, NormalisesMessages) {
  auto r = parse_chat_request(R"({"model": "m", "messages": [
      {"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "user", "content": "q", "name": "bob"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "r"}]})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[0]["content"], "a\nb");
  EXPECT_EQ(r.messages[1]["name"], "bob");
  EXPECT_TRUE(r.messages[2]["content"].is_null());
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"], "{\"x\":1}");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "c1");
}

TEST(ChatRequest, MalformedJson) {
  for (const char* body : {"", "{", "{\"model\": }", "[1, 2]", "null", "{\"model\": \"m\",}", "\xff", "{\"seed\": 1e999}"}) {
    auto e = chat_error(body);
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.type(), "invalid_request_error");
    EXPECT_EQ(e.code(), "invalid_json") << body;
  }
}

TEST(ChatRequest, TooDeepJson) {
  auto e = chat_error(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(e.code(), "invalid_json");
  EXPECT_NE(std::string(e.what()).find("deeper"), std::string::npos);
}

TEST(ChatRequest, WrongTypesNameTheField) {
  struct Case {
    std::string extra, param;
  };
  const std::vector<Case> cases = {
      {R"("temperature": "hot")", "temperature"},
      {R"("max_tokens": 1.5)", "max_tokens"},
      {R"("max_tokens": "7")", "max_tokens"},
      {R"("stream": 1)", "stream"},
      {R"("stop": [1])", "stop"},
      {R"("seed": "1")", "seed"},
      {R"("top_k": 2.5)", "top_k"},
      {R"("tools": {})", "tools"},
      {R"("tool_choice": 3, "tools": [{"type": "function", "function": {"name": "f"}}])", "tool_choice"},
      {R"("stream": true, "stream_options": [])", "stream_options"},
      {R"("logprobs": "yes")", "logprobs"},
  };
  for (const auto& c : cases) {
    auto e = chat_error(R"({"model": "m", )" + kMsgs + ", " + c.extra + "}");
    EXPECT_EQ(e.status(), 400) << c.extra;
    EXPECT_EQ(e.param(), c.param) << c.extra;
    EXPECT_EQ(e.code(), "invalid_type") << c.extra;
    EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << e.what();
  }
}

TEST(ChatRequest, ValuesOutOfRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("temperature": 2.5)", "temperature"},   {R"("temperature": -1)", "temperature"},
      {R"("top_p": 0)", "top_p"},                 {R"("top_p": 1.5)", "top_p"},
      {R"("min_p": 2)", "min_p"},                 {R"("presence_penalty": 3)", "presence_penalty"},
      {R"("frequency_penalty": -2.5)", "frequency_penalty"},
      {R"("max_tokens": 0)", "max_tokens"},       {R"("max_completion_tokens": -5)", "max_completion_tokens"},
      {R"("seed": -1)", "seed"},                  {R"("n": 2)", "n"},
      {R"("stop": ["a","b","c","d","e"])", "stop"},
      {R"("top_logprobs": 21, "logprobs": true)", "top_logprobs"},
      {R"("top_logprobs": 2)", "top_logprobs"},   // without logprobs
      {R"("stream_options": {"include_usage": true})", "stream_options"},  // without stream
      {R"("messages": [])", "messages"},
  };
  for (const auto& [extra, param] : cases) {
    // Later keys win in nlohmann's parser, so "messages" can be overridden.
    auto e = chat_error(R"({"model": "m", )" + kMsgs + ", " + extra + "}");
    EXPECT_EQ(e.status(), 400) << extra;
    EXPECT_EQ(e.param(), param) << extra;
  }
}

TEST(ChatRequest, RefusesWhatItCannotHonour) {
  for (const std::string extra : {R"("logit_bias": {"5": 10})", R"("response_format": {"type": "json_object"})",
                                  R"("functions": [])", R"("repetition_penalty": 1.2)", R"("modalities": ["audio"])",
                                  R"("audio": {"voice": "x"})"}) {
    auto e = chat_error(R"({"model": "m", )" + kMsgs + ", " + extra + "}");
    EXPECT_EQ(e.status(), 400) << extra;
    EXPECT_EQ(e.code(), "unsupported_parameter") << extra;
  }
  // Empty or neutral values are fine.
  parse_chat_request(R"({"model": "m", )" + kMsgs +
                     R"(, "logit_bias": {}, "response_format": {"type": "text"}, "repetition_penalty": 1})");
}

TEST(ChatRequest, BadMessages) {
  for (const std::string msgs : {R"("messages": "hi")", R"("messages": [1])", R"("messages": [{"content": "x"}])",
                                 R"("messages": [{"role": "wizard", "content": "x"}])",
                                 R"("messages": [{"role": "user"}])",
                                 R"("messages": [{"role": "user", "content": 5}])",
                                 R"("messages": [{"role": "user", "content": [{"type": "image_url"}]}])",
                                 R"("messages": [{"role": "tool", "content": "x"}])",
                                 R"("messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}])"}) {
    auto e = chat_error(R"({"model": "m", )" + msgs + "}");
    EXPECT_EQ(e.status(), 400) << msgs;
    EXPECT_EQ(e.param().rfind("messages", 0), 0u) << msgs << " -> " << e.param();
  }
}

TEST(ChatRequest, BadTools) {
  const std::string f = R"({"type": "function", "function": {"name": "f"}})";
  for (const std::string& extra : std::vector<std::string>{
           R"("tools": [{"type": "retrieval"}])", R"("tools": [{"type": "function"}])",
        R"("tools": [{"type": "function", "function": {"name": "bad name"}}])", R"("tools": [)" + f + "," + f + "]",
        R"("tool_choice": "auto")", R"("tool_choice": "sometimes", "tools": [)" + f + "]",
        R"("tool_choice": {"type": "function", "function": {"name": "g"}}, "tools": [)" + f + "]"}) {
    auto e = chat_error(R"({"model": "m", )" + kMsgs + ", " + extra + "}");
    EXPECT_EQ(e.status(), 400) << extra;
    EXPECT_EQ(e.param().substr(0, 4), "tool") << extra;
  }
}

TEST(ChatRequest, ModelIsRequired) {
  auto e = chat_error("{" + kMsgs + "}");
  EXPECT_EQ(e.param(), "model");
  EXPECT_EQ(e.code(), "missing_required_parameter");
}

TEST(ApiErrorBody, HasTheOpenAiShape) {
  auto e = invalid_request("bad", "temperature", "invalid_value");
  auto b = e.body();
  EXPECT_EQ(b["error"]["message"], "bad");
  EXPECT_EQ(b["error"]["type"], "invalid_request_error");
  EXPECT_EQ(b["error"]["param"], "temperature");
  EXPECT_EQ(b["error"]["code"], "invalid_value");
  auto n = invalid_request("x").body();
  EXPECT_TRUE(n["error"]["param"].is_null());
  EXPECT_TRUE(n["error"]["code"].is_null());
}

TEST(CompletionRequest, PromptForms) {
  auto r = parse_completion_request(R"({"model": "m", "prompt": "hello"})");
  EXPECT_EQ(std::get<std::string>(r.prompt), "hello");
  EXPECT_EQ(r.options.max_tokens, 16);  // the legacy default
  r = parse_completion_request(R"({"model": "m", "prompt": ["hello"], "logprobs": 2})");
  EXPECT_EQ(std::get<std::string>(r.prompt), "hello");
  EXPECT_EQ(r.options.top_logprobs, 2);
  r = parse_completion_request(R"({"model": "m", "prompt": [1, 2, 3]})");
  EXPECT_EQ(std::get<std::vector<int32_t>>(r.prompt), (std::vector<int32_t>{1, 2, 3}));
  r = parse_completion_request(R"({"model": "m", "prompt": [[4, 5]]})");
  EXPECT_EQ(std::get<std::vector<int32_t>>(r.prompt), (std::vector<int32_t>{4, 5}));
}

TEST(CompletionRequest, BadPrompts) {
  for (const std::string p : {R"("prompt": 5)", R"("prompt": [])", R"("prompt": ["a", "b"])", R"("prompt": [-1])",
                              R"("prompt": [1.5])", R"("prompt": [[]])", R"("prompt": [1, "a"])"}) {
    auto e = completion_error(R"({"model": "m", )" + p + "}");
    EXPECT_EQ(e.status(), 400) << p;
    EXPECT_EQ(e.param(), "prompt") << p;
  }
  EXPECT_EQ(completion_error(R"({"model": "m"})").param(), "prompt");
  EXPECT_EQ(completion_error(R"({"model": "m", "prompt": "x", "echo": true})").param(), "echo");
  EXPECT_EQ(completion_error(R"({"model": "m", "prompt": "x", "best_of": 3})").param(), "best_of");
  EXPECT_EQ(completion_error(R"({"model": "m", "prompt": "x", "suffix": "y"})").param(), "suffix");
}

}  // namespace
}  // namespace ds4::server
