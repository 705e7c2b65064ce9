// QSA sparse attention: gated GQA attention whose keys are limited, per query, to the blocks a lightweight
// indexer scores highest (mean-pooled block keys, relu-summed head scores) plus the incomplete tail block.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/rope.h"
#include "models/qwen_hybrid/state.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

// Appends the chunk's indexer keys to the state and returns, for each query of the chunk (absolute
// positions pos0..pos0+T-1), the ascending positions it may attend to.
std::vector<std::vector<int32_t>> qsa_select(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope,
                                             AttnState& s, const float* x, int64_t T, int64_t pos0);

// QSA attention: the indexer's selection, then gated_attention over it.
void attention_forward(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope, AttnState& s,
                       const float* x, int64_t T, int64_t pos0, float* out);

// Gated GQA attention (q_proj yields query and output gate per head, q_norm/k_norm, partial RoPE), appending
// the chunk's keys and values to the state; query t reads the positions selected[t]. Uses w's q, k, v, o,
// q_norm and k_norm only.
void gated_attention(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope, AttnState& s, const float* x,
                     int64_t T, int64_t pos0, const std::vector<std::vector<int32_t>>& selected, float* out);

// Every earlier position and itself, for each query of a chunk (plain causal attention).
std::vector<std::vector<int32_t>> causal_selection(int64_t T, int64_t pos0);

}  // namespace ds4::qwen
