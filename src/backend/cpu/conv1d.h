// Causal depthwise 1-D convolution with dilation and a carried history (the GDN short conv, dilation 1,
// and the PLE conv, dilation ngram_size). state holds the last (K-1)*dilation input rows [rows][C], zeros
// at the start of a sequence.
#pragma once
#include <cstdint>

#include "backend/cpu/norms.h"

namespace ds4::cpu {

// x [T][C]; w [C][K] (torch Conv1d weight [C, 1, K]); y [T][C] = act(conv); state updated in place.
void causal_conv1d(const float* x, int64_t T, int64_t C, const float* w, int64_t K, int64_t dilation, float* state,
                   float* y, Act act);

}  // namespace ds4::cpu
