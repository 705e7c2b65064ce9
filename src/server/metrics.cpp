#include "server/metrics.h"

#include <cmath>
#include <cstdio>

namespace ds4::server {
namespace {

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// Label values may hold any text; Prometheus escapes backslash, quote and newline.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  std::lock_guard lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

std::string Histogram::render(const std::string& name) const {
  std::lock_guard lock(mu_);
  std::string out;
  uint64_t cum = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cum += counts_[i];
    const double le = i < bounds_.size() ? bounds_[i] : INFINITY;
    out += name + "_bucket{le=\"" + num(le) + "\"} " + std::to_string(cum) + "\n";
  }
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return out;
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      duration_({0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}) {}

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{route, status}];
}

void Metrics::count_cancelled() {
  std::lock_guard lock(mu_);
  ++cancelled_;
}

void Metrics::add_tokens(int64_t prompt, int64_t generated) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += prompt;
  generated_tokens_ += generated;
}

void Metrics::set_gauges(std::function<int64_t()> queue_depth, std::function<int64_t()> active_sequences) {
  std::lock_guard lock(mu_);
  queue_depth_ = std::move(queue_depth);
  active_sequences_ = std::move(active_sequences);
}

std::string Metrics::render() const {
  std::string out;
  std::lock_guard lock(mu_);
  header(out, "ds4_requests_total", "counter", "HTTP requests by route and status code.");
  for (const auto& [key, n] : requests_)
    out += "ds4_requests_total{route=\"" + label_value(key.first) + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  header(out, "ds4_requests_cancelled_total", "counter", "Generations cancelled because the client went away.");
  out += "ds4_requests_cancelled_total " + std::to_string(cancelled_) + "\n";
  header(out, "ds4_prompt_tokens_total", "counter", "Prompt tokens of the requests that ran.");
  out += "ds4_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  header(out, "ds4_generation_tokens_total", "counter", "Tokens generated.");
  out += "ds4_generation_tokens_total " + std::to_string(generated_tokens_) + "\n";
  header(out, "ds4_time_to_first_token_seconds", "histogram", "From request arrival to its first generated token.");
  out += ttft_.render("ds4_time_to_first_token_seconds");
  header(out, "ds4_inter_token_latency_seconds", "histogram", "Between consecutive generated tokens of a request.");
  out += itl_.render("ds4_inter_token_latency_seconds");
  header(out, "ds4_request_duration_seconds", "histogram", "From request arrival to its last byte.");
  out += duration_.render("ds4_request_duration_seconds");
  header(out, "ds4_queue_depth", "gauge", "Requests waiting for a sequence slot.");
  out += "ds4_queue_depth " + std::to_string(queue_depth_ ? queue_depth_() : 0) + "\n";
  header(out, "ds4_active_sequences", "gauge", "Sequences being generated now.");
  out += "ds4_active_sequences " + std::to_string(active_sequences_ ? active_sequences_() : 0) + "\n";
  return out;
}

}  // namespace ds4::server
