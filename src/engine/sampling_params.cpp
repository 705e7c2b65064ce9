#include "engine/sampling_params.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace ds4::engine {
namespace {

// OpenAI's documented range; with it, a penalised logit stays finite for any count a request can reach.
constexpr double kMaxAbsPenalty = 2.0;

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::InvalidArgument, what);
}

}  // namespace

void validate_sampling_params(const SamplingParams& p) {
  require(std::isfinite(p.temperature) && p.temperature >= 0.0,
          "temperature must be a finite number >= 0, got " + std::to_string(p.temperature));
  require(!std::isnan(p.top_p), "top_p must be a number");
  require(!std::isnan(p.min_p), "min_p must be a number");
  require(std::fabs(p.presence_penalty) <= kMaxAbsPenalty,
          "presence_penalty must be in [-2, 2], got " + std::to_string(p.presence_penalty));
  require(std::fabs(p.frequency_penalty) <= kMaxAbsPenalty,
          "frequency_penalty must be in [-2, 2], got " + std::to_string(p.frequency_penalty));
}

}  // namespace ds4::engine
