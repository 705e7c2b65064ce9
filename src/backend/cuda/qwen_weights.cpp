#include "backend/cuda/qwen_weights.h"

#include <cmath>

#include "backend/cuda/random_fill.h"

namespace ds4::cuda {
namespace {

// Fills the device matrices either from the host weights or from the seed. Every part of a (possibly fused)
// matrix is named by its host Mat (null when random) and its fan-in for the random scale.
class Builder {
 public:
  Builder(Context& ctx, const qwen::Weights* host, uint64_t seed) : ctx_(ctx), host_(host), seed_(seed) {}

  bool random() const { return host_ == nullptr; }

  DMat alloc(int64_t rows, int64_t cols) {
    DMat m;
    m.rows = rows;
    m.cols = cols;
    m.w = DeviceBuffer<bf16>(size_t(rows * cols));
    bytes_ += int64_t(m.w.bytes());
    return m;
  }

  // Rows [row0, row0 + rows) of dst from `src` (host float32 of rows x dst.cols elements), or random.
  void fill(DMat& dst, int64_t row0, const qwen::Mat* src, int64_t rows, float random_scale) {
    const int64_t n = rows * dst.cols;
    bf16* out = dst.w.get() + row0 * dst.cols;
    if (random()) {
      fill_uniform_bf16(ctx_, out, n, next_stream(), random_scale);
      return;
    }
    if (!src || int64_t(src->v.size()) != n)
      throw Error(ErrorKind::Shape, "CUDA weights: a host tensor has " + std::to_string(src ? src->v.size() : 0) +
                                        " elements where " + std::to_string(n) + " were expected");
    ctx_.synchronize();  // earlier fills may still read the staging buffer's previous contents
    staging_ = to_bf16(src->v);
    DS4_CUDA_CHECK(cudaMemcpyAsync(out, staging_.data(), size_t(n) * sizeof(bf16), cudaMemcpyHostToDevice,
                                   ctx_.stream()));
  }

  DMat mat(const qwen::Mat* src, int64_t rows, int64_t cols, float random_scale) {
    DMat m = alloc(rows, cols);
    fill(m, 0, src, rows, random_scale);
    return m;
  }
  DMat proj(const qwen::Mat* src, int64_t rows, int64_t cols) { return mat(src, rows, cols, fan_in(cols)); }
  DMat norm(const qwen::Mat* src, int64_t n) { return mat(src, 1, n, 0.1f); }

  DeviceBuffer<float> f32(const qwen::Mat* src, int64_t n, float random_scale) {
    DeviceBuffer<float> b(static_cast<size_t>(n));
    bytes_ += int64_t(b.bytes());
    if (random()) {
      fill_uniform_f32(ctx_, b.get(), n, next_stream(), random_scale);
    } else {
      if (!src || int64_t(src->v.size()) != n) throw Error(ErrorKind::Shape, "CUDA weights: a float vector's size");
      ctx_.synchronize();
      b.upload(src->v);
    }
    return b;
  }

  static float fan_in(int64_t cols) { return 1.7f / std::sqrt(float(cols)); }
  int64_t bytes() const { return bytes_; }
  void finish() { ctx_.synchronize(); }

