// Steps 4-8 of SAMPLING.md: full-vocabulary probabilities, the law's order, and the kept prefix after
// top_k, top_p and min_p. Only as much of the order is sorted as the kept prefix (and, for top_p, its
// cumulative sum) needs; the result is identical to sorting the whole vocabulary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/candidate_order.h"
#include "engine/sampling_params.h"

namespace ds4::engine {

class CandidateSelector {
 public:
  // `z` are the penalised logits (float64). Returns false when z / temperature overflows to +inf (a
  // temperature so close to 0 that the law's softmax is NaN); the caller then falls back to the argmax.
  bool select(std::span<const double> z, const SamplingParams& params);

  size_t kept() const { return kept_; }
  int32_t id(size_t i) const { return order_[i]; }         // i < kept(), in the law's order
  double prob(size_t i) const { return p_[order_[i]]; }    // full-vocabulary probability, not renormalised
  std::span<const double> probabilities() const { return p_; }

 private:
  void softmax(std::span<const double> z, double temperature);
  size_t limit_from_top_k_and_min_p(const SamplingParams& params) const;
  size_t keep_from_top_p(double top_p, size_t limit);
  size_t top_p_prefix_estimate(double top_p);

  std::vector<double> p_;
  std::vector<uint32_t> group_count_;  // scratch of top_p_prefix_estimate
  std::vector<double> group_sum_;
  CandidateOrder order_;
  size_t kept_ = 0;
  bool overflow_ = false;
};

// Step 9 of SAMPLING.md: with c the sequential cumulative sum of the kept p, the first i with
// c[i] > u * c[n-1], or n-1 if there is none. `kept_p` must not be empty.
size_t draw_index(std::span<const double> kept_p, double u);

}  // namespace ds4::engine
