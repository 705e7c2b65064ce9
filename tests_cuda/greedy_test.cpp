// greedy_pick against the host's rules: engine::validate_logits (SAMPLING.md step 1: the first NaN or +inf, or a
// row of only -inf, is an error) and the sampler's argmax (step 3: the first index of the maximum).
#include "cuda_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backend/cuda/switches.h"
#include "core/error.h"
#include "engine/logits_check.h"

namespace ds4::cuda::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// {token or bad index, status} as the host decides it.
std::vector<int32_t> host_pick(const std::vector<float>& row) {
  try {
    engine::validate_logits(row);
  } catch (const Error& e) {
    const std::string m = e.what();
    const auto at = m.find("logit[");
    if (at == std::string::npos) return {0, kGreedyAllNegInf};
    const bool nan = m.find("is NaN") != std::string::npos;
    return {int32_t(std::stol(m.substr(at + 6))), nan ? kGreedyNan : kGreedyPosInf};
  }
  return {int32_t(std::max_element(row.begin(), row.end()) - row.begin()), kGreedyOk};
}

void check(const std::vector<float>& row, const std::string& what) {
  auto d = upload(row);
  auto out = nan_buffer<int32_t>(2);
  greedy_pick(ctx(), d.get(), int64_t(row.size()), out.get());
  EXPECT_EQ(download(out), host_pick(row)) << what << " (V=" << row.size() << ")";
}

TEST(CudaGreedy, PicksTheFirstMaximumLikeTheHost) {
  for (const size_t V : {size_t(1), size_t(7), size_t(2048), size_t(2049), size_t(100000), size_t(248320)}) {
    auto row = rand_vec(V, -30.0f, 30.0f, uint32_t(V));
    check(row, "random");
    // Ties: values on a coarse grid, so the maximum repeats across blocks; the first must win.
    for (auto& v : row) v = std::round(v / 8.0f);
    check(row, "ties");
    std::fill(row.begin(), row.end(), 1.5f);
    check(row, "all equal");
    row.back() = 2.0f;
    check(row, "maximum last");
    // -inf entries are legal (masked tokens); a row of them only is not.
    for (size_t i = 0; i < V; i += 3) row[i] = -kInf;
    check(row, "masked tokens");
    std::fill(row.begin(), row.end(), -kInf);
    check(row, "all -inf");
    row[V / 2] = -1e30f;
    check(row, "one finite");
  }
}

TEST(CudaGreedy, ReportsTheFirstNanOrInfinity) {
  for (const size_t V : {size_t(5), size_t(4097), size_t(248320)}) {
    auto row = rand_vec(V, -3.0f, 3.0f, 7);
    row[V - 1] = std::numeric_limits<float>::quiet_NaN();
    check(row, "NaN last");
    row[V / 3] = kInf;
    check(row, "+inf before a NaN");
    row[0] = std::numeric_limits<float>::quiet_NaN();
    check(row, "NaN first");
    std::fill(row.begin(), row.end(), -kInf);
    row[V / 2] = kInf;
    check(row, "+inf among -inf");
  }
}

// The last block's counter is left at zero: calls after calls, and other split kernels after, still combine.
TEST(CudaGreedy, RepeatedCallsAgree) {
  const auto row = rand_vec(248320, -5.0f, 5.0f, 99);
  for (int i = 0; i < 5; i++) check(row, "call " + std::to_string(i));
}

// linear_pick is linear then greedy_pick: the same logits, bit for bit, and the same pick, on shapes that take the
// tall GEMV's fused pick (at least 64 rows per multiprocessor slot, K of 1024 to 2560) and one that does not. Each
// row's logit is W[row][0] (bf16-exact, x = e0), so the rows can be chosen: random, ties, -inf masks, NaN and +inf.
TEST(CudaGreedy, LinearPickEqualsLinearThenPick) {
  const int64_t K = 1024, slots = 64 * int64_t(ctx().sm_count());
  std::vector<float> x(size_t(K), 0.0f);
  x[0] = 1.0f;
  auto dx = upload(x);
  for (const int64_t N : {slots + 551, 3 * slots + 7, int64_t(300)}) {
    auto base = rand_vec(size_t(N), -30.0f, 30.0f, uint32_t(N));
    std::vector<std::pair<std::string, std::vector<float>>> rows;
    rows.emplace_back("random", base);
    auto r = base;
    for (auto& v : r) v = std::round(v / 8.0f);
    rows.emplace_back("ties", r);
    for (size_t i = 0; i < r.size(); i += 3) r[i] = -kInf;
    rows.emplace_back("masked tokens", r);
    r[size_t(N) - 2] = kInf;
    rows.emplace_back("+inf late", r);
    r[size_t(N) / 2] = std::numeric_limits<float>::quiet_NaN();
    rows.emplace_back("NaN before +inf", r);
    std::fill(r.begin(), r.end(), -kInf);
    rows.emplace_back("all -inf", r);
    for (const auto& [what, logits] : rows) {
      std::vector<float> w(size_t(N * K), 0.0f);
      for (int64_t n = 0; n < N; n++) w[size_t(n * K)] = logits[size_t(n)];
      auto dw = upload(to_bf16(w));
      // Fused on the tall shapes unless DS4_CUDA_FUSED_PICK=0 runs the two calls.
      ASSERT_EQ(linear_pick_fused(ctx(), dx.get(), K, dw.get(), N), N != 300 && detail::switch_on("DS4_CUDA_FUSED_PICK"))
          << what << " N=" << N;
      auto ya = nan_buffer<float>(size_t(N)), yb = nan_buffer<float>(size_t(N));
      auto pa = nan_buffer<int32_t>(2), pb = nan_buffer<int32_t>(2);
      linear_pick(ctx(), dx.get(), K, dw.get(), N, ya.get(), pa.get());
      linear(ctx(), dx.get(), 1, K, dw.get(), N, yb.get());
      greedy_pick(ctx(), yb.get(), N, pb.get());
      const auto a = download(ya), b = download(yb);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what << " N=" << N;
      EXPECT_EQ(download(pa), download(pb)) << what << " N=" << N;
      EXPECT_EQ(download(pa), host_pick(b)) << what << " N=" << N;
    }
  }
}

}  // namespace
}  // namespace ds4::cuda::test
