// cuda::topk against cpu::topk_indices: the same set on tie-heavy rows (both of the CPU's algorithms, the
// replay path), NaN and signed zeros; and the documented order (value descending, ties by ascending index).
// Both selections of topk.cuh: k <= 32 takes the rounds of arg-max (one warp per row up to n = 1024, a block
// beyond), larger k the bitonic sort. The order check plus the CPU's set fix the output completely, so passing
// both means the two selections give identical results.
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

// rows x n values at v (row r at v + r * stride) through cuda::topk against cpu::topk_indices.
void check_rows(const std::vector<float>& v, int64_t rows, int64_t n, int64_t stride, int64_t k, const std::string& what) {
  auto dv = upload(v);
  auto di = nan_buffer<int32_t>(size_t(rows * k));
  topk(ctx(), dv.get(), rows, n, stride, k, di.get());
  const auto got = download(di);
  for (int64_t r = 0; r < rows; r++) {
    const float* row = v.data() + r * stride;
    auto want = cpu::topk_indices(row, n, k);
    std::vector<int64_t> g(got.begin() + r * k, got.begin() + (r + 1) * k);
    for (int64_t i = 0; i < k; i++) ASSERT_TRUE(g[size_t(i)] >= 0 && g[size_t(i)] < n) << what << " row " << r << " pos " << i;
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

void check_topk(int64_t rows, int64_t n, int64_t k, int levels, bool specials) {
  const auto v = tie_rows(rows, n, levels, specials, uint32_t(n * 7 + k + levels));
  check_rows(v, rows, n, n, k, "n=" + std::to_string(n) + " k=" + std::to_string(k) + " levels=" + std::to_string(levels));
}

// Rows whose k-th and (k+1)-th values are equal: m < k distinct values above a tie value that c > k - m
// elements share, at random places, the rest below (or NaN / signed zeros as the tie value). The replay path.
std::vector<float> boundary_rows(int64_t rows, int64_t n, int64_t k, float tie, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(size_t(rows * n));
  for (int64_t r = 0; r < rows; r++) {
    float* row = v.data() + r * n;
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) perm[size_t(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    const int64_t m = int64_t(rng() % uint32_t(k));                       // strictly above the tie
    const int64_t c = (k - m + 1) + int64_t(rng() % uint32_t(n - k));  // at the tie: k - m + 1 .. n - m
    int64_t p = 0;
    for (int64_t i = 0; i < m; i++) row[perm[size_t(p++)]] = 10.0f + float(i);
    for (int64_t i = 0; i < c && p < n; i++) row[perm[size_t(p++)]] = tie;
    for (; p < n; p++) row[perm[size_t(p)]] = -10.0f - float(rng() % 1000);
    if (std::isnan(tie))  // nothing ranks above NaN: the m larger values join the tie (still more than k)
      for (int64_t i = 0; i < n; i++)
        if (row[i] >= 10.0f) row[i] = tie;
    if (tie == 0.0f)  // signed zeros: half of the tied elements are -0
      for (int64_t i = 0; i < n; i++)
        if (row[i] == 0.0f && (rng() & 1)) row[i] = -0.0f;
  }
  return v;
}

TEST(CudaTopk, SameSetAsCpuOnTieHeavyRows) {
  for (int64_t n : {1, 7, 33, 512, 700, 4096})
    for (int64_t k : {1, 10, 32, 64})
      for (int levels : {2, 5, 1000})
        if (k <= n) check_topk(9, n, k, levels, levels == 5);
}

TEST(CudaTopk, PartialSortBranchAndAllEqualRows) {
  check_topk(4, 2048, 32, 3, false);   // k * 64 == n: the CPU's partial_sort branch
  check_topk(4, 2047, 32, 3, false);   // just below: nth_element
  check_topk(3, 16384, 10, 1, false);  // all equal, the largest supported row
  check_topk(3, 16384, 100, 1, false); // the same through block_topk
  check_topk(4, 1024, 16, 1, false);   // all equal, the largest row of the warp selection
}

// The rounds-of-arg-max selection (k <= 32): one warp per row up to n = 1024, a block beyond.
TEST(CudaTopk, SmallKOnRandomRows) {
  for (int64_t n : {1, 2, 5, 31, 32, 33, 63, 64, 65, 100, 257, 512, 777, 1000, 1024, 1025, 3000})
    for (int64_t k : {int64_t(1), int64_t(2), int64_t(10), int64_t(31), int64_t(32), n})
      if (k <= n && k <= 32) {
        const auto v = rand_vec(size_t(7 * n), -5.0f, 5.0f, uint32_t(n * 131 + k));
        check_rows(v, 7, n, n, k, "random n=" + std::to_string(n) + " k=" + std::to_string(k));
      }
}

TEST(CudaTopk, SmallKWithTiesAtTheBoundary) {
  for (int64_t n : {11, 32, 45, 512, 640, 1000, 1024, 2048, 5000})
    for (int64_t k : {1, 2, 10, 31, 32})
      if (k < n)
        for (float tie : {0.5f, 0.0f, NAN}) {
          const auto v = boundary_rows(6, n, k, tie, uint32_t(n * 37 + k));
          check_rows(v, 6, n, n, k, "boundary n=" + std::to_string(n) + " k=" + std::to_string(k) + " tie=" +
                                        std::to_string(tie));
        }
}

TEST(CudaTopk, SmallKSpecialValues) {
  for (int64_t n : {20, 96, 500, 1500}) {
    const int64_t rows = 5;
    std::vector<float> v(size_t(rows * n));
    std::mt19937 rng(static_cast<uint32_t>(n));
    for (int64_t i = 0; i < rows * n; i++) {
      const int64_t r = i / n;
      const uint32_t s = rng() % 8;
      if (r == 0) v[size_t(i)] = NAN;                              // all NaN
      else if (r == 1) v[size_t(i)] = (s & 1) ? -0.0f : 0.0f;     // signed zeros only
      else if (r == 2) v[size_t(i)] = s == 0 ? NAN : float(s);     // a few NaN above small integers
      else if (r == 3) v[size_t(i)] = s < 2 ? -INFINITY : s < 4 ? INFINITY : -0.0f;
      else v[size_t(i)] = s == 0 ? NAN : s == 1 ? -0.0f : s == 2 ? 0.0f : float(int(rng() % 7) - 3);
    }
    for (int64_t k : {1, 3, 10, 32})
      if (k <= n) check_rows(v, rows, n, n, k, "specials n=" + std::to_string(n) + " k=" + std::to_string(k));
  }
}

TEST(CudaTopk, SmallKRowStride) {
  for (int64_t n : {40, 700, 2000}) {
    const int64_t stride = n + 5, rows = 6;
    auto v = tie_rows(rows, stride, 6, true, uint32_t(n));
    check_rows(v, rows, n, stride, 10, "stride n=" + std::to_string(n));
    check_rows(v, rows, n, stride, 40, "stride n=" + std::to_string(n) + " k=40");
  }
}

}  // namespace
}  // namespace ds4::cuda::test
