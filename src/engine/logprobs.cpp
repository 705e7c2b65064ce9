#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/logits_check.h"

namespace ds4::engine {

std::vector<double> log_softmax(std::span<const float> logits, int64_t position_for_errors) {
  validate_logits(logits, position_for_errors);
  std::vector<double> z(logits.begin(), logits.end());
  const double m = *std::max_element(z.begin(), z.end());
  double total = 0.0;
  for (double v : z) total += std::exp(v - m);
  const double log_total = std::log(total);
  for (double& v : z) v = v - m - log_total;
  return z;
}

std::vector<TokenLogprob> top_logprobs(std::span<const double> logprobs, size_t n) {
  n = std::min(n, logprobs.size());
  std::vector<int32_t> ids(logprobs.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), before);
  std::vector<TokenLogprob> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = {ids[i], logprobs[ids[i]]};
  return out;
}

}  // namespace ds4::engine
