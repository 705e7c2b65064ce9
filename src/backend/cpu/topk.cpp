#include "backend/cpu/topk.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ds4::cpu {

std::vector<int64_t> topk_indices(const float* v, int64_t n, int64_t k) {
  using elem = std::pair<float, int64_t>;
  std::vector<elem> q(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) q[size_t(i)] = {v[i], i};
  auto comp = [](const elem& x, const elem& y) {
    return (std::isnan(x.first) && !std::isnan(y.first)) || (x.first > y.first);
  };
  if (k * 64 <= n) {
    std::partial_sort(q.begin(), q.begin() + k, q.end(), comp);
  } else {
    std::nth_element(q.begin(), q.begin() + (k - 1), q.end(), comp);
    std::sort(q.begin(), q.begin() + (k - 1), comp);
  }
  std::vector<int64_t> out(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; i++) out[size_t(i)] = q[size_t(i)].second;
  return out;
}

}  // namespace ds4::cpu
