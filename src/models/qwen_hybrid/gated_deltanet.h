// Gated DeltaNet layer: projections, short causal conv with carried state, the gated delta rule (chunked for
// prefill, recurrent for single-token decode), gated RMSNorm and the output projection.
#pragma once
#include <cstdint>

#include "models/qwen_hybrid/state.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

// Chunks up to this many tokens use the recurrent form of the delta rule.
constexpr int64_t kRecurrentMaxTokens = 4;

void init_gdn_state(GdnState& s, const Config& c);
void gdn_forward(const GdnWeights& w, const Config& c, GdnState& s, const float* x, int64_t T, float* out);

}  // namespace ds4::qwen
