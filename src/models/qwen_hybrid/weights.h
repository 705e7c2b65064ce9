// The qwen4_exp weights in float32, by block, with every shape checked against the config at load.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "models/qwen_hybrid/config.h"

namespace ds4::qwen {

struct Mat {
  std::vector<float> v;
  std::vector<int64_t> shape;
  const float* p() const { return v.data(); }
};

struct HyperConnWeights {  // GatedResidual: grouped norm, low-rank input mixer, block inject (absent on the final mixer)
  Mat norm, down, up, inject;
  bool has_inject = false;
};

struct GdnWeights {
  Mat in_qkv, in_z, in_b, in_a, conv, a_log, dt_bias, norm, out;
};

struct AttnWeights {
  Mat q, k, v, o, q_norm, k_norm;
  Mat idx_qk, idx_q_norm, idx_k_norm;  // QSA indexer
};

struct MoeWeights {
  Mat router;
  std::vector<Mat> gate, up, down;  // per expert
  Mat sh_gate, sh_up, sh_down, sh_gate_w;
};

struct PleWeights {
  int ple_index = 0;
  Mat table;  // [padded n-gram vocab, ple_embed_dim / ngram_heads], the checkpoint's shards concatenated
  std::vector<int64_t> multipliers, head_sizes, head_offsets;
  Mat key, value, norm_key, norm_query, norm_conv, conv;
};

struct LayerWeights {
  LayerType type;
  HyperConnWeights attn_hc, mlp_hc;
  GdnWeights gdn;
  AttnWeights attn;
  MoeWeights moe;
  std::optional<PleWeights> ple;
};

// The MTP draft head (docs/mtp.md): fc over [normed embedding of x_{t+1}; normed h_t], one pre-norm
// full-attention MoE layer, a final norm; it shares embed_tokens and lm_head with the main model.
struct MtpWeights {
  Mat pre_norm_embed, pre_norm_hidden, fc, input_norm, post_norm, norm;
  AttnWeights attn;  // q, k, v, o, q_norm, k_norm (no indexer)
  MoeWeights moe;
};

struct Weights {
  Mat embed, lm_head;  // lm_head aliases embed when tied (left empty)
  std::optional<MtpWeights> mtp;
  std::string mtp_note;  // why mtp.* tensors present in the checkpoint are not used, if so
  std::vector<LayerWeights> layers;
  HyperConnWeights final_mixer;
  std::vector<std::string> unused;  // checkpoint tensors the text model does not read
};

Weights load_weights(const Config& c, const TensorStore& store);
// Random weights of the config's shapes (benchmarks time real shapes without checkpoint files).
Weights random_weights(const Config& c, uint64_t seed);

// PLE hashing constants, derived exactly as the reference derives them (splitmix64 multipliers, per-head
// prime vocabularies). Exposed for tests.
std::vector<int64_t> ple_layer_multipliers(int64_t vocab_size, int64_t ngram_size, int64_t ple_layer_index, int64_t seed);
std::vector<int64_t> ple_head_vocab_sizes(int64_t base, int64_t heads, int64_t ple_layer_index);

}  // namespace ds4::qwen
