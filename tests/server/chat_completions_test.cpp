// /v1/chat/completions over HTTP against a scripted model: content, streaming, reasoning, tool calls, stop
// strings, logprobs, usage and finish reasons. Expected values come from the script and from rendering
// the chat template and tokenizing independently of the server.
#include <gtest/gtest.h>

#include <cmath>

#include "support/test_server.h"

namespace ds4::test {
namespace {

const std::string kToolCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>";

std::vector<ScriptedReply> replies() {
  return {
      {"", "Hello! How can I help?"},
      {"think about", "<think>\nTwo plus two.\n</think>\n\nIt is 4."},
      {"weather in", kToolCall},
      {"<tool_response>", "It is sunny in Paris."},
      {"broken call", "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>"},
      {"stop test", "Hello world. Goodbye world."},
      {"two calls", kToolCall + "\n" + kToolCall},
      {"forced", "{\"city\": \"Rome\"}}\n</tool_call>"},
      {"required call", "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"},
      {"unicode", "Grüße 😀 日本"},
  };
}

json tools() {
  return json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
}

// Collects a streamed chat response into the same shape as a whole one.
struct Streamed {
  std::string role, content, reasoning;
  json tool_calls = json::array();
  std::string finish_reason;
  json usage;
  json logprobs = json::array();
  bool done = false;
  int chunks = 0;
};

Streamed collect(const std::string& body) {
  Streamed s;
  for (const auto& p : sse_payloads(body)) {
    if (p == "[DONE]") {
      s.done = true;
      continue;
    }
    auto c = json::parse(p);
    ++s.chunks;
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (c.contains("usage") && !c["usage"].is_null()) s.usage = c["usage"];
    if (c["choices"].empty()) continue;
    const auto& ch = c["choices"][0];
    const auto& d = ch["delta"];
    if (d.contains("role")) s.role = d["role"];
    if (d.contains("content") && d["content"].is_string()) s.content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) s.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const auto& tc : d["tool_calls"]) s.tool_calls.push_back(tc);
    if (!ch["finish_reason"].is_null()) s.finish_reason = ch["finish_reason"];
    if (ch.contains("logprobs") && !ch["logprobs"].is_null())
      for (const auto& e : ch["logprobs"]["content"]) s.logprobs.push_back(e);
  }
  return s;
}

std::string stream_body(const TestServer& srv, json body) {
  body["stream"] = true;
  auto res = srv.client().Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return "";
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  return res->body;
}

// The prompt length the server must report: the template rendered and tokenized here.
int64_t prompt_tokens_of(const json& messages, const json& tools = nullptr) {
  nlohmann::ordered_json req = {{"messages", nlohmann::ordered_json::parse(messages.dump())}};
  if (!tools.is_null()) req["tools"] = nlohmann::ordered_json::parse(tools.dump());
  req["add_generation_prompt"] = true;
  return int64_t(test_tokenizer().encode(test_renderer()(req), false).size());
}

int64_t reply_tokens(const std::string& text) { return int64_t(test_tokenizer().encode(text, false).size()) + 1; }

TEST(ChatCompletions, PlainAnswerWithUsage) {
  TestServer srv(replies());
  auto body = chat_body("hi there");
  auto [status, r] = srv.post("/v1/chat/completions", body);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "scripted");
  EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const auto& c = r["choices"][0];
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["message"]["content"], "Hello! How can I help?");
  EXPECT_FALSE(c["message"].contains("tool_calls"));
  EXPECT_FALSE(c["message"].contains("reasoning_content"));
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_tokens_of(body["messages"]));
  EXPECT_EQ(r["usage"]["completion_tokens"], reply_tokens("Hello! How can I help?"));
  EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"].get<int64_t>() + reply_tokens("Hello! How can I help?"));
  EXPECT_TRUE(r["seed"].is_number_unsigned());
}

