// Sparse MoE block: softmax router with top-k (renormalised when norm_topk_prob), SwiGLU experts that only
// the routed tokens pass through, and the shared expert scaled by sigmoid(shared_expert_gate · x).
#pragma once
#include <cstdint>

#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

void moe_forward(const MoeWeights& w, const Config& c, const float* x, int64_t T, float* out);

}  // namespace ds4::qwen
