// The decode kernel's own QSA selection (KeySelection::blocks after qsa_score) against the separate ops
// (qsa_select's lists, then attention over them), byte for byte: the same keys in the same order give the same
// bits. Both separate ops have their own tests against the CPU (qsa_test.cpp, attention_test.cpp). The cases take
// each path of the shared selection (the ranking, the radix set, the CPU's replay when equal scores straddle the
// k-th place), queries on both sides of the budget, a graph's bound past the position, and a scratch larger than
// the kernel's ring, and both decode kernels at head dim 256 (the second one's selection, qsa.cuh's
// choose_blocks_lean, for caches of more than 128 blocks; DS4_CUDA_SELECT_LEAN=1 / 0 forces it on / off).
#include "cuda_test_util.h"

#include <cmath>
#include <cstring>

namespace ds4::cuda::test {
namespace {

struct SelCase {
  const char* what;
  int64_t heads, kv_heads, head_dim, T;
  int64_t R, K, IH, D;
  int64_t pos0, bound_extra;  // the queries' first position; how far the (graph's) bound lies past it
  bool device_pos, tied;      // position read on the device; integer score levels with ties (else random)
};

std::ostream& operator<<(std::ostream& o, const SelCase& c) { return o << c.what; }

class CudaQsaAttention : public ::testing::TestWithParam<SelCase> {};

TEST_P(CudaQsaAttention, InKernelSelectionEqualsTheLists) {
  const auto c = GetParam();
  const int64_t hd = c.head_dim, width = c.kv_heads * hd, P = c.pos0 + c.T;
  const int64_t bound = c.pos0 + c.bound_extra, nb_max = qsa_score_stride(bound, c.T, c.R);
  ASSERT_LE(nb_max, kQsaInKernelMaxBlocks);
  auto dk = upload(to_bf16(rand_vec(size_t(P * width), -1.0f, 1.0f, 1)));
  auto dv = upload(to_bf16(rand_vec(size_t(P * width), -1.0f, 1.0f, 2)));
  auto dq = upload(rand_vec(size_t(c.T * c.heads * hd), -1.0f, 1.0f, 3));
  auto dgate = upload(rand_vec(size_t(c.T * c.heads * hd), -3.0f, 3.0f, 4));
  // The indexer's queries and pooled keys. Tied: one non-zero coordinate each, integer levels, so that scores are
  // exact and equal levels give equal scores (relu zeros and repeated levels straddle the k-th place).
  std::vector<float> iq, bk;
  if (c.tied) {
    iq.assign(size_t(c.T * c.IH * c.D), 0.0f), bk.assign(size_t(nb_max * c.D), 0.0f);
    for (int64_t t = 0; t < c.T; t++)
      for (int64_t h = 0; h < c.IH; h++) iq[size_t((t * c.IH + h) * c.D)] = 0.5f + 0.25f * float((t + h) % 3);
    for (int64_t b = 0; b < nb_max; b++) bk[size_t(b * c.D)] = float(int64_t((b * 7919) % 5) - 2);
  } else {
    iq = rand_vec(size_t(c.T * c.IH * c.D), -1.0f, 1.0f, 5), bk = rand_vec(size_t(nb_max * c.D), -1.0f, 1.0f, 6);
  }
  auto diq = upload(iq), dbk = upload(bk);
  DeviceBuffer<int64_t> dpos(1);
  dpos.upload(std::vector<int64_t>{c.pos0});
  const SeqPos sp = c.device_pos ? SeqPos{dpos.get(), bound} : SeqPos::host(c.pos0);
  const AttnShape shape{c.heads, c.kv_heads, hd};
  const float scale = 1.0f / std::sqrt(float(hd));

  const int64_t stride = qsa_list_stride(c.K, c.R);
  auto sel = nan_buffer<int32_t>(size_t(c.T * stride));
  auto count = nan_buffer<int32_t>(size_t(c.T));
  auto want = nan_buffer<float>(size_t(c.T * c.heads * hd));
  qsa_select(ctx(), diq.get(), dbk.get(), c.T, sp, c.IH, c.D, c.R, c.K, sel.get(), count.get(), stride);
  attention(ctx(), dq.get(), dk.get(), dv.get(), shape, c.T, KeySelection::lists(sel.get(), count.get(), stride), scale,
            dgate.get(), want.get());

  auto scores = nan_buffer<float>(size_t(c.T * nb_max));
  auto got = nan_buffer<float>(size_t(c.T * c.heads * hd));
  qsa_score(ctx(), diq.get(), dbk.get(), c.T, sp, c.IH, c.D, c.R, c.K, scores.get());
  attention(ctx(), dq.get(), dk.get(), dv.get(), shape, c.T,
            KeySelection::blocks(nb_max > c.K ? scores.get() : nullptr, nb_max, sp, c.R, c.K), scale, dgate.get(),
            got.get());

  const auto w = download(want), g = download(got);
  for (size_t i = 0; i < w.size(); i++) ASSERT_FALSE(std::isnan(w[i])) << "the lists' output " << i << " unwritten";
  for (size_t i = 0; i < g.size(); i++) {
    uint32_t a, b;
    std::memcpy(&a, &w[i], 4), std::memcpy(&b, &g[i], 4);
    ASSERT_EQ(a, b) << "element " << i << " (query " << i / size_t(c.heads * hd) << "): " << g[i] << " against " << w[i];
  }
  // The case reaches a selection: some query has more complete blocks than the budget.
  EXPECT_GT((P - 1 + 1) / c.R, c.K) << "the case must select";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaQsaAttention,
    ::testing::Values(
        // Flash-Next after a 4096-token prompt: 64 blocks, ranked by counting; the graph's bound at the position.
        SelCase{"flash-next 64 blocks", 32, 2, 256, 1, 64, 32, 16, 128, 4095, 0, true, false},
        // After a 32768-token prompt: 512 blocks, the radix set; a graph bound 500 positions on; a host position.
        SelCase{"flash-next 512 blocks, bound past", 32, 2, 256, 1, 64, 32, 16, 128, 32767, 500, true, false},
        SelCase{"flash-next 512 blocks, host position", 32, 2, 256, 1, 64, 32, 16, 128, 32700, 0, false, false},
        // A verification chunk of 8 queries (46-47 blocks, head dim 128), budget 16 blocks.
        SelCase{"chunk of 8", 16, 2, 128, 8, 64, 16, 8, 64, 3000, 100, true, false},
        // Equal scores straddle the k-th place: the CPU's replay in shared memory; the 8 queries lie on both sides
        // of the budget (4 and 5 complete blocks against 4).
        SelCase{"ties across the budget", 8, 2, 64, 8, 8, 4, 4, 32, 36, 0, true, true},
        // Over 256 blocks with ties: the radix set reports the straddle, the ranking replays.
        SelCase{"ties past 256 blocks", 8, 1, 64, 3, 4, 32, 4, 32, 2800, 0, true, true},
        // 997-1000 blocks at head dim 64: the selection's scratch (about 21 KB) is larger than the ring (16 KB).
        SelCase{"scratch past the ring", 8, 2, 64, 2, 4, 32, 4, 32, 3990, 8, true, false},
        // Head dim 256 with a cache of more than 128 blocks takes the second kernel (qsa.cuh's
        // choose_blocks_lean; the 512-block cases above too): with ties, its range set reports the straddle to the
        // out-of-line ranking (100 blocks), which also takes 40-47 blocks; the same block counts in the default
        // kernel (caches of 47 and 100 blocks).
        SelCase{"ties, head dim 256, 40-47 blocks", 16, 2, 256, 8, 64, 32, 4, 32, 2600, 400, true, true},
        SelCase{"ties, head dim 256, 100 blocks", 16, 2, 256, 1, 64, 32, 4, 32, 6400, 0, true, true},
        SelCase{"ties, head dim 256, 40-47 of 140 blocks", 16, 2, 256, 8, 64, 32, 4, 32, 2600, 6400, true, true},
        SelCase{"ties, head dim 256, 100 of 150 blocks", 16, 2, 256, 1, 64, 32, 4, 32, 6400, 3200, true, true},
        SelCase{"head dim 256, 200 of 300 blocks", 32, 2, 256, 1, 64, 32, 16, 128, 12800, 6400, true, false}));

}  // namespace
}  // namespace ds4::cuda::test
