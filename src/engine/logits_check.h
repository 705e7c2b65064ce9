// Step 1 of SAMPLING.md: a row with NaN, +inf, or nothing but -inf is not a distribution. -inf alone is a
// masked token and is legal.
#pragma once
#include <cstdint>
#include <span>

namespace ds4::engine {

// Throws ds4::Error(InvalidLogits) naming the decode position (when >= 0) and the first bad index.
void validate_logits(std::span<const float> logits, int64_t position_for_errors = -1);

}  // namespace ds4::engine
