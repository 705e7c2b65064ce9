// cpu::linear against a float64 reference, and its chunk invariance: a token's projection has the same
// bits whether it is computed alone, in a pair, or in a block of any size (prefill chunking relies on it).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/linear.h"

namespace ds4 {
namespace {

TEST(CpuLinear, MatchesFloat64ReferenceAndIsChunkInvariant) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (auto [T, K, N] : {std::tuple<int64_t, int64_t, int64_t>{7, 37, 13}, {5, 64, 130}, {16, 100, 67}, {3, 8, 4}}) {
    std::vector<float> x(static_cast<size_t>(T * K)), W(static_cast<size_t>(N * K)), y(static_cast<size_t>(T * N)),
        y1(static_cast<size_t>(N));
    for (auto& v : x) v = nd(rng);
    for (auto& v : W) v = nd(rng);
    ds4::cpu::linear(x.data(), T, K, W.data(), N, y.data());
    for (int64_t t = 0; t < T; t++) {
      ds4::cpu::linear(x.data() + t * K, 1, K, W.data(), N, y1.data());
      for (int64_t n = 0; n < N; n++) {
        double ref = 0;
        for (int64_t k = 0; k < K; k++) ref += double(x[size_t(t * K + k)]) * W[size_t(n * K + k)];
        EXPECT_NEAR(y[size_t(t * N + n)], ref, 1e-4 * std::sqrt(double(K))) << T << "x" << K << "x" << N;
        EXPECT_EQ(y[size_t(t * N + n)], y1[size_t(n)]) << "token " << t << " row " << n << " differs from T=1";
      }
    }
  }
}

}  // namespace
}  // namespace ds4
