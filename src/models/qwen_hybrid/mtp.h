// The MTP draft head's forward (docs/mtp.md): for each pair (h_s, x_{s+1}) it produces the normalised state
// whose lm_head logits predict x_{s+2}. It attends causally over its own cache of earlier pairs.
#pragma once
#include <cstdint>

#include "backend/cpu/rope.h"
#include "models/qwen_hybrid/state.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

// h [T][H]: the main model's final hidden states; next_tokens [T]: x_{s+1} for each; pos0: pairs already in
// the head's cache (= the position of the first pair). out [T][H], ready for lm_head.
void mtp_forward(const MtpWeights& w, const Config& c, const cpu::RopeTable& rope, const Mat& embed, AttnState& s,
                 const float* h, const int32_t* next_tokens, int64_t T, int64_t pos0, float* out);

}  // namespace ds4::qwen
