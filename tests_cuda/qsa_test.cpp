// The QSA indexer on the GPU against qwen::qsa_select, chunk by chunk from an empty state: the indexer
// projection comes from cpu::linear (what is tested here is pooling, scoring and selection, and the GPU linear
// has its own test), then q_layernorm, RoPE, key rows appended to the GPU's cache, blocks pooled, and the
// selection compared position by position. Scores agree to about 1e-6 relative, so random inputs select the same
// blocks; ties are exercised separately with scores that are bitwise equal on both sides.
#include "cuda_test_util.h"

#include <cmath>
#include <functional>

#include "backend/cpu/linear.h"
#include "backend/cpu/topk.h"
#include "models/qwen_hybrid/sparse_attention.h"

namespace ds4::cuda::test {
namespace {

TEST(CudaQsa, MatchesCpuSelectionAcrossChunks) {
  qwen::Config c;
  c.hidden_size = 64;
  c.idx_heads = 4;
  c.idx_head_dim = 64;
  c.idx_ratio = 8;
  c.idx_budget = 32;  // block_topk 4
  c.rotary_dim = 16;
  c.rms_eps = 1e-6;
  const int64_t H = c.hidden_size, IH = c.idx_heads, D = c.idx_head_dim, R = c.idx_ratio, K = c.idx_budget / R;
  const cpu::RopeTable table(c.rotary_dim, 1e4, {3, 3, 2});
  DeviceRope rope(table);
  qwen::AttnWeights w;
  Weight qk(size_t((IH + 1) * D * H), 1.7f / std::sqrt(float(H)), 1), qn(size_t(D), 0.3f, 2), kn(size_t(D), 0.3f, 3);
  w.idx_qk = {qk.host, {(IH + 1) * D, H}};
  w.idx_q_norm = {qn.host, {D}};
  w.idx_k_norm = {kn.host, {D}};
  qwen::AttnState s;
  const int64_t max_pos = 300;
  DeviceBuffer<float> index_keys(size_t(max_pos * D)), block_keys(size_t(max_pos / R * D));
  const int64_t stride = qsa_list_stride(K, R);
  int64_t pos0 = 0;
  uint32_t seed = 10;
  for (int64_t T : {7, 1, 64, 1, 200, 1, 3}) {
    const auto x = rand_vec(size_t(T * H), -1.0f, 1.0f, seed++);
    const auto want = qwen::qsa_select(w, c, table, s, x.data(), T, pos0);
    std::vector<float> proj(size_t(T * (IH + 1) * D));
    cpu::linear(x.data(), T, H, qk.h(), (IH + 1) * D, proj.data());
    auto dproj = upload(proj);
    DeviceBuffer<float> q(size_t(T * IH * D));
    copy_rows(ctx(), q.get(), IH * D, dproj.get(), (IH + 1) * D, T, IH * D);
    rms_norm_offset(ctx(), q.get(), qn.d(), q.get(), T * IH, D, D, float(c.rms_eps));
    apply_rope(ctx(), q.get(), T, IH, IH * D, D, rope.params(), Positions{nullptr, pos0});
    copy_rows(ctx(), index_keys.get() + pos0 * D, D, dproj.get() + IH * D, (IH + 1) * D, T, D);
    qsa_pool_blocks(ctx(), index_keys.get(), pos0 / R, (pos0 + T) / R, R, D, kn.d(), rope.params(), float(c.rms_eps),
                    block_keys.get());
    auto sel = nan_buffer<int32_t>(size_t(T * stride));
    auto count = nan_buffer<int32_t>(size_t(T));
    qsa_select(ctx(), q.get(), block_keys.get(), T, pos0, IH, D, R, K, sel.get(), count.get(), stride);
    const auto gs = download(sel), gc = download(count);
    for (int64_t t = 0; t < T; t++) {
      const auto& wt = want[size_t(t)];
      ASSERT_EQ(gc[size_t(t)], int32_t(wt.size())) << "pos " << pos0 + t;
      const std::vector<int32_t> gt(gs.begin() + t * stride, gs.begin() + t * stride + gc[size_t(t)]);
      ASSERT_EQ(gt, wt) << "pos " << pos0 + t;
    }
    pos0 += T;
    // The pooled keys of every complete block so far: same arithmetic as the CPU, 1e-5 of their magnitude.
    auto bk = download(block_keys);
    bk.resize(s.block_keys.size());
    expect_close_scaled(bk, s.block_keys, 1e-5, "block keys at " + std::to_string(pos0));
  }
  EXPECT_GT(pos0 / R, K) << "the test must reach positions where selection happens";
}

// Scores built from one non-zero coordinate are exact products, so GPU and CPU scores are bitwise equal and equal
// scores (repeated levels, relu zeros) must be resolved exactly as cpu::topk_indices resolves them. level(b): pooled
// block b's coordinate (an integer, so that every product and sum is exact).
void check_selection(int64_t R, int64_t K, int64_t pos0, int64_t T, const std::function<float(int64_t)>& level) {
  const int64_t IH = 4, D = 32, nb_max = (pos0 + T) / R;
  std::vector<float> q(size_t(T * IH * D), 0.0f), bk(size_t(nb_max * D), 0.0f);
  for (int64_t t = 0; t < T; t++)
    for (int64_t h = 0; h < IH; h++) q[size_t((t * IH + h) * D)] = 0.5f + 0.25f * float((t + h) % 3);
  for (int64_t b = 0; b < nb_max; b++) bk[size_t(b * D)] = level(b);
  auto dq = upload(q), dbk = upload(bk);
  const int64_t stride = qsa_list_stride(K, R);
  auto sel = nan_buffer<int32_t>(size_t(T * stride));
  auto count = nan_buffer<int32_t>(size_t(T));
  qsa_select(ctx(), dq.get(), dbk.get(), T, pos0, IH, D, R, K, sel.get(), count.get(), stride);
  const auto gs = download(sel), gc = download(count);
  const float inv_sqrt = 1.0f / std::sqrt(float(D));
  for (int64_t t = 0; t < T; t++) {
    const int64_t p = pos0 + t, nb = (p + 1) / R;
    std::vector<int32_t> want;
    if (nb <= K) {
      for (int64_t i = 0; i <= p; i++) want.push_back(int32_t(i));
    } else {
      std::vector<float> scores(static_cast<size_t>(nb));
      for (int64_t b = 0; b < nb; b++) {
        float acc = 0.0f;
        for (int64_t h = 0; h < IH; h++) acc += std::max(q[size_t((t * IH + h) * D)] * bk[size_t(b * D)], 0.0f);
        scores[size_t(b)] = acc * inv_sqrt;
      }
      auto blocks = cpu::topk_indices(scores.data(), nb, K);
      std::sort(blocks.begin(), blocks.end());
      for (auto b : blocks)
        for (int64_t r = 0; r < R; r++) want.push_back(int32_t(b * R + r));
      for (int64_t i = nb * R; i <= p; i++) want.push_back(int32_t(i));
    }
    ASSERT_EQ(gc[size_t(t)], int32_t(want.size())) << "pos " << p;
    ASSERT_EQ(std::vector<int32_t>(gs.begin() + t * stride, gs.begin() + t * stride + gc[size_t(t)]), want) << "pos " << p;
  }
}

void check_tied_selection(int64_t R, int64_t K, int64_t pos0, int64_t T) {
  check_selection(R, K, pos0, T, [](int64_t b) { return float(int64_t((b * 7919) % 5) - 2); });  // -2..2: zeros tie
}

TEST(CudaQsa, TiedScoresSelectLikeTheCpu) {
  check_tied_selection(4, 4, 1000, 30);   // about 256 blocks: crosses the CPU's partial_sort / nth_element switch
  check_tied_selection(64, 32, 3000, 5);  // the real ratio and budget
  check_tied_selection(8, 4, 10, 40);     // queries on both sides of "every block fits the budget"
  // Every score equal (all relu zeros; then all the same positive level): no bit differs anywhere in the row, on
  // both sides of the radix set's threshold.
  for (const float level : {0.0f, 3.0f}) {
    check_selection(64, 32, 3000, 2, [level](int64_t) { return level; });  // 46 blocks
    check_selection(4, 32, 1100, 2, [level](int64_t) { return level; });   // 275 blocks
  }
}

// Selections without a tie at the k-th place (the set found by its value bits, no replay): distinct levels over
// hundreds of blocks (relu zeros tie far below the budget), and equal levels at the k-th and (k-1)-th places with
// a lower (k+1)-th, where both equal blocks are chosen.
TEST(CudaQsa, DistinctAndBoundaryEqualScoresSelectLikeTheCpu) {
  // 7919 is invertible mod 1009, so the levels -300..708 are distinct for b < 1009.
  const auto distinct = [](int64_t b) { return float(int64_t((b * 7919) % 1009) - 300); };
  check_selection(4, 32, 2800, 3, distinct);  // about 700 blocks
  check_selection(4, 32, 200, 3, distinct);   // about 50 blocks
  check_selection(64, 32, 40000, 2, distinct);  // about 625 blocks at the real ratio and budget
  const auto pair = [](int64_t b) {  // 30 blocks above 1000, two at 500, then levels below 500 (with ties)
    return b < 30 ? float(1000 + (b * 7) % 30) : b < 32 ? 500.0f : float((b * 7919) % 397);
  };
  check_selection(4, 32, 2800, 3, pair);
  check_selection(4, 32, 500, 2, pair);
}

}  // namespace
}  // namespace ds4::cuda::test
