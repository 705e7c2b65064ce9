// cuda::topk against cpu::topk_indices: the same set on tie-heavy rows (both of the CPU's algorithms, the
// replay path), NaN and signed zeros; and the documented order (value descending, ties by ascending index).
#include "cuda_test_util.h"

#include "backend/cpu/topk.h"

namespace ds4::cuda::test {
namespace {

std::vector<float> tie_rows(int64_t rows, int64_t n, int levels, bool specials, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> lv(0, levels - 1), sp(0, 24);
  std::vector<float> v(size_t(rows * n));
  for (auto& x : v) {
    x = float(lv(rng)) * 0.25f - 1.0f;
    if (specials) {
      const int s = sp(rng);
      if (s == 0) x = NAN;
      else if (s == 1) x = -0.0f;
      else if (s == 2) x = 0.0f;
    }
  }
  return v;
}

void check_topk(int64_t rows, int64_t n, int64_t k, int levels, bool specials) {
  const auto v = tie_rows(rows, n, levels, specials, uint32_t(n * 7 + k + levels));
  auto dv = upload(v);
  auto di = nan_buffer<int32_t>(size_t(rows * k));
  topk(ctx(), dv.get(), rows, n, n, k, di.get());
  const auto got = download(di);
  const std::string what = "n=" + std::to_string(n) + " k=" + std::to_string(k) + " levels=" + std::to_string(levels);
  for (int64_t r = 0; r < rows; r++) {
    const float* row = v.data() + r * n;
    auto want = cpu::topk_indices(row, n, k);
    std::vector<int64_t> g(got.begin() + r * k, got.begin() + (r + 1) * k);
    for (int64_t i = 0; i + 1 < k; i++) {  // order: value descending (NaN first), equal values by ascending index
      const float a = row[g[size_t(i)]], b = row[g[size_t(i + 1)]];
      const bool an = std::isnan(a), bn = std::isnan(b);
      const bool equal = (an && bn) || (!an && !bn && a == b);
      EXPECT_TRUE(equal ? g[size_t(i)] < g[size_t(i + 1)] : ((an && !bn) || a > b)) << what << " row " << r << " pos " << i;
    }
    std::sort(g.begin(), g.end());
    std::sort(want.begin(), want.end());
    ASSERT_EQ(g, want) << what << " row " << r;
  }
}

TEST(CudaTopk, SameSetAsCpuOnTieHeavyRows) {
  for (int64_t n : {1, 7, 33, 512, 700, 4096})
    for (int64_t k : {1, 10, 32})
      for (int levels : {2, 5, 1000})
        if (k <= n) check_topk(9, n, k, levels, levels == 5);
}

TEST(CudaTopk, PartialSortBranchAndAllEqualRows) {
  check_topk(4, 2048, 32, 3, false);  // k * 64 == n: the CPU's partial_sort branch
  check_topk(4, 2047, 32, 3, false);  // just below: nth_element
  check_topk(3, 16384, 10, 1, false); // all equal, the largest supported row
}

}  // namespace
}  // namespace ds4::cuda::test
