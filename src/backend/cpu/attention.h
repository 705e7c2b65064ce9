// Softmax attention of one query token over a chosen, ascending set of cached positions (GQA: query head h
// reads KV head h / (heads / kv_heads)).
#pragma once
#include <cstdint>
#include <vector>

namespace ds4::cpu {

struct AttnShape {
  int64_t heads, kv_heads, head_dim;
};

// q [heads, head_dim]; keys/values [positions][kv_heads * head_dim]; out [heads, head_dim].
void attend(const float* q, const float* keys, const float* values, const std::vector<int32_t>& positions,
            AttnShape s, float scale, float* out);

}  // namespace ds4::cpu
