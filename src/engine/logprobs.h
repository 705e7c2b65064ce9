// Log-probabilities for the OpenAI logprobs fields: the float64 log-softmax of a row, and its n most
// likely tokens (ties to the lowest id, the law's order). The caller chooses the row (raw or processed).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace ds4::engine {

struct TokenLogprob {
  int32_t id;
  double logprob;
};

// Validates like the sampler (NaN / +inf / all -inf -> InvalidLogits), then z - max - log(sum exp(z - max))
// with the sum sequential in index order. Masked (-inf) tokens get -inf.
std::vector<double> log_softmax(std::span<const float> logits, int64_t position_for_errors = -1);

// The n largest (logprob desc, id asc); n is clamped to the row length.
std::vector<TokenLogprob> top_logprobs(std::span<const double> logprobs, size_t n);

}  // namespace ds4::engine
