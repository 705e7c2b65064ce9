// Every error the issue lists, over HTTP, in the OpenAI error shape; each followed by a valid request that
// succeeds, so an error never leaves the server unable to serve.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/test_server.h"

namespace ds4::test {
namespace {

std::vector<ScriptedReply> replies(Gate* gate = nullptr) {
  return {{"", "Fine."}, {"nan now", "never shown", 1, 0}, {"nan later", "abcdefgh", 1, 3}, {"gated", "ok", 1, -1, gate}};
}

void expect_error(int status, const json& body, int want_status, const std::string& want_code,
                  const std::string& want_param = "") {
  EXPECT_EQ(status, want_status) << body;
  ASSERT_TRUE(body.is_object()) << body;
  ASSERT_TRUE(body.contains("error")) << body;
  const auto& e = body["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << body;
  EXPECT_TRUE(e["type"].is_string()) << body;
  EXPECT_TRUE(e.contains("param")) << body;
  EXPECT_EQ(e["code"], want_code) << body;
  if (!want_param.empty()) {
    EXPECT_EQ(e["param"], want_param) << body;
  }
}

void expect_served(const TestServer& srv) {
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("hello"));
  EXPECT_EQ(status, 200) << r;
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Fine.");
}

TEST(ServerErrors, MalformedJson) {
  TestServer srv(replies());
  for (const char* body : {"{", "not json", "{\"model\": \"scripted\", \"messages\": [}", "[]"}) {
    auto [status, r] = srv.post("/v1/chat/completions", std::string(body));
    expect_error(status, r, 400, "invalid_json");
    expect_served(srv);
  }
}

TEST(ServerErrors, WrongFieldTypes) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("x", {{"temperature", "warm"}}));
  expect_error(status, r, 400, "invalid_type", "temperature");
  expect_served(srv);
  std::tie(status, r) = srv.post("/v1/chat/completions", json{{"model", "scripted"}, {"messages", "hi"}});
  expect_error(status, r, 400, "invalid_type", "messages");
  expect_served(srv);
  std::tie(status, r) = srv.post("/v1/completions", json{{"model", "scripted"}, {"prompt", "hi"}, {"max_tokens", "3"}});
  expect_error(status, r, 400, "invalid_type", "max_tokens");
  expect_served(srv);
}

// transformers refuses to apply a chat template to no messages; the server answers 400 before rendering.
TEST(ServerErrors, EmptyMessages) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", json{{"model", "scripted"}, {"messages", json::array()}});
  expect_error(status, r, 400, "invalid_value", "messages");
  EXPECT_EQ(r["error"]["type"], "invalid_request_error") << r;
  expect_served(srv);
}

TEST(ServerErrors, UnknownFieldsThatMatter) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("x", {{"n", 3}}));
  expect_error(status, r, 400, "invalid_value", "n");
  expect_served(srv);
  std::tie(status, r) = srv.post("/v1/chat/completions", chat_body("x", {{"logit_bias", {{"5", 100}}}}));
  expect_error(status, r, 400, "unsupported_parameter", "logit_bias");
  expect_served(srv);
  // Fields that change nothing are accepted.
  std::tie(status, r) = srv.post("/v1/chat/completions", chat_body("x", {{"user", "u1"}, {"metadata", {{"a", "b"}}}}));
  EXPECT_EQ(status, 200) << r;
}

TEST(ServerErrors, UnknownModelAndRoute) {
  TestServer srv(replies());
  auto b = chat_body("x");
  b["model"] = "gpt-17";
  auto [status, r] = srv.post("/v1/chat/completions", b);
  expect_error(status, r, 404, "model_not_found", "model");
  expect_served(srv);
  std::tie(status, r) = srv.post("/v1/embeddings", chat_body("x"));
  expect_error(status, r, 404, "not_found");
  expect_served(srv);
  auto res = srv.client().Get("/v1/models/nope");
  ASSERT_TRUE(res);
  expect_error(res->status, json::parse(res->body), 404, "model_not_found");
}

TEST(ServerErrors, PromptPlusMaxTokensOverTheContext) {
  TestServer srv(replies(), {}, /*context=*/128);
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("x", {{"max_tokens", 120}}));
  expect_error(status, r, 400, "context_length_exceeded", "max_tokens");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("128"), std::string::npos);
  expect_served(srv);
  std::tie(status, r) = srv.post("/v1/chat/completions", chat_body(std::string(400, 'x')));
  expect_error(status, r, 400, "context_length_exceeded", "messages");
  expect_served(srv);
  std::tie(status, r) = srv.post("/v1/completions", json{{"model", "scripted"}, {"prompt", {1, 2, 3}}, {"max_tokens", 126}});
  expect_error(status, r, 400, "context_length_exceeded", "max_tokens");
  expect_served(srv);
}

