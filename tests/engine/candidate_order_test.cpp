// CandidateOrder's growing prefix against std::stable_sort of the whole vocabulary (the law's step 5:
// p descending, equal p by ascending id), on rows with many ties and zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/candidate_order.h"
#include "engine/pcg64.h"

namespace {

TEST(SamplerCandidateOrder, EveryPrefixEqualsTheFullStableSort) {
  ds4::engine::Pcg64 rng(2024);
  for (size_t vocab : {1u, 2u, 7u, 300u, 5000u}) {
    std::vector<double> p(vocab);
    // Few distinct values, so most comparisons are ties that only the id can break.
    for (double& v : p) v = static_cast<double>(static_cast<int>(rng.next_double() * 9.0)) / 8.0;
    std::vector<int32_t> full(vocab);
    std::iota(full.begin(), full.end(), 0);
    std::stable_sort(full.begin(), full.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });

    ds4::engine::CandidateOrder order;
    order.reset(p);
    for (size_t n : {size_t{1}, size_t{3}, vocab / 3, vocab / 2 + 1, vocab, vocab + 5}) {
      order.extend_to(n);
      ASSERT_EQ(order.sorted(), std::min(std::max(n, order.sorted()), vocab));
      for (size_t i = 0; i < order.sorted(); ++i) ASSERT_EQ(order[i], full[i]) << "vocab " << vocab << " rank " << i;
    }
  }
}

}  // namespace