TEST(ChatCompletions, StreamEqualsWholeResponse) {
  TestServer srv(replies());
  for (const std::string user : {"hi", "think about it", "weather in Paris?", "unicode please", "two calls"}) {
    auto body = chat_body(user, {{"tools", tools()}, {"seed", 5}});
    auto [status, whole] = srv.post("/v1/chat/completions", body);
    ASSERT_EQ(status, 200) << whole;
    body["stream_options"] = {{"include_usage", true}};
    auto s = collect(stream_body(srv, body));
    const auto& m = whole["choices"][0]["message"];
    EXPECT_TRUE(s.done) << user;
    EXPECT_EQ(s.role, "assistant");
    EXPECT_EQ(s.content, m["content"].is_null() ? "" : m["content"].get<std::string>()) << user;
    EXPECT_EQ(s.reasoning, m.value("reasoning_content", "")) << user;
    EXPECT_EQ(s.finish_reason, whole["choices"][0]["finish_reason"]) << user;
    EXPECT_EQ(s.usage, whole["usage"]) << user;
    const json calls = m.value("tool_calls", json::array());
    ASSERT_EQ(s.tool_calls.size(), calls.size()) << user;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(s.tool_calls[i]["index"], i);
      EXPECT_EQ(s.tool_calls[i]["function"]["name"], calls[i]["function"]["name"]);
      EXPECT_EQ(s.tool_calls[i]["function"]["arguments"], calls[i]["function"]["arguments"]);
    }
  }
}

TEST(ChatCompletions, ReasoningContent) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("think about 2+2"));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["choices"][0]["message"]["reasoning_content"], "Two plus two.\n");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "It is 4.");
  auto s = collect(stream_body(srv, chat_body("think about 2+2")));
  EXPECT_EQ(s.reasoning, "Two plus two.\n");
  EXPECT_EQ(s.content, "It is 4.");
}

TEST(ChatCompletions, ReasoningWhenThePromptOpensTheBlock) {
  // enable_thinking: true makes the template end with "<think>\n"; the model then writes only the inside.
  TestServer srv(std::vector<ScriptedReply>{{"", "Thinking hard.\n</think>\n\nDone."}});
  auto [status, r] =
      srv.post("/v1/chat/completions", chat_body("x", {{"chat_template_kwargs", {{"enable_thinking", true}}}}));
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["choices"][0]["message"]["reasoning_content"], "Thinking hard.\n");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Done.");
}

TEST(ChatCompletions, ToolCallRoundTrip) {
  TestServer srv(replies());
  auto body = chat_body("What is the weather in Paris?", {{"tools", tools()}});
  auto [status, r] = srv.post("/v1/chat/completions", body);
  ASSERT_EQ(status, 200) << r;
  const auto& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const auto& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_tokens_of(body["messages"], tools()));

  // Send the call and its result back: the template renders both and the model answers.
  body["messages"].push_back(c["message"]);
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "sunny, 24C"}});
  auto [status2, r2] = srv.post("/v1/chat/completions", body);
  ASSERT_EQ(status2, 200) << r2;
  EXPECT_EQ(r2["choices"][0]["message"]["content"], "It is sunny in Paris.");
  EXPECT_EQ(r2["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r2["usage"]["prompt_tokens"], prompt_tokens_of(body["messages"], tools()));
}

TEST(ChatCompletions, MalformedToolCallFallsBackToContent) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("broken call", {{"tools", tools()}}));
  ASSERT_EQ(status, 200);
  const auto& m = r["choices"][0]["message"];
  EXPECT_FALSE(m.contains("tool_calls"));
  EXPECT_EQ(m["content"], "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST(ChatCompletions, ToolChoiceNoneLeavesTextAlone) {
  TestServer srv(replies());
  auto [status, r] =
      srv.post("/v1/chat/completions", chat_body("weather in Rome?", {{"tools", tools()}, {"tool_choice", "none"}}));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["choices"][0]["message"]["content"], kToolCall);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST(ChatCompletions, NamedToolChoiceForcesTheCall) {
  TestServer srv(replies());
  auto body = chat_body("forced", {{"tools", tools()},
                                   {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}});
  auto [status, r] = srv.post("/v1/chat/completions", body);
  ASSERT_EQ(status, 200) << r;
  const auto& calls = r["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << r;
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json::parse(R"({"city": "Rome"})"));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  // The forced start of the call is part of the prompt, not of the completion.
  EXPECT_EQ(r["usage"]["completion_tokens"], reply_tokens("{\"city\": \"Rome\"}}\n</tool_call>"));
}