TEST(ServerErrors, OversizeBody) {
  server::ServerOptions o;
  o.max_body_bytes = 4096;
  TestServer srv(replies(), o);
  auto [status, r] = srv.post("/v1/chat/completions", chat_body(std::string(5000, 'x')));
  expect_error(status, r, 413, "request_too_large");
  expect_served(srv);
}

TEST(ServerErrors, QueueFullIs503WithRetryAfter) {
  Gate gate;
  server::ServerOptions o;
  o.scheduler.workers = 1;
  o.scheduler.max_queued = 1;
  o.service.retry_after_seconds = 2;
  TestServer srv(replies(&gate), o);
  // One request runs (held at the gate), one waits in the queue, the next is refused.
  std::pair<int, json> a, b;
  std::thread ta([&] { a = srv.post("/v1/chat/completions", chat_body("gated one")); });
  gate.wait_for_waiters(1);
  std::thread tb([&] { b = srv.post("/v1/chat/completions", chat_body("gated two")); });
  for (int i = 0; i < 10000 && srv.server().scheduler().queued() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(srv.server().scheduler().queued(), 1u);
  auto res = srv.client().Post("/v1/chat/completions", chat_body("hello").dump(), "application/json");
  ASSERT_TRUE(res);
  expect_error(res->status, json::parse(res->body), 503, "server_overloaded");
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
  gate.open();
  ta.join();
  tb.join();
  EXPECT_EQ(a.first, 200) << a.second;
  EXPECT_EQ(b.first, 200) << b.second;
  expect_served(srv);
}

TEST(ServerErrors, InvalidLogitsAre500NamingThem) {
  TestServer srv(replies());
  auto [status, r] = srv.post("/v1/chat/completions", chat_body("nan now"));
  expect_error(status, r, 500, "invalid_logits");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("NaN"), std::string::npos) << r;
  expect_served(srv);
  // After some tokens: a whole response is still an error.
  std::tie(status, r) = srv.post("/v1/chat/completions", chat_body("nan later"));
  expect_error(status, r, 500, "invalid_logits");
  expect_served(srv);
  // Streaming, before the first token: the HTTP status says it.
  auto b = chat_body("nan now");
  b["stream"] = true;
  std::tie(status, r) = srv.post("/v1/chat/completions", b);
  expect_error(status, r, 500, "invalid_logits");
  expect_served(srv);
  // Streaming, after tokens were sent: the stream ends with an error event.
  b = chat_body("nan later");
  b["stream"] = true;
  auto res = srv.client().Post("/v1/chat/completions", b.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  auto events = sse_payloads(res->body);
  ASSERT_FALSE(events.empty());
  auto last = json::parse(events.back());
  expect_error(500, last, 500, "invalid_logits");
  expect_served(srv);
  EXPECT_EQ(srv.scripted()->live_states(), 0);
}

TEST(ServerErrors, GarbageNeverCrashes) {
  TestServer srv(replies());
  const std::vector<std::string> bodies = {
      std::string(1, '\0'), "\xff\xfe", std::string(200, '{'), R"({"model": "scripted", "messages": [{"role": "user", "content": "\ud800"}]})",
      R"({"model": "scripted", "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})",
      R"({"model": "scripted", "messages": [{"role": "assistant", "tool_calls": 5}]})",
      R"({"model": "scripted", "messages": [{"role": "user", "content": "x"}], "stop": {"a": 1}})",
      R"({"model": "scripted", "messages": [{"role": "user", "content": "x"}], "tools": [null]})",
      R"({"model": 5})", R"({"model": "scripted", "messages": [{"role": "user", "content": "x"}], "seed": 1e300})",
  };
  for (const auto& b : bodies) {
    for (const char* route : {"/v1/chat/completions", "/v1/completions"}) {
      auto [status, r] = srv.post(route, b);
      EXPECT_GE(status, 400) << b;
      EXPECT_LT(status, 500) << b << " -> " << r;
      EXPECT_TRUE(r.contains("error")) << b;
    }
  }
  expect_served(srv);
}

}  // namespace
}  // namespace ds4::test
