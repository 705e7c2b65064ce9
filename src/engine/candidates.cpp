#include "engine/candidates.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace ds4::engine {
namespace {

// Smallest prefix ordered for top_p; it doubles until the cumulative sum reaches top_p.
constexpr size_t kFirstTopPChunk = 256;
// Groups of p by their top 16 bits (sign, exponent, 4 mantissa bits): p <= 1 has top bits <= 0x3FF0.
constexpr size_t kPGroups = 0x3FF1;
// The groups' sums round differently from the law's sequential sum; this margin (far above the
// rounding error of any vocabulary's sum) keeps the estimate from falling short because of it.
constexpr double kEstimateMargin = 1e-9;
// Rows at least this long take the threaded element-wise passes of softmax (shorter ones: not worth a team).
constexpr int64_t kParallelSoftmaxMin = 16384;

}  // namespace

void CandidateSelector::softmax(std::span<const double> z, double temperature) {
  // numpy's order of operations: z / T, subtract the max, exp, sum sequentially in index order, divide.
  // Every element's value is its own expression, so the element-wise passes run on several threads for a
  // vocabulary-sized row (the exps were a third of a sampled token's time); the maximum does not depend on the
  // order, and the sum stays one sequential pass in index order: the same bits on any number of threads.
  const int64_t n = int64_t(z.size());
  const bool wide = n >= kParallelSoftmaxMin;
  p_.resize(size_t(n));
  double* p = p_.data();
  double m = -std::numeric_limits<double>::infinity();
#pragma omp parallel for schedule(static) reduction(max : m) if (wide)
  for (int64_t i = 0; i < n; ++i) {
    p[i] = z[size_t(i)] / temperature;
    m = std::max(m, p[i]);
  }
  overflow_ = std::isinf(m);  // m is never -inf: the row was validated and penalties keep values finite
  if (overflow_) return;
#pragma omp parallel for schedule(static) if (wide)
  for (int64_t i = 0; i < n; ++i) p[i] = std::exp(p[i] - m);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += p[i];
#pragma omp parallel for schedule(static) if (wide)
  for (int64_t i = 0; i < n; ++i) p[i] /= total;
}

size_t CandidateSelector::limit_from_top_k_and_min_p(const SamplingParams& params) const {
  const size_t n = p_.size();
  size_t limit = n;
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < n) limit = static_cast<size_t>(params.top_k);
  if (params.min_p > 0.0) {
    // The tokens with p >= min_p * p_max form a prefix of the order, so counting them needs no sort.
    const double threshold = params.min_p * *std::max_element(p_.begin(), p_.end());
    const auto count = static_cast<size_t>(std::count_if(p_.begin(), p_.end(), [&](double v) { return v >= threshold; }));
    limit = std::min(limit, std::max<size_t>(1, count));
  }
  return limit;
}

size_t CandidateSelector::top_p_prefix_estimate(double top_p) {
  // One pass sizes the first sort for a flat distribution, which would otherwise take many doubling
  // rounds. Only a size: the exact sequential scan below decides the prefix.
  group_count_.assign(kPGroups, 0);
  group_sum_.assign(kPGroups, 0.0);
  for (double v : p_) {
    const auto g = static_cast<size_t>(std::bit_cast<uint64_t>(v) >> 48);
    ++group_count_[g];
    group_sum_[g] += v;
  }
  size_t n = 0;
  double sum = 0.0;
  for (size_t g = kPGroups; g-- > 0;) {
    n += group_count_[g];
    sum += group_sum_[g];
    if (sum >= top_p + kEstimateMargin) break;
  }
  return n;
}

size_t CandidateSelector::keep_from_top_p(double top_p, size_t limit) {
  // Shortest prefix whose sequential cumulative sum (in the law's order, on full-vocabulary p) is
  // >= top_p; if the sum never gets there (rounding, or top_p > 1 is handled by the caller), all of it.
  // Past `limit` the answer no longer matters, so the order is only extended that far.
  double cum = 0.0;
  size_t i = 0;
  if (limit > kFirstTopPChunk) order_.extend_to(std::min(limit, top_p_prefix_estimate(top_p)));
  while (i < limit) {
    order_.extend_to(std::min(limit, std::max(kFirstTopPChunk, 2 * order_.sorted())));
    // extend_to may order more than asked (all of it, by radix); the scan still stops at `limit`.
    for (const size_t end = std::min(limit, order_.sorted()); i < end; ++i) {
      cum += p_[order_[i]];
      if (cum >= top_p) return i + 1;
    }
  }
  return limit;
}

bool CandidateSelector::select(std::span<const double> z, const SamplingParams& params) {
  softmax(z, params.temperature);
  if (overflow_) {
    kept_ = 0;
    return false;
  }
  order_.reset(p_);
  const size_t limit = limit_from_top_k_and_min_p(params);
  kept_ = params.top_p < 1.0 ? keep_from_top_p(params.top_p, limit) : limit;
  order_.extend_to(kept_);
  return true;
}

size_t draw_index(std::span<const double> kept_p, double u) {
  // c[n-1] is needed before the scan, so the kept p are summed twice, in the same order.
  double total = 0.0;
  for (double v : kept_p) total += v;
  const double target = u * total;
  double c = 0.0;
  for (size_t i = 0; i < kept_p.size(); ++i) {
    c += kept_p[i];
    if (c > target) return i;
  }
  return kept_p.size() - 1;
}

}  // namespace ds4::engine
