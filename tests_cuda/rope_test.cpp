// apply_rope against cpu::RopeTable + cpu::apply_rope: text positions, M-RoPE (time, height, width) positions,
// and a strided layout (the indexer's q heads inside [q heads | k] rows). cos/sin are computed the same way
// (float angle, double cos/sin, rounded to float), so the only difference is FMA contraction in the rotation:
// at most an ulp or two of the larger term, hence 1e-6 of max|x|.
#include "cuda_test_util.h"

#include "backend/cpu/rope.h"

namespace ds4::cuda::test {
namespace {

void cpu_rope(const cpu::RopeTable& rope, std::vector<float>& x, int64_t T, int64_t heads, int64_t token_stride,
              int64_t head_stride, const std::vector<int32_t>& pos3, int64_t pos0) {
  std::vector<float> cs(size_t(rope.rotary_dim)), sn(size_t(rope.rotary_dim));
  for (int64_t t = 0; t < T; t++) {
    std::array<int64_t, 3> p{pos0 + t, pos0 + t, pos0 + t};
    if (!pos3.empty()) p = {pos3[size_t(3 * t)], pos3[size_t(3 * t + 1)], pos3[size_t(3 * t + 2)]};
    rope.cos_sin(p, cs.data(), sn.data());
    cpu::apply_rope(x.data() + t * token_stride, heads, head_stride, rope.rotary_dim, cs.data(), sn.data());
  }
}

TEST(CudaRope, TextAndMRopePositions) {
  for (int64_t hd : {64, 128, 256}) {
    const int64_t T = 7, heads = 5, rd = hd / 4;
    const cpu::RopeTable table(rd, 1e7, {rd / 6 + 1, rd / 6 + 1, rd / 6});
    DeviceRope rope(table);
    const auto x = rand_vec(size_t(T * heads * hd), -2.0f, 2.0f, uint32_t(hd));
    for (bool vision : {false, true}) {
      std::vector<int32_t> pos3;
      if (vision)
        for (int64_t t = 0; t < T; t++) pos3.insert(pos3.end(), {int32_t(100 + t), int32_t(3 * t % 5), int32_t(t * t)});
      auto want = x;
      cpu_rope(table, want, T, heads, heads * hd, hd, pos3, 123456);
      auto dx = upload(x);
      DeviceBuffer<int32_t> dp = vision ? upload(pos3) : DeviceBuffer<int32_t>();
      apply_rope(ctx(), dx.get(), T, heads, heads * hd, hd, rope.params(), Positions{dp.get(), 123456});
      expect_close_scaled(download(dx), want, 1e-6, "rope hd=" + std::to_string(hd) + (vision ? " mrope" : ""));
    }
  }
}

TEST(CudaRope, StridedHeadsLeaveTheRestAlone) {
  const int64_t T = 4, IH = 3, D = 64, rd = 16, stride = (IH + 1) * D;
  const cpu::RopeTable table(rd, 1e4, {3, 3, 2});
  DeviceRope rope(table);
  const auto x = rand_vec(size_t(T * stride), -1.0f, 1.0f, 9);
  auto want = x;
  cpu_rope(table, want, T, IH, stride, D, {}, 0);
  auto dx = upload(x);
  apply_rope(ctx(), dx.get(), T, IH, stride, D, rope.params(), Positions{nullptr, 0});
  const auto got = download(dx);
  expect_close_scaled(got, want, 1e-6, "strided rope");
  for (int64_t t = 0; t < T; t++)
    for (int64_t e = 0; e < D; e++) EXPECT_EQ(got[size_t(t * stride + IH * D + e)], x[size_t(t * stride + IH * D + e)]);
}

}  // namespace
}  // namespace ds4::cuda::test
