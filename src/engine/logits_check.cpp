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

[[noreturn]] void bad_value(int64_t position, size_t index, const char* what) {
  throw Error(ErrorKind::InvalidLogits, where(position) + ": logit[" + std::to_string(index) + "] is " + what);
}

[[noreturn]] void all_neg_inf(int64_t position, size_t size) {
  throw Error(ErrorKind::InvalidLogits, where(position) + ": all " + std::to_string(size) +
                                            " logits are -inf (an empty row counts as all -inf)");
}

}  // namespace

void validate_logits(std::span<const float> logits, int64_t position_for_errors) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  bool any_finite = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v)) bad_value(position_for_errors, i, "NaN");
    if (v == kInf) bad_value(position_for_errors, i, "+inf");
    any_finite |= v != -kInf;
  }
  if (!any_finite) all_neg_inf(position_for_errors, logits.size());
}

int32_t check_greedy_pick(const GreedyPick& pick, size_t vocab, int64_t position_for_errors) {
  switch (pick.row) {
    case GreedyPick::Row::NaN: bad_value(position_for_errors, size_t(pick.index), "NaN");
    case GreedyPick::Row::PosInf: bad_value(position_for_errors, size_t(pick.index), "+inf");
    case GreedyPick::Row::AllNegInf: all_neg_inf(position_for_errors, vocab);
    case GreedyPick::Row::Ok: break;
  }
  if (pick.index < 0 || size_t(pick.index) >= vocab)
    throw Error(ErrorKind::Internal, "greedy pick " + std::to_string(pick.index) + " outside a row of " +
                                         std::to_string(vocab));
  return int32_t(pick.index);
}

}  // namespace ds4::engine
