// The server's Prometheus metrics (text exposition format 0.0.4): requests by route and status, tokens in
// and out, time to first token, inter-token latency and request duration histograms, cancelled requests,
// and the scheduler's queue depth and active sequences (read when /metrics is scraped). Thread-safe.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ds4::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // The _bucket (cumulative, with +Inf), _sum and _count lines of metric `name`.
  std::string render(const std::string& name) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& route, int status);
  void count_cancelled();
  void add_tokens(int64_t prompt, int64_t generated);
  void observe_time_to_first_token(double seconds) { ttft_.observe(seconds); }
  void observe_inter_token_latency(double seconds) { itl_.observe(seconds); }
  void observe_request_duration(double seconds) { duration_.observe(seconds); }
  // The scheduler's gauges, read at render time.
  void set_gauges(std::function<int64_t()> queue_depth, std::function<int64_t()> active_sequences);

  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
  uint64_t cancelled_ = 0;
  int64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  std::function<int64_t()> queue_depth_, active_sequences_;
  Histogram ttft_, itl_, duration_;
};

}  // namespace ds4::server
