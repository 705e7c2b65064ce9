// The server over a real (tiny, random-weight) model directory: same seed, same request, same output,
// streamed or not; different seeds differ; usage matches the tokenizer.
#include <gtest/gtest.h>

#include <thread>

#include "support/test_server.h"

namespace ds4::test {
namespace {

json chat(const std::string& user, uint64_t seed, bool stream) {
  return {{"model", "test-model"},
          {"messages", json::array({{{"role", "user"}, {"content", user}}})},
          {"max_tokens", 24},
          {"temperature", 1.0},
          {"seed", seed},
          {"stream", stream}};
}

std::string streamed_text(const std::string& body) {
  std::string text;
  for (const auto& p : sse_payloads(body)) {
    if (p == "[DONE]") continue;
    auto c = json::parse(p);
    if (c["choices"].empty()) continue;
    const auto& d = c["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) text += "[R]" + d["reasoning_content"].get<std::string>();
  }
  return text;
}

std::string whole_text(const json& r) {
  const auto& m = r["choices"][0]["message"];
  std::string text = m.contains("reasoning_content") ? "[R]" + m["reasoning_content"].get<std::string>() : "";
  return text + (m["content"].is_string() ? m["content"].get<std::string>() : "");
}

TEST(RealModelServer, SameSeedSameOutputStreamedOrNot) {
  auto owned = TestServer::for_model_dir(test_model_dir());
  TestServer& srv = *owned;
  auto [s1, a] = srv.post("/v1/chat/completions", chat("Hello there", 42, false));
  ASSERT_EQ(s1, 200) << a;
  auto [s2, b] = srv.post("/v1/chat/completions", chat("Hello there", 42, false));
  ASSERT_EQ(s2, 200) << b;
  EXPECT_EQ(whole_text(a), whole_text(b));
  EXPECT_EQ(a["usage"], b["usage"]);
  auto res = srv.client().Post("/v1/chat/completions", chat("Hello there", 42, true).dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(streamed_text(res->body), whole_text(a));

  // Another seed gives another sample (24 tokens from a 300-token vocabulary at temperature 1).
  int differ = 0;
  for (uint64_t seed : {1, 2, 3}) {
    auto [s, c] = srv.post("/v1/chat/completions", chat("Hello there", seed, false));
    ASSERT_EQ(s, 200);
    differ += whole_text(c) != whole_text(a);
  }
  EXPECT_GT(differ, 0);
}

TEST(RealModelServer, ConcurrentSequencesDoNotDisturbEachOther) {
  // Two workers run forward() on two sequences at once; each request's output must be what it is alone.
  server::ServerOptions o;
  o.scheduler.workers = 2;
  auto owned = TestServer::for_model_dir(test_model_dir(), o);
  TestServer& srv = *owned;
  std::vector<std::string> alone;
  for (uint64_t seed : {11, 12, 13, 14}) {
    auto [s, r] = srv.post("/v1/chat/completions", chat("Tell me something", seed, false));
    ASSERT_EQ(s, 200) << r;
    alone.push_back(whole_text(r));
  }
  std::vector<std::string> together(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      auto [s, r] = srv.post("/v1/chat/completions", chat("Tell me something", uint64_t(11 + i), false));
      if (s == 200) together[size_t(i)] = whole_text(r);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(together, alone);
}

TEST(RealModelServer, UsageMatchesTheTokenizer) {
  auto owned = TestServer::for_model_dir(test_model_dir());
  TestServer& srv = *owned;
  json body = {{"model", "test-model"}, {"prompt", "The cat sat"}, {"max_tokens", 5}, {"temperature", 0}};
  auto [status, r] = srv.post("/v1/completions", body);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["usage"]["prompt_tokens"], test_tokenizer().encode("The cat sat", false).size());
  EXPECT_LE(r["usage"]["completion_tokens"].get<int>(), 5);
}

}  // namespace
}  // namespace ds4::test