TEST(ChatCompletions, RequiredToolChoiceStartsACall) {
  TestServer srv(replies());
  auto [status, r] =
      srv.post("/v1/chat/completions", chat_body("required call", {{"tools", tools()}, {"tool_choice", "required"}}));
  ASSERT_EQ(status, 200) << r;
  const auto& calls = r["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << r;
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json::parse(R"({"city": "Oslo"})"));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatCompletions, StopStrings) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("stop test", {{"stop", {"world"}}}));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hello ");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  auto s = collect(stream_body(srv, chat_body("stop test", {{"stop", "Goodbye"}})));
  EXPECT_EQ(s.content, "Hello world. ");
  EXPECT_EQ(s.finish_reason, "stop");
}

TEST(ChatCompletions, MaxTokensEndsWithLength) {
  TestServer srv(replies());
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    auto [status, r] = srv.post("/v1/chat/completions", chat_body("hi", {{field, 3}}));
    ASSERT_EQ(status, 200);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r["usage"]["completion_tokens"], 3);
    const auto ids = test_tokenizer().encode("Hello! How can I help?", false);
    const auto want = test_tokenizer().decode(std::vector<int32_t>(ids.begin(), ids.begin() + 3));
    EXPECT_EQ(r["choices"][0]["message"]["content"], want);
  }
}

TEST(ChatCompletions, Logprobs) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("hi", {{"logprobs", true}, {"top_logprobs", 2}}));
  ASSERT_EQ(status, 200);
  const auto& content = r["choices"][0]["logprobs"]["content"];
  const auto ids = test_tokenizer().encode("Hello! How can I help?", false);
  ASSERT_EQ(content.size(), ids.size() + 1);  // the eos token too
  // The scripted row is 40 on one token and 0 on the other V-1: log-softmax by hand.
  const double V = double(test_tokenizer().vocab_size());
  const double chosen = -std::log1p((V - 1) * std::exp(-40.0));
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t one[1] = {ids[i]};
    EXPECT_EQ(content[i]["token"], test_tokenizer().decode(one));
    EXPECT_NEAR(content[i]["logprob"].get<double>(), chosen, 1e-12);
    ASSERT_EQ(content[i]["top_logprobs"].size(), 2u);
    EXPECT_EQ(content[i]["top_logprobs"][0]["token"], content[i]["token"]);
    EXPECT_NEAR(content[i]["top_logprobs"][1]["logprob"].get<double>(), chosen - 40.0, 1e-9);
    const std::string tok = content[i]["token"];
    EXPECT_EQ(content[i]["bytes"].size(), tok.size());
  }
  // Streamed: the same entries, spread over the chunks.
  auto s = collect(stream_body(srv, chat_body("hi", {{"logprobs", true}, {"top_logprobs", 2}})));
  EXPECT_EQ(s.logprobs, content);
}

TEST(ChatCompletions, SeedIsReportedAndReusable) {
  TestServer srv(replies());
  auto [s1, r1] = srv.post("/v1/chat/completions", chat_body("hi", {{"seed", 1234}}));
  ASSERT_EQ(s1, 200);
  EXPECT_EQ(r1["seed"], 1234);
  EXPECT_NE(r1["system_fingerprint"].get<std::string>().find("1234"), std::string::npos);
  // Drawn seeds stay exact in clients that read JSON numbers as doubles.
  for (int i = 0; i < 20; ++i) {
    auto [s2, r2] = srv.post("/v1/chat/completions", chat_body("hi"));
    ASSERT_EQ(s2, 200);
    ASSERT_TRUE(r2["seed"].is_number_unsigned());
    EXPECT_LT(r2["seed"].get<uint64_t>(), uint64_t(1) << 53);
  }
  auto st = collect(stream_body(srv, chat_body("hi", {{"seed", 99}})));
  (void)st;
}

}  // namespace
}  // namespace ds4::test
