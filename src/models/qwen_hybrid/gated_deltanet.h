// Gated DeltaNet layer: projections, short causal conv with carried state, the gated delta rule (chunked for
// prefill, recurrent for single-token decode), gated RMSNorm and the output projection.
#pragma once
#include <cstdint>
#include <vector>

#include "models/qwen_hybrid/state.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

// Chunks up to this many tokens use the recurrent form of the delta rule.
constexpr int64_t kRecurrentMaxTokens = 4;

void init_gdn_state(GdnState& s, const Config& c);

// The step between the conv and the delta rule: splits conv_out [T][2*KH*dk + VH*dv] into q, k (key head
// h / (VH/KH) repeated for value head h) and v, L2-normalises q and k (eps 1e-6), scales q by 1/sqrt(dk);
// beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias). a, b [T][VH]; A_log, dt_bias [VH].
// Outputs q, k [T][VH][dk], v [T][VH][dv], g, beta [T][VH] (resized). The CUDA op gdn_prepare mirrors it.
void gdn_prepare(const float* conv_out, const float* a, const float* b, const float* A_log, const float* dt_bias,
                 int64_t T, int64_t KH, int64_t VH, int64_t dk, int64_t dv, std::vector<float>& q,
                 std::vector<float>& k, std::vector<float>& v, std::vector<float>& g, std::vector<float>& beta);
void gdn_forward(const GdnWeights& w, const Config& c, GdnState& s, const float* x, int64_t T, float* out);

}  // namespace ds4::qwen
