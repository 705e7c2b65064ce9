#include "models/qwen_hybrid/decode_bytes.h"

namespace ds4::qwen {

int64_t qsa_selected_keys(const Config& c, int64_t p) {
  if (c.idx_ratio <= 0) return p + 1;  // no indexer: causal attention
  const int64_t R = c.idx_ratio, blocks = (p + 1) / R, topk = c.idx_budget / c.idx_ratio;
  return blocks <= topk ? p + 1 : topk * R + (p + 1 - blocks * R);
}

double decode_state_bytes(const Config& c, int64_t p, StateElementBytes e) {
  double bytes = 0;
  const double conv_dim = double(2 * c.lin_k_heads * c.lin_k_dim + c.lin_v_heads * c.lin_v_dim);
  const double recurrent = double(c.lin_v_heads * c.lin_k_dim * c.lin_v_dim);
  const double kv_row = double(2 * c.num_kv_heads * c.head_dim), D = double(c.idx_head_dim);
  for (int64_t i = 0; i < c.num_layers; i++) {
    if (c.layer_types[size_t(i)] == LayerType::LinearAttention) {
      bytes += (2 * recurrent + double(c.conv_kernel) * conv_dim) * e.state;
      continue;
    }
    bytes += double(qsa_selected_keys(c, p) + 1) * kv_row * e.cache;  // the selection read, the token's row written
    if (c.idx_ratio <= 0) continue;
    const int64_t R = c.idx_ratio, blocks = (p + 1) / R;
    bytes += D * e.state;  // the raw indexer key written
    if (blocks > c.idx_budget / R) bytes += double(blocks) * D * e.state;
    if ((p + 1) % R == 0) bytes += double(R + 1) * D * e.state;
  }
  return bytes;
}

}  // namespace ds4::qwen
