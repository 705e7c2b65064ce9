#include "models/qwen_hybrid/sparse_attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"
#include "backend/cpu/topk.h"

namespace ds4::qwen {

std::vector<std::vector<int32_t>> qsa_select(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope,
                                             AttnState& s, const float* x, int64_t T, int64_t pos0) {
  const int64_t H = c.hidden_size, IH = c.idx_heads, D = c.idx_head_dim, R = c.idx_ratio;
  const int64_t block_topk = c.idx_budget / c.idx_ratio;
  const float eps = float(c.rms_eps);
  std::vector<float> qk(static_cast<size_t>(T * (IH + 1) * D));
  cpu::linear(x, T, H, w.idx_qk.p(), (IH + 1) * D, qk.data());
  std::vector<float> cos(static_cast<size_t>(c.rotary_dim)), sin(static_cast<size_t>(c.rotary_dim));
  std::vector<float> q(static_cast<size_t>(T * IH * D));
  for (int64_t t = 0; t < T; t++) {
    const float* row = qk.data() + t * (IH + 1) * D;
    cpu::rms_norm_offset(row, w.idx_q_norm.p(), q.data() + t * IH * D, IH, D, D, eps);
    const int64_t p = pos0 + t;
    rope.cos_sin({p, p, p}, cos.data(), sin.data());
    cpu::apply_rope(q.data() + t * IH * D, IH, D, c.rotary_dim, cos.data(), sin.data());
    s.index_keys.insert(s.index_keys.end(), row + IH * D, row + (IH + 1) * D);
  }
  // Pool every block that is now complete: mean of raw keys, k_layernorm, RoPE at the block's first position.
  const int64_t total = pos0 + T;
  std::vector<float> mean(static_cast<size_t>(D));
  for (int64_t b = int64_t(s.block_keys.size()) / D; (b + 1) * R <= total; b++) {
    std::fill(mean.begin(), mean.end(), 0.0f);
    for (int64_t r = 0; r < R; r++)
      for (int64_t e = 0; e < D; e++) mean[size_t(e)] += s.index_keys[size_t((b * R + r) * D + e)];
    for (auto& m : mean) m /= float(R);
    std::vector<float> bk(static_cast<size_t>(D));
    cpu::rms_norm_offset(mean.data(), w.idx_k_norm.p(), bk.data(), 1, D, D, eps);
    rope.cos_sin({b * R, b * R, b * R}, cos.data(), sin.data());
    cpu::apply_rope(bk.data(), 1, D, c.rotary_dim, cos.data(), sin.data());
    s.block_keys.insert(s.block_keys.end(), bk.begin(), bk.end());
  }
  std::vector<std::vector<int32_t>> sel(static_cast<size_t>(T));
  const float inv_sqrt = 1.0f / std::sqrt(float(D));
  for (int64_t t = 0; t < T; t++) {
    const int64_t p = pos0 + t, nblocks = (p + 1) / R;
    auto& out = sel[size_t(t)];
    if (nblocks <= block_topk) {  // every block fits the budget: plain causal attention
      for (int64_t i = 0; i <= p; i++) out.push_back(int32_t(i));
      continue;
    }
    std::vector<float> scores(static_cast<size_t>(nblocks));
    for (int64_t b = 0; b < nblocks; b++) {
      float acc = 0.0f;
      for (int64_t h = 0; h < IH; h++) {
        float d = 0.0f;
        for (int64_t e = 0; e < D; e++) d += q[size_t((t * IH + h) * D + e)] * s.block_keys[size_t(b * D + e)];
        acc += std::max(d, 0.0f);
      }
      scores[size_t(b)] = acc * inv_sqrt;
    }
    auto blocks = cpu::topk_indices(scores.data(), nblocks, block_topk);
    std::sort(blocks.begin(), blocks.end());
    for (auto b : blocks)
      for (int64_t r = 0; r < R; r++) out.push_back(int32_t(b * R + r));
    for (int64_t i = nblocks * R; i <= p; i++) out.push_back(int32_t(i));
  }
  return sel;
}

std::vector<std::vector<int32_t>> causal_selection(int64_t T, int64_t pos0) {
  std::vector<std::vector<int32_t>> sel(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i <= pos0 + t; i++) sel[size_t(t)].push_back(int32_t(i));
  return sel;
}

void attention_forward(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope, AttnState& s,
                       const float* x, int64_t T, int64_t pos0, float* out) {
  gated_attention(w, c, rope, s, x, T, pos0, qsa_select(w, c, rope, s, x, T, pos0), out);
}

void gated_attention(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope, AttnState& s, const float* x,
                     int64_t T, int64_t pos0, const std::vector<std::vector<int32_t>>& selected, float* out) {
  const int64_t H = c.hidden_size, NH = c.num_heads, KVH = c.num_kv_heads, HD = c.head_dim;
  const float eps = float(c.rms_eps);
  std::vector<float> qg(static_cast<size_t>(T * NH * 2 * HD)), k(static_cast<size_t>(T * KVH * HD)), v(static_cast<size_t>(T * KVH * HD));
  cpu::linear(x, T, H, w.q.p(), NH * 2 * HD, qg.data());
  cpu::linear(x, T, H, w.k.p(), KVH * HD, k.data());
  cpu::linear(x, T, H, w.v.p(), KVH * HD, v.data());
  // q_proj interleaves per head: [query (head_dim), gate (head_dim)].
  std::vector<float> q(static_cast<size_t>(T * NH * HD)), gate(static_cast<size_t>(T * NH * HD));
  for (int64_t t = 0; t < T; t++)
    for (int64_t h = 0; h < NH; h++)
      for (int64_t e = 0; e < HD; e++) {
        q[size_t((t * NH + h) * HD + e)] = qg[size_t((t * NH + h) * 2 * HD + e)];
        gate[size_t((t * NH + h) * HD + e)] = qg[size_t((t * NH + h) * 2 * HD + HD + e)];
      }
  cpu::rms_norm_offset(q.data(), w.q_norm.p(), q.data(), T * NH, HD, HD, eps);
  cpu::rms_norm_offset(k.data(), w.k_norm.p(), k.data(), T * KVH, HD, HD, eps);
  std::vector<float> cos(static_cast<size_t>(c.rotary_dim)), sin(static_cast<size_t>(c.rotary_dim));
  for (int64_t t = 0; t < T; t++) {
    const int64_t p = pos0 + t;
    rope.cos_sin({p, p, p}, cos.data(), sin.data());
    cpu::apply_rope(q.data() + t * NH * HD, NH, HD, c.rotary_dim, cos.data(), sin.data());
    cpu::apply_rope(k.data() + t * KVH * HD, KVH, HD, c.rotary_dim, cos.data(), sin.data());
  }
  s.keys.insert(s.keys.end(), k.begin(), k.end());
  s.values.insert(s.values.end(), v.begin(), v.end());
  std::vector<float> attn(static_cast<size_t>(T * NH * HD));
  const float scale = 1.0f / std::sqrt(float(HD));
#pragma omp parallel for schedule(dynamic) if (T > 1 && T * int64_t(s.keys.size()) > 65536)
  for (int64_t t = 0; t < T; t++)
    cpu::attend(q.data() + t * NH * HD, s.keys.data(), s.values.data(), selected[size_t(t)], {NH, KVH, HD}, scale,
                attn.data() + t * NH * HD);
  for (size_t i = 0; i < attn.size(); i++) attn[i] *= cpu::sigmoid(gate[i]);
  cpu::linear(attn.data(), T, NH * HD, w.o.p(), H, out);
}

}  // namespace ds4::qwen
