// The qwen4_exp weights on the GPU, in bfloat16. Projections that read the same input are stored as one
// matrix (their rows concatenated), so a decode step reads them in one GEMV launch; routed experts are stacked
// [E][rows][cols] so that moe_experts reads only the selected ones through device-side indices.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/ops.h"
#include "models/qwen_hybrid/config.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::cuda {

struct DMat {
  DeviceBuffer<bf16> w;
  int64_t rows = 0, cols = 0;
  const bf16* p() const { return w.get(); }
  const bf16* row(int64_t r) const { return w.get() + r * cols; }
};

struct DHyperConn {
  DMat norm, down_inject, up;  // down_inject: [lowrank down | inject] rows over the normed streams
  bool has_inject = false;
};

struct DGdn {
  DMat proj;  // [qkv (conv_dim) | z (vd) | b (VH) | a (VH)] x hidden
  DMat conv, norm, out;
  DeviceBuffer<float> a_log, dt_bias;
};

struct DAttn {
  DMat proj;  // [q and gate interleaved per head (NH * 2 * HD) | k (KVH * HD) | v (KVH * HD) | indexer (IH + 1) * D]
  DMat o, q_norm, k_norm, idx_q_norm, idx_k_norm;
  bool has_indexer = false;
};

struct DMoe {
  DMat proj;  // [router (E) | shared expert gate logit (1) | shared gate (SI) | shared up (SI)] x hidden
  DMat gate, up, down;  // routed experts stacked: [E * I][H], [E * I][H], [E * H][I]
  DMat sh_down;
};

struct DPle {
  DMat table;
  DMat kv;  // [key (hc_count * H) | value (H)] x ple_embed_dim: both projections of the embedding in one pass
  DMat norm_key, norm_query, norm_conv, conv;
  PleHash hash;
  int64_t heads = 0, head_dim = 0;
};

struct DLayer {
  qwen::LayerType type = qwen::LayerType::LinearAttention;
  DHyperConn attn_hc, mlp_hc;
  DGdn gdn;
  DAttn attn;
  DMoe moe;
  std::optional<DPle> ple;
};

// The MTP draft head (docs/mtp.md): norms, fc over [normed embedding; normed hidden], one full-attention MoE
// layer (no indexer), a final norm; embed_tokens and lm_head are the main model's.
struct DMtp {
  DMat pre_norm_embed, pre_norm_hidden, fc, input_norm, post_norm, norm;
  DAttn attn;
  DMoe moe;
};

struct QwenDeviceWeights {
  DMat embed, lm_head;  // lm_head empty when tied
  std::vector<DLayer> layers;
  DHyperConn final_mixer;
  std::optional<DMtp> mtp;  // when the checkpoint has the head (never for random weights)
  int64_t bytes = 0;  // device memory the weights take
  const DMat& head() const { return lm_head.rows ? lm_head : embed; }
};

// The checkpoint's weights (host float32, as the CPU backend loads them) rounded to bfloat16 on the device.
QwenDeviceWeights upload_qwen_weights(Context& ctx, const qwen::Config& c, const qwen::Weights& w);
// Random weights of the config's shapes, generated on the device from a seed (no host copy): for timing
// full-size shapes. The scales follow the CPU's random weights (1.7 / sqrt(fan-in); 0.1 for norms and gates).
QwenDeviceWeights random_qwen_weights(Context& ctx, const qwen::Config& c, uint64_t seed);

}  // namespace ds4::cuda
