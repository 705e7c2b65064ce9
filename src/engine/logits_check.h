// Step 1 of SAMPLING.md: a row with NaN, +inf, or nothing but -inf is not a distribution. -inf alone is a
// masked token and is legal.
#pragma once
#include <cstdint>
#include <span>

#include "models/model.h"

namespace ds4::engine {

// Throws ds4::Error(InvalidLogits) naming the decode position (when >= 0) and the first bad index.
void validate_logits(std::span<const float> logits, int64_t position_for_errors = -1);

// The same check on a pick the model made (Model::forward_greedy) from a row of `vocab` logits: throws what
// validate_logits would throw for that row; returns the token otherwise.
int32_t check_greedy_pick(const GreedyPick& pick, size_t vocab, int64_t position_for_errors = -1);

}  // namespace ds4::engine
