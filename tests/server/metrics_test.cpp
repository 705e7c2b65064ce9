// Metrics: the Prometheus text holds what was recorded, with cumulative histogram buckets.
#include <gtest/gtest.h>

#include <sstream>

#include "server/metrics.h"

namespace ds4::server {
namespace {

// The value of the sample line `name` (with its labels, exactly as written), or -1 when absent.
double sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

TEST(Metrics, CountersGaugesAndHistograms) {
  Metrics m;
  int64_t queued = 3, active = 2;
  m.set_gauges([&] { return queued; }, [&] { return active; });
  m.count_request("/v1/chat/completions", 200);
  m.count_request("/v1/chat/completions", 200);
  m.count_request("/v1/chat/completions", 400);
  m.count_cancelled();
  m.add_tokens(10, 4);
  m.add_tokens(5, 1);
  m.observe_time_to_first_token(0.003);
  m.observe_time_to_first_token(0.2);
  m.observe_time_to_first_token(1000);
  const std::string t = m.render();
  EXPECT_EQ(sample(t, R"(ds4_requests_total{route="/v1/chat/completions",status="200"})"), 2);
  EXPECT_EQ(sample(t, R"(ds4_requests_total{route="/v1/chat/completions",status="400"})"), 1);
  EXPECT_EQ(sample(t, "ds4_requests_cancelled_total"), 1);
  EXPECT_EQ(sample(t, "ds4_prompt_tokens_total"), 15);
  EXPECT_EQ(sample(t, "ds4_generation_tokens_total"), 5);
  EXPECT_EQ(sample(t, "ds4_queue_depth"), 3);
  EXPECT_EQ(sample(t, "ds4_active_sequences"), 2);
  EXPECT_EQ(sample(t, R"(ds4_time_to_first_token_seconds_bucket{le="0.005"})"), 1);
  EXPECT_EQ(sample(t, R"(ds4_time_to_first_token_seconds_bucket{le="0.25"})"), 2);
  EXPECT_EQ(sample(t, R"(ds4_time_to_first_token_seconds_bucket{le="60"})"), 2);
  EXPECT_EQ(sample(t, R"(ds4_time_to_first_token_seconds_bucket{le="+Inf"})"), 3);
  EXPECT_EQ(sample(t, "ds4_time_to_first_token_seconds_count"), 3);
  EXPECT_DOUBLE_EQ(sample(t, "ds4_time_to_first_token_seconds_sum"), 1000.203);
  EXPECT_EQ(sample(t, "ds4_inter_token_latency_seconds_count"), 0);
  EXPECT_NE(t.find("# TYPE ds4_inter_token_latency_seconds histogram"), std::string::npos);
  EXPECT_NE(t.find("# TYPE ds4_active_sequences gauge"), std::string::npos);
  queued = 0;
  EXPECT_EQ(sample(m.render(), "ds4_queue_depth"), 0);
}

}  // namespace
}  // namespace ds4::server
