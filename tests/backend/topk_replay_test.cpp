// The CUDA top-k resolves ties by replaying libstdc++'s selection (backend/cuda/topk_select.h). This CPU test
// checks the replay against cpu::topk_indices on tie-heavy rows, so the GPU's tie behaviour is pinned down
// without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/topk.h"
#include "backend/cuda/topk_select.h"

namespace ds4 {
namespace {

std::vector<int64_t> replay_set(const std::vector<float>& v, int64_t k) {
  std::vector<topk_replay::Item> items(v.size());
  for (size_t i = 0; i < v.size(); i++) items[i] = {v[i], int32_t(i)};
  topk_replay::select_topk(items.data(), int64_t(v.size()), k);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < k; i++) out.push_back(items[size_t(i)].i);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> cpu_set(const std::vector<float>& v, int64_t k) {
  auto out = cpu::topk_indices(v.data(), int64_t(v.size()), k);
  std::sort(out.begin(), out.end());
  return out;
}

// Values drawn from a few levels so that most rows have ties at the k-th place; optional NaN and signed zeros.
std::vector<float> tie_row(std::mt19937& rng, int64_t n, int levels, bool specials) {
  std::uniform_int_distribution<int> lv(0, levels - 1), sp(0, 19);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = float(lv(rng)) * 0.5f;
    if (specials) {
      const int s = sp(rng);
      if (s == 0) x = NAN;
      else if (s == 1) x = -0.0f;
      else if (s == 2) x = 0.0f;
      else if (s == 3) x = -INFINITY;
    }
  }
  return v;
}

TEST(TopkReplay, MatchesCpuTopkOnTieHeavyRows) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int64_t n : {1, 2, 3, 4, 5, 7, 16, 33, 64, 100, 257, 512, 640, 700, 1000, 2047, 4096}) {
    for (int64_t k : {1, 2, 3, 5, 8, 10, 16, 32, 63, 64, 100}) {
      if (k > n) continue;
      for (int levels : {1, 2, 3, 7, 50}) {
        for (bool specials : {false, true}) {
          const auto v = tie_row(rng, n, levels, specials);
          ASSERT_EQ(replay_set(v, k), cpu_set(v, k)) << "n=" << n << " k=" << k << " levels=" << levels;
          checked++;
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// Both branches of the CPU algorithm (k * 64 <= n: partial_sort; else nth_element) and the introselect depth
// limit (many equal pivots) are reached by these shapes.
TEST(TopkReplay, BranchBoundariesAndAllEqual) {
  std::mt19937 rng(11);
  for (int64_t k : {1, 4, 16, 32}) {
    for (int64_t n : {k * 64 - 1, k * 64, k * 64 + 1}) {
      for (int levels : {1, 2, 4}) {
        const auto v = tie_row(rng, n, levels, false);
        ASSERT_EQ(replay_set(v, k), cpu_set(v, k)) << "n=" << n << " k=" << k;
      }
    }
  }
  const std::vector<float> zeros(3000, 0.0f);
  EXPECT_EQ(replay_set(zeros, 32), cpu_set(zeros, 32));
}

// Without ties the set is simply the k largest.
TEST(TopkReplay, DistinctValuesGiveTheLargest) {
  std::mt19937 rng(3);
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); i++) v[i] = float(i);
  std::shuffle(v.begin(), v.end(), rng);
  const auto got = replay_set(v, 10);
  for (auto i : got) EXPECT_GE(v[size_t(i)], 990.0f);
}

}  // namespace
}  // namespace ds4
