// cuda::linear against cpu::linear. Bounds are relative to m[t][n] = sum_k |x[t][k]| |W[n][k]|, the size of the
// terms being summed:
// - T <= 8 (GEMV): x stays float32 and only the summation order differs from the CPU; float32 summation error
//   is far below 1e-5 of m for these K (it grows like sqrt(K) 2^-24 in practice, K 2^-24 at worst).
// - T > 8 (cuBLAS): x is rounded to bf16, each product moves by at most 2^-9 of itself, so 2^-8 of m bounds
//   the rounding plus the float32 accumulation.
#include "cuda_test_util.h"

#include <cmath>

#include "backend/cpu/linear.h"

namespace ds4::cuda::test {
namespace {

struct LinearCase {
  int64_t T, K, N;
};
std::ostream& operator<<(std::ostream& o, const LinearCase& c) {
  return o << "T=" << c.T << " K=" << c.K << " N=" << c.N;
}

void check_linear(int64_t T, int64_t K, int64_t N, int64_t weight_offset, uint32_t seed) {
  const auto x = rand_vec(size_t(T * K), -1.0f, 1.0f, seed);
  Weight W(size_t(N * K + weight_offset), 1.0f / std::sqrt(float(K)), seed + 1);
  const float* wh = W.h() + weight_offset;
  std::vector<float> want(size_t(T * N));
  cpu::linear(x.data(), T, K, wh, N, want.data());
  std::vector<double> mag(size_t(T * N), 0.0);
  for (int64_t t = 0; t < T; t++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < K; k++) mag[size_t(t * N + n)] += std::fabs(x[size_t(t * K + k)] * wh[n * K + k]);
  auto dx = upload(x);
  auto dy = nan_buffer<float>(size_t(T * N));
  linear(ctx(), dx.get(), T, K, W.d() + weight_offset, N, dy.get());
  const double tol = T <= 8 ? 1e-5 : 1.0 / 256;
  expect_close_by(download(dy), want, [&](size_t i) { return tol * mag[i] + 1e-6; },
                  "linear T=" + std::to_string(T) + " K=" + std::to_string(K) + " N=" + std::to_string(N));
}

class CudaLinear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CudaLinear, MatchesCpuWithinBf16Bounds) {
  const auto c = GetParam();
  check_linear(c.T, c.K, c.N, 0, uint32_t(c.T * 131 + c.K * 7 + c.N));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaLinear,
    ::testing::Values(LinearCase{1, 2560, 2560},   // decode, hidden -> hidden
                      LinearCase{1, 2560, 10240},  // decode, the GDN qkv projection's width
                      LinearCase{1, 13000, 64},    // K longer than one shared-memory chunk
                      LinearCase{1, 77, 33},       // odd K: the scalar path
                      LinearCase{2, 128, 50}, LinearCase{3, 96, 300}, LinearCase{7, 100, 37},
                      LinearCase{8, 2560, 100},  // 8 tokens: two activation chunks
                      LinearCase{8, 640, 2560}, LinearCase{9, 64, 64}, LinearCase{64, 2560, 640},
                      LinearCase{200, 136, 99},  // cuBLAS with odd leading dimensions
                      LinearCase{33, 77, 5},
                      LinearCase{2, 10240, 324},   // few row tiles over a long K: K split across blocks
                      LinearCase{5, 10240, 324},
                      // T = 1: the streaming kernel with 8, 4 and 1 warps per row, two rows per warp (tall), a
                      // ragged last block, K shorter than a warp's chunks
                      LinearCase{1, 6144, 2560}, LinearCase{1, 12288, 1100}, LinearCase{1, 2560, 1057},
                      LinearCase{1, 1000, 70001}, LinearCase{1, 320, 10240}, LinearCase{1, 264, 9},
                      // T = 1, tall: the bulk-copy kernel with a ragged last block, a slice of one partial piece
                      // (K = 1024), slices of a whole and a partial piece (K = 6144)
                      LinearCase{1, 1024, 9001}, LinearCase{1, 6144, 9000}, LinearCase{1, 2560, 20000},
                      // T = 1, the wide kernel (2560 < K <= 8192): more than 3 blocks a multiprocessor when a
                      // block would get over 16 rows, and fewer rows than blocks
                      LinearCase{1, 6144, 8000}, LinearCase{1, 8192, 37}));

// A token's projection is the same bits alone (T = 1: the rows or the bulk kernel) as inside a chunk of 2-8
// tokens (the multi-token kernel): speculative verification relies on it. Short, wide and tall shapes, and the
// decode step's: the output projections (K = 6144, 8192), the router projections (512 and 64 experts with the
// shared expert's rows), short rows, 133 rows.
TEST(CudaLinear, OneTokenRowsEqualChunkRows) {
  for (const LinearCase c : {LinearCase{5, 2560, 2560}, LinearCase{3, 6144, 2560}, LinearCase{8, 2560, 16480},
                             LinearCase{2, 1024, 9001}, LinearCase{4, 2560, 70001}, LinearCase{2, 8192, 2560},
                             LinearCase{3, 2560, 1345}, LinearCase{2, 2560, 1793}, LinearCase{2, 320, 8000},
                             LinearCase{2, 6144, 133}, LinearCase{2, 6144, 8000}, LinearCase{3, 2568, 70}}) {
    const auto x = rand_vec(size_t(c.T * c.K), -1.0f, 1.0f, uint32_t(c.N));
    Weight W(size_t(c.N * c.K), 1.0f / std::sqrt(float(c.K)), uint32_t(c.K));
    auto dx = upload(x);
    auto chunk = nan_buffer<float>(size_t(c.T * c.N)), one = nan_buffer<float>(size_t(c.N));
    linear(ctx(), dx.get(), c.T, c.K, W.d(), c.N, chunk.get());
    const auto all = download(chunk);
    for (int64_t t = 0; t < c.T; t++) {
      linear(ctx(), dx.get() + t * c.K, 1, c.K, W.d(), c.N, one.get());
      const std::vector<float> want(all.begin() + t * c.N, all.begin() + (t + 1) * c.N);
      ASSERT_EQ(download(one), want) << c << ": token " << t;
    }
  }
}

// The K split's last block leaves its tile counters at zero: the same split shape again, and another split
// shape over the same counters, still add every partial exactly once.
TEST(CudaLinear, SplitKCountersReset) {
  for (int i = 0; i < 3; i++) {
    check_linear(2, 10240, 324, 0, 11 + i);
    check_linear(3, 8192, 100, 0, 21 + i);
  }
}

// RowsOut with streams: the projection added into hyper-connection streams, streams[t][s][n] += y[t][n] *
// inject[t][s]. The one-token GEMV does it in its epilogue, other shapes through hc_inject; both must give the
// bits of linear followed by hc_inject (the same expression on the same values).
void check_linear_into_streams(int64_t T, int64_t K, int64_t N, int64_t S, uint32_t seed) {
  const auto x = rand_vec(size_t(T * K), -1.0f, 1.0f, seed);
  const auto streams0 = rand_vec(size_t(T * S * N), -2.0f, 2.0f, seed + 1);
  const auto inj = rand_vec(size_t(T * S), 0.0f, 2.0f, seed + 2);
  Weight W(size_t(N * K), 1.0f / std::sqrt(float(K)), seed + 3);
  auto dx = upload(x), dinj = upload(inj);
  auto want = upload(streams0), got = upload(streams0);
  auto y = nan_buffer<float>(size_t(T * N));
  linear(ctx(), dx.get(), T, K, W.d(), N, y.get());
  hc_inject(ctx(), want.get(), y.get(), dinj.get(), T, S, N);
  linear(ctx(), dx.get(), T, K, W.d(), N, RowsOut{nullptr, got.get(), dinj.get(), S});
  expect_close(download(got), download(want), 0.0, 0.0,
               "linear into streams T=" + std::to_string(T) + " K=" + std::to_string(K) + " N=" + std::to_string(N));
}

TEST(CudaLinear, IntoStreamsMatchesLinearThenInject) {
  check_linear_into_streams(1, 6144, 2560, 4, 31);  // several warps per row
  check_linear_into_streams(1, 8192, 2560, 4, 35);  // the attention output projection
  check_linear_into_streams(1, 6144, 300, 6, 37);    // more streams than the wide kernel stages
  check_linear_into_streams(1, 3072, 5, 2, 38);      // fewer rows than blocks, fewer streams
  check_linear_into_streams(1, 2560, 300, 3, 36);
  check_linear_into_streams(1, 2560, 40000, 3, 32);  // two rows per warp
  check_linear_into_streams(1, 64, 40, 1, 33);
  check_linear_into_streams(3, 640, 300, 4, 34);  // composed: linear, then hc_inject
}

// W starting 2 bytes past a 16-byte boundary: the GEMV cannot take 128-bit loads and must fall back, and cuBLASLt
// must be told the operand's real alignment.
TEST(CudaLinear, UnalignedWeights) {
  check_linear(1, 64, 40, 1, 5);
  check_linear(4, 64, 40, 1, 6);
  check_linear(20, 64, 40, 1, 7);
}

}  // namespace
}  // namespace ds4::cuda::test
