// The RMSNorm variants and L2 normalisation against cpu/norms. The kernels repeat the CPU's arithmetic (float64
// sums of squares, IEEE sqrt and division, the same multiplication order), so results agree to a few float32
// ulps; only expf in the gate's activation may differ (by at most 2 ulp). rtol 4e-6 allows that and no more.
#include "cuda_test_util.h"

#include "backend/cpu/norms.h"

namespace ds4::cuda::test {
namespace {

constexpr double kRtol = 4e-6, kAtol = 1e-7;

struct OffsetCase {
  int64_t rows, dim, group;
  bool weight, in_place;
};
std::ostream& operator<<(std::ostream& o, const OffsetCase& c) {
  return o << "rows=" << c.rows << " dim=" << c.dim << " group=" << c.group << (c.weight ? "" : " no weight")
           << (c.in_place ? " in place" : "");
}

class CudaRmsNormOffset : public ::testing::TestWithParam<OffsetCase> {};

TEST_P(CudaRmsNormOffset, MatchesCpu) {
  const auto c = GetParam();
  const auto x = rand_vec(size_t(c.rows * c.dim), -3.0f, 3.0f, uint32_t(c.dim + c.rows));
  Weight w(size_t(c.dim), 0.5f, 3);
  std::vector<float> want(x.size());
  cpu::rms_norm_offset(x.data(), c.weight ? w.h() : nullptr, want.data(), c.rows, c.dim, c.group, 1e-6f);
  auto dx = upload(x);
  auto dy = nan_buffer<float>(x.size());
  float* out = c.in_place ? dx.get() : dy.get();
  rms_norm_offset(ctx(), dx.get(), c.weight ? w.d() : nullptr, out, c.rows, c.dim, c.group, 1e-6f);
  expect_close(download(c.in_place ? dx : dy), want, kRtol, kAtol, "rms_norm_offset");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaRmsNormOffset,
                         ::testing::Values(OffsetCase{7, 1024, 256, true, false},   // q/k head norms
                                           OffsetCase{1, 2560, 2560, true, false},  // block path (> 1024)
                                           OffsetCase{3, 6000, 1500, true, true},   // grouped, block path, in place
                                           OffsetCase{5, 77, 77, false, false},     // no weight, odd width
                                           OffsetCase{112, 256, 256, true, true},   // many heads in place
                                           OffsetCase{2, 4 * 2560, 2560, true, false},   // the HC stream norm
                                           OffsetCase{24, 4 * 2560, 2560, true, false}));  // prefill rows: 256 threads

struct GatedCase {
  int64_t rows, dim;
  Act act;
};
std::ostream& operator<<(std::ostream& o, const GatedCase& c) {
  return o << "rows=" << c.rows << " dim=" << c.dim << " act=" << int(c.act);
}

class CudaRmsNormGated : public ::testing::TestWithParam<GatedCase> {};

TEST_P(CudaRmsNormGated, MatchesCpu) {
  const auto c = GetParam();
  const auto x = rand_vec(size_t(c.rows * c.dim), -2.0f, 2.0f, 11);
  const auto z = rand_vec(size_t(c.rows * c.dim), -4.0f, 4.0f, 12);
  Weight w(rand_vec(size_t(c.dim), 0.5f, 1.5f, 13));
  std::vector<float> want(x.size());
  cpu::rms_norm_gated(x.data(), z.data(), w.h(), want.data(), c.rows, c.dim, 1e-6f, c.act);
  auto dx = upload(x), dz = upload(z);
  auto dy = nan_buffer<float>(x.size());
  rms_norm_gated(ctx(), dx.get(), dz.get(), w.d(), dy.get(), c.rows, c.dim, 1e-6f, c.act);
  expect_close(download(dy), want, kRtol, kAtol, "rms_norm_gated");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaRmsNormGated,
                         ::testing::Values(GatedCase{7 * 48, 128, Act::Sigmoid}, GatedCase{1, 64, Act::Silu},
                                           GatedCase{5, 1100, Act::Sigmoid}, GatedCase{3, 33, Act::None},
                                           GatedCase{40, 1100, Act::Silu}));  // prefill rows, block path: 256 threads

TEST(CudaL2Norm, MatchesCpuWithAndWithoutScale) {
  for (int64_t dim : {128, 77, 256, 2000}) {
    const int64_t rows = 13;
    const auto x = rand_vec(size_t(rows * dim), -1.0f, 1.0f, uint32_t(dim));
    auto want = x;
    cpu::l2_norm(want.data(), rows, dim, 1e-6f);
    auto scaled = want;
    const float scale = 1.0f / std::sqrt(float(dim));
    for (auto& v : scaled) v *= scale;
    auto d1 = upload(x), d2 = upload(x);
    l2_norm(ctx(), d1.get(), rows, dim, 1e-6f);
    l2_norm(ctx(), d2.get(), rows, dim, 1e-6f, scale);
    expect_close(download(d1), want, kRtol, kAtol, "l2_norm");
    expect_close(download(d2), scaled, kRtol, kAtol, "l2_norm scaled");
  }
}

}  // namespace
}  // namespace ds4::cuda::test
