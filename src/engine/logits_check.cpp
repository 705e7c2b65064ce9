#include "engine/logits_check.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace ds4::engine {
namespace {

std::string where(int64_t position) {
  return position >= 0 ? "invalid logits at position " + std::to_string(position) : std::string("invalid logits");
}

}  // namespace

void validate_logits(std::span<const float> logits, int64_t position_for_errors) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  bool any_finite = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v)) {
      throw Error(ErrorKind::InvalidLogits, where(position_for_errors) + ": logit[" + std::to_string(i) + "] is NaN");
    }
    if (v == kInf) {
      throw Error(ErrorKind::InvalidLogits, where(position_for_errors) + ": logit[" + std::to_string(i) + "] is +inf");
    }
    any_finite |= v != -kInf;
  }
  if (!any_finite) {
    throw Error(ErrorKind::InvalidLogits, where(position_for_errors) + ": all " + std::to_string(logits.size()) +
                                              " logits are -inf (an empty row counts as all -inf)");
  }
}

}  // namespace ds4::engine
