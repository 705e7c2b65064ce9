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

void attention_forward(const AttnWeights& w, const Config& c, const cpu::RopeTable& rope, AttnState& s,
                       const float* x, int64_t T, int64_t pos0, float* out);

}  // namespace ds4::qwen