 private:
  uint64_t next_stream() { return seed_ * 0x100000001b3ull + 0x51ed270b27d1ull * ++tensor_; }
  Context& ctx_;
  const qwen::Weights* host_;
  uint64_t seed_, tensor_ = 0;
  std::vector<bf16> staging_;
  int64_t bytes_ = 0;
};

DHyperConn build_hc(Builder& b, const qwen::HyperConnWeights* h, const qwen::Config& c, bool inject) {
  const int64_t D = c.hc_count * c.hidden_size, R = c.hc_lowrank, S = c.hc_count;
  DHyperConn d;
  d.has_inject = inject;
  d.norm = b.norm(h ? &h->norm : nullptr, D);
  d.down_inject = b.alloc(R + (inject ? S : 0), D);
  b.fill(d.down_inject, 0, h ? &h->down : nullptr, R, Builder::fan_in(D));
  if (inject) b.fill(d.down_inject, R, h ? &h->inject : nullptr, S, Builder::fan_in(D));
  d.up = b.proj(h ? &h->up : nullptr, D, R);
  return d;
}

DMoe build_moe(Builder& b, const qwen::MoeWeights* m, const qwen::Config& c) {
  const int64_t H = c.hidden_size, E = c.num_experts, I = c.moe_inter, SI = c.shared_inter;
  DMoe d;
  d.proj = b.alloc(E + 1 + 2 * SI, H);
  const float s = Builder::fan_in(H);
  b.fill(d.proj, 0, m ? &m->router : nullptr, E, s);
  b.fill(d.proj, E, m ? &m->sh_gate_w : nullptr, 1, s);
  b.fill(d.proj, E + 1, m ? &m->sh_gate : nullptr, SI, s);
  b.fill(d.proj, E + 1 + SI, m ? &m->sh_up : nullptr, SI, s);
  d.gate = b.alloc(E * I, H);
  d.up = b.alloc(E * I, H);
  d.down = b.alloc(E * H, I);
  if (b.random()) {
    b.fill(d.gate, 0, nullptr, E * I, s);
    b.fill(d.up, 0, nullptr, E * I, s);
    b.fill(d.down, 0, nullptr, E * H, Builder::fan_in(I));
  } else {
    for (int64_t e = 0; e < E; e++) {
      b.fill(d.gate, e * I, &m->gate[size_t(e)], I, s);
      b.fill(d.up, e * I, &m->up[size_t(e)], I, s);
      b.fill(d.down, e * H, &m->down[size_t(e)], H, s);
    }
  }
  d.sh_down = b.proj(m ? &m->sh_down : nullptr, H, SI);
  return d;
}

DGdn build_gdn(Builder& b, const qwen::GdnWeights* g, const qwen::Config& c) {
  const int64_t H = c.hidden_size, VH = c.lin_v_heads, kd = c.lin_k_heads * c.lin_k_dim, vd = VH * c.lin_v_dim;
  const int64_t conv = 2 * kd + vd;
  DGdn d;
  d.proj = b.alloc(conv + vd + 2 * VH, H);
  const float s = Builder::fan_in(H);
  b.fill(d.proj, 0, g ? &g->in_qkv : nullptr, conv, s);
  b.fill(d.proj, conv, g ? &g->in_z : nullptr, vd, s);
  b.fill(d.proj, conv + vd, g ? &g->in_b : nullptr, VH, s);
  b.fill(d.proj, conv + vd + VH, g ? &g->in_a : nullptr, VH, s);
  d.conv = b.proj(g ? &g->conv : nullptr, conv, c.conv_kernel);
  d.a_log = b.f32(g ? &g->a_log : nullptr, VH, 0.1f);
  d.dt_bias = b.f32(g ? &g->dt_bias : nullptr, VH, 0.1f);
  d.norm = b.norm(g ? &g->norm : nullptr, c.lin_v_dim);
  d.out = b.proj(g ? &g->out : nullptr, H, vd);
  return d;
}

DAttn build_attn(Builder& b, const qwen::AttnWeights* a, const qwen::Config& c, bool indexer) {
  const int64_t H = c.hidden_size, NH = c.num_heads, KVH = c.num_kv_heads, HD = c.head_dim;
  const int64_t idx = indexer ? (c.idx_heads + 1) * c.idx_head_dim : 0;
  DAttn d;
  d.has_indexer = indexer;
  d.proj = b.alloc(NH * 2 * HD + 2 * KVH * HD + idx, H);
  const float s = Builder::fan_in(H);
  b.fill(d.proj, 0, a ? &a->q : nullptr, NH * 2 * HD, s);
  b.fill(d.proj, NH * 2 * HD, a ? &a->k : nullptr, KVH * HD, s);
  b.fill(d.proj, NH * 2 * HD + KVH * HD, a ? &a->v : nullptr, KVH * HD, s);
  if (indexer) b.fill(d.proj, NH * 2 * HD + 2 * KVH * HD, a ? &a->idx_qk : nullptr, idx, s);
  d.o = b.proj(a ? &a->o : nullptr, H, NH * HD);
  d.q_norm = b.norm(a ? &a->q_norm : nullptr, HD);
  d.k_norm = b.norm(a ? &a->k_norm : nullptr, HD);
  if (indexer) {
    d.idx_q_norm = b.norm(a ? &a->idx_q_norm : nullptr, c.idx_head_dim);
    d.idx_k_norm = b.norm(a ? &a->idx_k_norm : nullptr, c.idx_head_dim);
  }
  return d;
}

DPle build_ple(Builder& b, const qwen::PleWeights* p, const qwen::Config& c, int ple_index) {
  const int64_t H = c.hidden_size, D = c.hc_count * H, E = c.ple_embed_dim;
  DPle d;
  d.heads = (c.ngram_size - 1) * c.heads_per_ngram;
  d.head_dim = E / d.heads;
  std::vector<int64_t> multipliers, sizes, offsets;
  if (p) {
    multipliers = p->multipliers, sizes = p->head_sizes, offsets = p->head_offsets;
  } else {
    multipliers = qwen::ple_layer_multipliers(c.vocab_size, c.ngram_size, ple_index, c.seed);
    sizes = qwen::ple_head_vocab_sizes(c.ngram_vocab_base, d.heads, ple_index);
    int64_t total = 0;
    for (auto s : sizes) offsets.push_back(total), total += s;
  }
  d.hash = PleHash::make(c.ngram_size, c.heads_per_ngram, c.eos_for_ple(), multipliers, sizes, offsets);
  int64_t rows = 0;
  for (auto s : sizes) rows += s;
  rows = (rows + c.ngram_divisor - 1) / c.ngram_divisor * c.ngram_divisor;
  d.table = b.mat(p ? &p->table : nullptr, rows, d.head_dim, 1.0f);
  d.kv = b.alloc(D + H, E);
  b.fill(d.kv, 0, p ? &p->key : nullptr, D, Builder::fan_in(E));
  b.fill(d.kv, D, p ? &p->value : nullptr, H, Builder::fan_in(E));
  d.norm_key = b.norm(p ? &p->norm_key : nullptr, D);
  d.norm_query = b.norm(p ? &p->norm_query : nullptr, D);
  d.norm_conv = b.norm(p ? &p->norm_conv : nullptr, D);
  d.conv = b.proj(p ? &p->conv : nullptr, D, c.ple_conv_kernel);
  return d;
}

QwenDeviceWeights build(Context& ctx, const qwen::Config& c, const qwen::Weights* w, uint64_t seed) {
  Builder b(ctx, w, seed);
  QwenDeviceWeights d;
  const int64_t H = c.hidden_size, V = c.vocab_size;
  d.embed = b.mat(w ? &w->embed : nullptr, V, H, 1.0f);
  if (!c.tie_word_embeddings) d.lm_head = b.proj(w ? &w->lm_head : nullptr, V, H);
  for (int64_t i = 0; i < c.num_layers; i++) {
    const qwen::LayerWeights* lw = w ? &w->layers[size_t(i)] : nullptr;
    DLayer l;
    l.type = c.layer_types[size_t(i)];
    l.attn_hc = build_hc(b, lw ? &lw->attn_hc : nullptr, c, true);
    l.mlp_hc = build_hc(b, lw ? &lw->mlp_hc : nullptr, c, true);
    if (l.type == qwen::LayerType::LinearAttention)
      l.gdn = build_gdn(b, lw ? &lw->gdn : nullptr, c);
    else
      l.attn = build_attn(b, lw ? &lw->attn : nullptr, c, true);
    l.moe = build_moe(b, lw ? &lw->moe : nullptr, c);
    if (const int pi = c.ple_index(int(i)); pi >= 0) {
      if (lw && !lw->ple) throw Error(ErrorKind::Internal, "CUDA weights: PLE layer without PLE weights");
      l.ple = build_ple(b, lw ? &*lw->ple : nullptr, c, pi);
    }
    d.layers.push_back(std::move(l));
  }
  d.final_mixer = build_hc(b, w ? &w->final_mixer : nullptr, c, false);
  if (w && w->mtp) {
    const qwen::MtpWeights& m = *w->mtp;
    const int64_t H = c.hidden_size;
    DMtp t;
    t.pre_norm_embed = b.norm(&m.pre_norm_embed, H);
    t.pre_norm_hidden = b.norm(&m.pre_norm_hidden, H);
    t.fc = b.proj(&m.fc, H, 2 * H);
    t.input_norm = b.norm(&m.input_norm, H);
    t.post_norm = b.norm(&m.post_norm, H);
    t.norm = b.norm(&m.norm, H);
    t.attn = build_attn(b, &m.attn, c, false);
    t.moe = build_moe(b, &m.moe, c);
    d.mtp = std::move(t);
  }
  b.finish();
  d.bytes = b.bytes();
  return d;
}

}  // namespace

QwenDeviceWeights upload_qwen_weights(Context& ctx, const qwen::Config& c, const qwen::Weights& w) {
  return build(ctx, c, &w, 0);
}

QwenDeviceWeights random_qwen_weights(Context& ctx, const qwen::Config& c, uint64_t seed) {
  return build(ctx, c, nullptr, seed);
}

}  // namespace ds4::cuda
