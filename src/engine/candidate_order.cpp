#include "engine/candidate_order.h"

#include <algorithm>
#include <numeric>

namespace ds4::engine {

void CandidateOrder::reset(std::span<const double> p) {
  p_ = p;
  ids_.resize(p.size());
  std::iota(ids_.begin(), ids_.end(), 0);
  sorted_ = 0;
}

void CandidateOrder::extend_to(size_t n) {
  n = std::min(n, ids_.size());
  if (n <= sorted_) return;
  const double* p = p_.data();
  auto before = [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); };
  auto first = ids_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  auto nth = ids_.begin() + static_cast<std::ptrdiff_t>(n);
  // Partition so that [first, nth) holds the next n - sorted_ ids of the order, then sort just those.
  if (nth != ids_.end()) std::nth_element(first, nth, ids_.end(), before);
  std::sort(first, nth, before);
  sorted_ = n;
}

}  // namespace ds4::engine
