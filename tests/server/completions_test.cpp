// /v1/completions (the legacy text endpoint) over HTTP against a scripted model: text prompts and token-id
// prompts, streaming, logprobs, usage.
#include <gtest/gtest.h>

#include "support/test_server.h"

namespace ds4::test {
namespace {

TEST(Completions, TextPromptWholeAndStreamed) {
  TestServer srv(std::vector<ScriptedReply>{{"", "Once upon a time."}});
  json body = {{"model", "scripted"}, {"prompt", "Tell a story"}, {"max_tokens", 50}, {"seed", 3}};
  auto [status, r] = srv.post("/v1/completions", body);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], "Once upon a time.");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["prompt_tokens"], test_tokenizer().encode("Tell a story", false).size());
  EXPECT_EQ(r["usage"]["completion_tokens"], test_tokenizer().encode("Once upon a time.", false).size() + 1);

  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto res = srv.client().Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  std::string text, finish;
  json usage;
  bool done = false;
  for (const auto& p : sse_payloads(res->body)) {
    if (p == "[DONE]") {
      done = true;
      continue;
    }
    auto c = json::parse(p);
    if (!c["usage"].is_null()) usage = c["usage"];
    if (c["choices"].empty()) continue;
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(text, r["choices"][0]["text"]);
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage, r["usage"]);
}

TEST(Completions, TokenPromptAndDefaultLength) {
  TestServer srv(std::vector<ScriptedReply>{{"", std::string(40, 'a')}});
  auto [status, r] = srv.post("/v1/completions", json{{"model", "scripted"}, {"prompt", {72, 101, 108}}});
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(r["usage"]["completion_tokens"], 16);  // the legacy default max_tokens
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  std::tie(status, r) = srv.post("/v1/completions", json{{"model", "scripted"}, {"prompt", {100000}}});
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["param"], "prompt");
}

TEST(Completions, Logprobs) {
  TestServer srv(std::vector<ScriptedReply>{{"", "Hi there"}});
  auto [status, r] = srv.post("/v1/completions", json{{"model", "scripted"}, {"prompt", "x"}, {"logprobs", 1}});
  ASSERT_EQ(status, 200) << r;
  const auto& lp = r["choices"][0]["logprobs"];
  const size_t n = test_tokenizer().encode("Hi there", false).size() + 1;
  EXPECT_EQ(lp["tokens"].size(), n);
  EXPECT_EQ(lp["token_logprobs"].size(), n);
  EXPECT_EQ(lp["top_logprobs"].size(), n);
  EXPECT_EQ(lp["text_offset"][0], 0);
  std::string joined;
  for (size_t i = 0; i + 1 < n; ++i) joined += lp["tokens"][i].get<std::string>();
  EXPECT_EQ(joined, "Hi there");
}

}  // namespace
}  // namespace ds4::test
