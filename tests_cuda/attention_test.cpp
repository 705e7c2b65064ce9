// attention() against cpu::attend (then times sigmoid(gate), as the model applies it), over causal ranges and
// position lists, GQA group sizes below, equal to and above a block's head count, float32 and bf16 caches (the
// CPU sees the bf16-rounded keys and values), decode (split-K) and prefill grids.
//
// Bound: both sides evaluate the same float32 softmax; the output is a convex combination of value rows, and the
// scores' rounding (about 1e-6 relative for these dot products) moves it by about 1e-6 of max|v| = 1. 2e-5
// absolute leaves a wide margin; a wrong position, head or split merge is off by O(0.1). The tensor-core kernel
// (bf16 cache, more than 8 queries) splits the queries into three bf16 terms (exact) and the probabilities into
// two (16 significant bits: at most 2^-17 of max|v|, 7.6e-6, when every rounding goes the same way).
#include "cuda_test_util.h"

#include <cmath>

#include "backend/cpu/attention.h"
#include "backend/cpu/norms.h"

namespace ds4::cuda::test {
namespace {

struct AttnCase {
  int64_t heads, kv_heads, head_dim, T;
  bool lists;      // position lists (else causal)
  int64_t cache;   // cached positions (lists) or pos0 (causal)
  int64_t stride;  // list stride = max keys per query (lists)
  bool bf16_cache, gate;
  float q_scale;   // larger scores stress the running max
};

std::string name(const AttnCase& c) {
  return "heads=" + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " hd=" + std::to_string(c.head_dim) +
         " T=" + std::to_string(c.T) + (c.lists ? " lists" : " causal") + (c.bf16_cache ? " bf16" : " f32");
}
std::ostream& operator<<(std::ostream& o, const AttnCase& c) { return o << name(c); }

class CudaAttention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(CudaAttention, MatchesCpuAttend) {
  const auto c = GetParam();
  const int64_t hd = c.head_dim, width = c.kv_heads * hd;
  const int64_t P = c.lists ? c.cache : c.cache + c.T;
  auto keys = rand_vec(size_t(P * width), -1.0f, 1.0f, 1), values = rand_vec(size_t(P * width), -1.0f, 1.0f, 2);
  if (c.bf16_cache) keys = bf16_exact(keys), values = bf16_exact(values);
  const auto q = rand_vec(size_t(c.T * c.heads * hd), -c.q_scale, c.q_scale, 3);
  const auto gate = rand_vec(size_t(c.T * c.heads * hd), -3.0f, 3.0f, 4);
  // Per query: the selected positions (ascending).
  std::vector<std::vector<int32_t>> sel(size_t(c.T));
  std::mt19937 rng(5);
  for (int64_t t = 0; t < c.T; t++) {
    if (!c.lists) {
      for (int64_t p = 0; p <= c.cache + t; p++) sel[size_t(t)].push_back(int32_t(p));
      continue;
    }
    const int64_t n = 1 + int64_t(rng() % uint32_t(c.stride));
    std::vector<int32_t> all(static_cast<size_t>(P));
    for (int64_t p = 0; p < P; p++) all[size_t(p)] = int32_t(p);
    std::shuffle(all.begin(), all.end(), rng);
    sel[size_t(t)].assign(all.begin(), all.begin() + n);
    std::sort(sel[size_t(t)].begin(), sel[size_t(t)].end());
  }
  const float scale = 1.0f / std::sqrt(float(hd));
  std::vector<float> want(q.size());
  for (int64_t t = 0; t < c.T; t++)
    cpu::attend(q.data() + t * c.heads * hd, keys.data(), values.data(), sel[size_t(t)], {c.heads, c.kv_heads, hd}, scale,
                want.data() + t * c.heads * hd);
  if (c.gate)
    for (size_t i = 0; i < want.size(); i++) want[i] *= cpu::sigmoid(gate[i]);

  std::vector<int32_t> flat(size_t(c.T * std::max<int64_t>(c.stride, 1)), -1), count(size_t(c.T));
  for (int64_t t = 0; t < c.T; t++) {
    count[size_t(t)] = int32_t(sel[size_t(t)].size());
    if (c.lists) std::copy(sel[size_t(t)].begin(), sel[size_t(t)].end(), flat.begin() + t * c.stride);
  }
  auto dq = upload(q), dgate = upload(gate);
  auto dflat = upload(flat), dcount = upload(count);
  auto dout = nan_buffer<float>(q.size());
  const KeySelection ks = c.lists ? KeySelection::lists(dflat.get(), dcount.get(), c.stride) : KeySelection::causal(c.cache, c.T);
  const AttnShape shape{c.heads, c.kv_heads, hd};
  const float* g = c.gate ? dgate.get() : nullptr;
  if (c.bf16_cache) {
    auto dk = upload(to_bf16(keys)), dv = upload(to_bf16(values));
    attention(ctx(), dq.get(), dk.get(), dv.get(), shape, c.T, ks, scale, g, dout.get());
    expect_close(download(dout), want, 0.0, 2e-5, name(c));
  } else {
    auto dk = upload(keys), dv = upload(values);
    attention(ctx(), dq.get(), dk.get(), dv.get(), shape, c.T, ks, scale, g, dout.get());
    expect_close(download(dout), want, 0.0, 2e-5, name(c));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaAttention,
    ::testing::Values(
        AttnCase{32, 2, 256, 1, true, 5000, 2112, true, true, 1.0f},   // Flash-Next decode over a QSA selection
        AttnCase{8, 2, 64, 1, true, 1000, 300, true, true, 4.0f},      // decode, split-K, sharp softmax
        AttnCase{32, 2, 256, 3, false, 700, 0, true, true, 1.0f},      // a few causal queries
        AttnCase{16, 16, 128, 7, false, 50, 0, false, false, 1.0f},    // MHA: one head per block
        AttnCase{12, 4, 128, 200, false, 0, 0, true, true, 1.0f},      // prefill from position 0
        AttnCase{6, 1, 64, 64, true, 400, 128, false, true, 2.0f},     // lists, group 6 below the block's 16
        AttnCase{40, 2, 64, 5, false, 30, 0, true, false, 1.0f},       // group 20: a full and a partial head group
        AttnCase{4, 2, 128, 1, false, 0, 0, false, true, 1.0f},        // the very first token: one key
        AttnCase{8, 1, 256, 33, true, 3000, 2112, true, false, 1.0f},  // many queries with long lists
        AttnCase{32, 2, 256, 1, true, 30000, 20000, true, true, 1.0f},  // decode: over 32 listed keys per warp
        AttnCase{16, 2, 128, 8, true, 3000, 700, true, true, 1.0f},    // a verification chunk of 8 queries
        // More than 8 queries over a bf16 cache: the tensor-core kernel.
        AttnCase{32, 2, 256, 40, true, 5000, 2112, true, true, 1.0f},  // Flash-Next prefill over QSA lists
        AttnCase{40, 2, 128, 24, false, 100, 0, true, true, 4.0f},     // group 20: a full and a partial 16; splits
        AttnCase{8, 2, 64, 50, true, 400, 130, true, false, 2.0f},     // head dim 64: two warps score
        AttnCase{16, 1, 256, 9, false, 37, 0, true, true, 1.0f}));     // 9 causal queries, split keys

}  // namespace
}  // namespace ds4::cuda::test
