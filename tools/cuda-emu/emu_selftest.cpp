// Self-checks of the CUDA emulator (tools/cuda-emu), linked into its test binary only (EmuSelfTest.*): the
// warp-wide mma stand-in against a plain matrix product with the operands placed as the PTX ISA documents the
// m16n8k16 fragments, and the warp and block collectives against what they are defined to return.
#include <cooperative_groups.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

uint16_t bf16_bits(float f) {  // round to nearest even (the test values are exact in bf16 anyway)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t pack(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

// A: 16x16 row major, B: 16x8 stored b[k * 8 + n], C and D: 16x8 row major. One warp.
void mma_kernel(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  const int lane = int(threadIdx.x), g = lane >> 2, t = lane & 3;
  const auto A = [&](int r, int k) { return a[r * 16 + k]; };
  const auto B = [&](int k, int n) { return b[k * 8 + n]; };
  const uint32_t a0 = pack(A(g, 2 * t), A(g, 2 * t + 1)), a1 = pack(A(g + 8, 2 * t), A(g + 8, 2 * t + 1)),
                 a2 = pack(A(g, 2 * t + 8), A(g, 2 * t + 9)), a3 = pack(A(g + 8, 2 * t + 8), A(g + 8, 2 * t + 9));
  const uint32_t b0 = pack(B(2 * t, g), B(2 * t + 1, g)), b1 = pack(B(2 * t + 8, g), B(2 * t + 9, g));
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  emu_mma_bf16_16816(acc, a0, a1, a2, a3, b0, b1);
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

TEST(EmuSelfTest, MmaM16n8k16MatchesTheDocumentedFragments) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-64, 64);
  std::vector<uint16_t> a(256), b(128);
  std::vector<float> c(128), d(128, -1.0f);
  // Small integers over powers of two: every product and partial sum is exact in float32, so the result does
  // not depend on the order of summation and a misplaced element always shows.
  for (auto& x : a) x = bf16_bits(float(small(rng)) / 8.0f);
  for (auto& x : b) x = bf16_bits(float(small(rng)) / 16.0f);
  for (auto& x : c) x = float(small(rng));
  ::emu::launcher(mma_kernel, dim3(1), dim3(32))(a.data(), b.data(), c.data(), d.data());
  for (int r = 0; r < 16; r++)
    for (int n = 0; n < 8; n++) {
      double s = c[size_t(r * 8 + n)];
      for (int k = 0; k < 16; k++) s += double(bf16_value(a[size_t(r * 16 + k)])) * bf16_value(b[size_t(k * 8 + n)]);
      EXPECT_EQ(d[size_t(r * 8 + n)], float(s)) << "row " << r << " column " << n;
    }
}

// Two warps of a 64-thread block, every collective once; results per thread.
void collectives_kernel(int* out) {
  const int t = int(threadIdx.x), lane = t & 31;
  int* o = out + 8 * t;
  o[0] = __shfl_xor_sync(0xffffffffu, t * 3, 5);
  o[1] = __shfl_sync(0xffffffffu, t * 7, 31 - lane);
  o[2] = __shfl_down_sync(0xffffffffu, t, 3);
  o[3] = int(__ballot_sync(0xffffffffu, (t % 3) == 0));
  o[4] = int(__reduce_max_sync(0xffffffffu, unsigned((t * 37) % 101)));
  o[5] = __syncthreads_or(t == 40);
  o[6] = __syncthreads_count(t % 4 == 1);
  o[7] = __any_sync(0xffffffffu, t == 2);
}

TEST(EmuSelfTest, WarpAndBlockCollectives) {
  std::vector<int> out(64 * 8, -1);
  ::emu::launcher(collectives_kernel, dim3(1), dim3(64))(out.data());
  for (int t = 0; t < 64; t++) {
    const int lane = t & 31, base = t & ~31;
    const int* o = &out[size_t(8 * t)];
    EXPECT_EQ(o[0], (base + (lane ^ 5)) * 3) << t;
    EXPECT_EQ(o[1], (base + 31 - lane) * 7) << t;
    EXPECT_EQ(o[2], lane + 3 < 32 ? t + 3 : t) << t;
    unsigned m = 0, mx = 0;
    for (int l = 0; l < 32; l++) {
      if ((base + l) % 3 == 0) m |= 1u << l;
      mx = std::max(mx, unsigned(((base + l) * 37) % 101));
    }
    EXPECT_EQ(unsigned(o[3]), m) << t;
    EXPECT_EQ(unsigned(o[4]), mx) << t;
    EXPECT_EQ(o[5], 1) << t;
    EXPECT_EQ(o[6], 16) << t;
    EXPECT_EQ(o[7], base == 0 ? 1 : 0) << t;
  }
}

// Blocks run one after another, so a grid-wide counter sees every earlier block's increment (the split-K
// pattern: the last block to arrive reduces).
void counter_kernel(int* counter, int* last) {
  __shared__ int ticket;
  if (threadIdx.x == 0) ticket = atomicAdd(counter, 1);
  __syncthreads();
  if (threadIdx.x == 0 && ticket == int(gridDim.x) - 1) *last = int(blockIdx.x);
}

TEST(EmuSelfTest, AtomicsAcrossBlocks) {
  int counter = 0, last = -1;
  ::emu::launcher(counter_kernel, dim3(5), dim3(64))(&counter, &last);
  EXPECT_EQ(counter, 5);
  EXPECT_EQ(last, 4);
}

// A thread-block cluster: the blocks of a cluster run together (each waits at cluster.sync() for the others)
// and each reads the others' shared memory, static and dynamic, through map_shared_rank. This file is not
// rewritten by preprocess.py, so the static __shared__ variable is spelled as the rewrite spells it.
void cluster_kernel(int* out) {
  namespace cg = cooperative_groups;
  static char emu_tag_v;
  int(&v)[2] = ::emu::block_shared<int[2]>(&emu_tag_v);
  int* dyn = reinterpret_cast<int*>(::emu::dyn_smem());
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned r = cluster.block_rank();
  if (threadIdx.x == 0) {
    v[1] = int(100 * blockIdx.y + blockIdx.x);
    dyn[3] = int(1000 + r);
  }
  cluster.sync();
  if (threadIdx.x < cluster.num_blocks()) {
    const unsigned o = threadIdx.x;
    out[(blockIdx.y * gridDim.x + blockIdx.x) * 8 + o] = cluster.map_shared_rank(&v[1], o)[0] +
                                                         10000 * (cluster.map_shared_rank(dyn, o)[3] - 1000);
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
}

TEST(EmuSelfTest, Cluster) {
  std::vector<int> out(8 * 2 * 8, -1);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 4;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(8, 2);
  cfg.blockDim = dim3(64);
  cfg.dynamicSmemBytes = 64;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  ASSERT_EQ(cudaLaunchKernelEx(&cfg, cluster_kernel, out.data()), cudaSuccess);
  for (int by = 0; by < 2; by++)
    for (int bx = 0; bx < 8; bx++)
      for (int o = 0; o < 8; o++) {
        const int got = out[size_t((by * 8 + bx) * 8 + o)];
        if (o >= 4) EXPECT_EQ(got, -1);
        else EXPECT_EQ(got, 100 * by + (bx & ~3) + o + 10000 * o) << bx << " " << by << " " << o;
      }
  cfg.gridDim = dim3(6, 2);  // not a multiple of the cluster size: refused
  EXPECT_NE(cudaLaunchKernelEx(&cfg, cluster_kernel, out.data()), cudaSuccess);
  ::emu::last_error = 0;  // cudaGetLastError
}

}  // namespace
