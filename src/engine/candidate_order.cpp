#include "engine/candidate_order.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <utility>

namespace ds4::engine {
namespace {

// Beyond this share of the vocabulary, a comparison sort of the prefix costs more than ordering
// everything by radix (measured with bench_sampler on a 151936-token vocabulary).
constexpr size_t kRadixShareDivisor = 32;
constexpr int kDigitBits = 11;
constexpr int kDigits = (64 + kDigitBits - 1) / kDigitBits;
constexpr size_t kBuckets = size_t{1} << kDigitBits;

}  // namespace

void CandidateOrder::reset(std::span<const double> p) {
  p_ = p;
  ids_.resize(p.size());
  std::iota(ids_.begin(), ids_.end(), 0);
  sorted_ = 0;
}

void CandidateOrder::extend_to(size_t n) {
  n = std::min(n, ids_.size());
  if (n <= sorted_) return;
  if (n - sorted_ > ids_.size() / kRadixShareDivisor) {
    radix_sort_rest();
  } else {
    select_and_sort(n);
  }
}

void CandidateOrder::select_and_sort(size_t n) {
  const double* p = p_.data();
  auto before = [p](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); };
  auto first = ids_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  auto nth = ids_.begin() + static_cast<std::ptrdiff_t>(n);
  // Partition so that [first, nth) holds the next n - sorted_ ids of the order, then sort just those.
  if (nth != ids_.end()) std::nth_element(first, nth, ids_.end(), before);
  std::sort(first, nth, before);
  sorted_ = n;
}

void CandidateOrder::radix_sort_rest() {
  // A stable LSD radix sort on ~bits(p): for p >= 0 the IEEE bit pattern orders like the value, so the
  // complement sorts descending; fed in ascending id order, stability breaks ties by ascending id.
  const size_t v = ids_.size();
  in_prefix_.assign(v, 0);
  for (size_t i = 0; i < sorted_; ++i) in_prefix_[ids_[i]] = 1;
  keyed_.clear();
  for (size_t id = 0; id < v; ++id) {
    if (!in_prefix_[id]) keyed_.push_back({~std::bit_cast<uint64_t>(p_[id]), static_cast<int32_t>(id)});
  }
  const size_t m = keyed_.size();
  counts_.assign(kDigits * kBuckets, 0);
  for (const auto& k : keyed_) {
    for (int d = 0; d < kDigits; ++d) ++counts_[d * kBuckets + ((k.key >> (d * kDigitBits)) & (kBuckets - 1))];
  }
  keyed_tmp_.resize(m);
  for (int d = 0; d < kDigits; ++d) {
    const std::span<uint32_t> c(counts_.data() + d * kBuckets, kBuckets);
    if (std::any_of(c.begin(), c.end(), [m](uint32_t x) { return x == m; })) continue;  // digit constant
    uint32_t sum = 0;
    for (auto& x : c) sum += std::exchange(x, sum);
    for (const auto& k : keyed_) keyed_tmp_[c[(k.key >> (d * kDigitBits)) & (kBuckets - 1)]++] = k;
    keyed_.swap(keyed_tmp_);
  }
  for (size_t i = 0; i < m; ++i) ids_[sorted_ + i] = keyed_[i].id;
  sorted_ = v;
}

}  // namespace ds4::engine
