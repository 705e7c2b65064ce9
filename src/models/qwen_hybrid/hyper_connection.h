// Hyper-connections: the residual stream is hc_count copies of the hidden state. Before a block, a grouped
// RMSNorm and a low-rank sigmoid mixer fold the streams into the block input; after it, the block output is
// injected into every stream with its own weight 2·sigmoid(·).
#pragma once
#include <cstdint>

#include "models/qwen_hybrid/config.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

// x [T][hc*H] -> mixed [T][H]; inject [T][hc] when the weights have a block inject (else may be null).
void hc_mix(const HyperConnWeights& w, const Config& c, const float* x, int64_t T, float* mixed, float* inject);

// x[t][s][:] += out[t][:] * inject[t][s]
void hc_inject(float* x, const float* out, const float* inject, int64_t T, const Config& c);

}  // namespace ds4::qwen
