// Clients that go away, many clients at once, and the small routes: the server cancels abandoned
// generations at their next token and frees their state, serves concurrent requests, and keeps its
// gauges honest.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "support/test_server.h"

namespace ds4::test {
namespace {

std::vector<ScriptedReply> replies() {
  return {{"", "Fine."}, {"count forever", "tick ", 1000000}};
}

std::string metrics_text(const TestServer& srv) {
  auto res = srv.client().Get("/metrics");
  return res ? res->body : "";
}

// Polls until the server reports no active sequence (bounded: the cancellation happens at the next token).
bool wait_idle(const TestServer& srv) {
  for (int i = 0; i < 5000; ++i) {
    if (metric(metrics_text(srv), "ds4_active_sequences") == 0 && srv.scripted()->live_states() == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Opens a raw connection, starts a streaming request, reads until `min_bytes` of the stream arrived, and
// closes the socket without reading the rest, as a killed client does.
void abandon_stream(int port, const std::string& body, size_t min_bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  std::string got;
  char buf[4096];
  while (got.size() < min_bytes) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.append(buf, size_t(n));
  }
  EXPECT_NE(got.find("200 OK"), std::string::npos);
  EXPECT_NE(got.find("data: "), std::string::npos);
  ::close(fd);
}

TEST(ServerLifecycle, DisconnectCancelsGenerationAndFreesState) {
  TestServer srv(replies());
  auto body = chat_body("count forever");
  body["stream"] = true;
  for (int round = 1; round <= 3; ++round) {
    abandon_stream(srv.port(), body.dump(), 2000);
    ASSERT_TRUE(wait_idle(srv)) << metrics_text(srv);
    const std::string m = metrics_text(srv);
    EXPECT_EQ(metric(m, "ds4_requests_cancelled_total"), round) << m;
    // Cancelled long before the scripted million tokens.
    EXPECT_LT(metric(m, "ds4_generation_tokens_total"), 100000.0 * round) << m;
    auto [status, r] = srv.post("/v1/chat/completions", chat_body("hello"));
    EXPECT_EQ(status, 200) << r;
    EXPECT_EQ(r["choices"][0]["message"]["content"], "Fine.");
  }
  EXPECT_EQ(srv.scripted()->live_states(), 0);
}

TEST(ServerLifecycle, ConcurrentClientsAreAllServed) {
  server::ServerOptions o;
  o.scheduler.workers = 2;
  TestServer srv(std::vector<ScriptedReply>{{"", "Fine."}, {"second", "Also fine, with more words to stream."}}, o);
  constexpr int kClients = 16;
  std::vector<std::thread> clients;
  std::vector<int> ok(kClients, 0);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      for (int k = 0; k < 3; ++k) {
        auto b = chat_body(i % 2 ? "second" : "first");
        b["stream"] = (k % 2 == 1);
        auto res = srv.client().Post("/v1/chat/completions", b.dump(), "application/json");
        if (!res || res->status != 200) {
          ADD_FAILURE() << "client " << i << " request " << k << ": "
                        << (res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error()));
          continue;
        }
        std::string text;
        if (b["stream"]) {
          for (const auto& p : sse_payloads(res->body)) {
            if (p == "[DONE]") continue;
            auto c = json::parse(p);
            if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content"))
              text += c["choices"][0]["delta"]["content"].get<std::string>();
          }
        } else {
          text = json::parse(res->body)["choices"][0]["message"]["content"];
        }
        ok[i] += text == (i % 2 ? "Also fine, with more words to stream." : "Fine.");
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(ok[i], 3) << "client " << i;
  ASSERT_TRUE(wait_idle(srv));
  const std::string m = metrics_text(srv);
  EXPECT_EQ(metric(m, "ds4_queue_depth"), 0);
  EXPECT_EQ(metric(m, R"(ds4_requests_total{route="/v1/chat/completions",status="200"})"), kClients * 3) << m;
}

TEST(ServerLifecycle, ModelsHealthAndMetrics) {
  TestServer srv(replies());
  auto res = srv.client().Get("/v1/models");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  auto j = json::parse(res->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "scripted");
  EXPECT_EQ(j["data"][0]["object"], "model");
  res = srv.client().Get("/v1/models/scripted");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["id"], "scripted");
  res = srv.client().Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["status"], "ok");

  srv.post("/v1/chat/completions", chat_body("hello"));
  srv.post("/v1/chat/completions", std::string("{"));
  res = srv.client().Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string m = res->body;
  EXPECT_EQ(metric(m, R"(ds4_requests_total{route="/v1/chat/completions",status="200"})"), 1) << m;
  EXPECT_EQ(metric(m, R"(ds4_requests_total{route="/v1/chat/completions",status="400"})"), 1) << m;
  EXPECT_EQ(metric(m, "ds4_generation_tokens_total"), double(test_tokenizer().encode("Fine.", false).size() + 1));
  EXPECT_GT(metric(m, "ds4_prompt_tokens_total"), 0);
  EXPECT_EQ(metric(m, "ds4_time_to_first_token_seconds_count"), 1);
  EXPECT_EQ(metric(m, "ds4_inter_token_latency_seconds_count"),
            double(test_tokenizer().encode("Fine.", false).size()));
  EXPECT_EQ(metric(m, "ds4_active_sequences"), 0);
  EXPECT_EQ(metric(m, "ds4_queue_depth"), 0);
}

TEST(ServerLifecycle, StopEndsRunningStreams) {
  auto srv = std::make_unique<TestServer>(replies());
  auto body = chat_body("count forever");
  body["stream"] = true;
  std::thread client([&] {
    auto res = srv->client().Post("/v1/chat/completions", body.dump(), "application/json");
    (void)res;  // cut short by the shutdown
  });
  for (int i = 0; i < 5000 && srv->server().scheduler().active() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  srv.reset();  // stop(): cancels the generation, then stops serving
  client.join();
  SUCCEED();
}

}  // namespace
}  // namespace ds4::test
