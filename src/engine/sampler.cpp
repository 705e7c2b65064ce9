#include "engine/sampler.h"

#include <random>
#include <string>

#include "core/error.h"
#include "engine/logits_check.h"

namespace ds4::engine {
namespace {

// Greedy: the first index of the maximum (numpy's argmax), so ties go to the lowest id.
int32_t argmax(std::span<const double> z) {
  size_t best = 0;
  for (size_t i = 1; i < z.size(); ++i) {
    if (z[i] > z[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

// The law rounds the two products before adding them (numpy evaluates presence * (c > 0) and
// frequency * c as separate arrays). -march=native lets GCC fuse a*b + c into one FMA with a single
// rounding, which changes the last bit of the penalty, so contraction is off for this function.
__attribute__((optimize("fp-contract=off"))) double penalty(double presence, double frequency, int64_t count) {
  const double present = count > 0 ? 1.0 : 0.0;
  return presence * present + frequency * static_cast<double>(count);
}

}  // namespace

Sampler::Sampler(SamplingParams params, uint64_t seed) : params_(params), seed_(seed), rng_(seed) {
  validate_sampling_params(params_);
}

bool Sampler::is_greedy() const { return params_.temperature == 0.0 || params_.top_k == 1; }

void Sampler::accept(int32_t token) {
  if (token < 0) throw Error(ErrorKind::InvalidArgument, "accepted token id " + std::to_string(token) + " is negative");
  ++counts_[token];
}

void Sampler::penalised(std::span<const float> logits, int64_t position_for_errors) {
  validate_logits(logits, position_for_errors);
  z_.assign(logits.begin(), logits.end());
  for (const auto& [token, count] : counts_) {
    if (static_cast<size_t>(token) >= z_.size()) {
      throw Error(ErrorKind::InvalidArgument, "generated token " + std::to_string(token) +
                                                  " is outside the logits row of " + std::to_string(z_.size()));
    }
    z_[token] -= penalty(params_.presence_penalty, params_.frequency_penalty, count);
  }
}

int32_t Sampler::sample(std::span<const float> logits, int64_t position_for_errors) {
  penalised(logits, position_for_errors);
  if (is_greedy()) return argmax(z_);
  const bool ok = selector_.select(z_, params_);
  // One u per non-greedy token, always, so the i-th sampled token uses the i-th double of the stream.
  const double u = rng_.next_double();
  ++draws_;
  if (!ok) return argmax(z_);  // z / temperature overflowed: the limit of the distribution is the argmax
  kept_p_.resize(selector_.kept());
  for (size_t i = 0; i < kept_p_.size(); ++i) kept_p_[i] = selector_.prob(i);
  return selector_.id(draw_index(kept_p_, u));
}

std::vector<Candidate> Sampler::candidates(std::span<const float> logits, int64_t position_for_errors) {
  penalised(logits, position_for_errors);
  if (is_greedy() || !selector_.select(z_, params_)) return {{argmax(z_), 1.0}};
  std::vector<Candidate> out(selector_.kept());
  for (size_t i = 0; i < out.size(); ++i) out[i] = {selector_.id(i), selector_.prob(i)};
  return out;
}

uint64_t os_seed() {
  // 53 bits: the seed is reported back in JSON, and JavaScript clients read numbers as doubles, which hold
  // integers exactly only below 2^53; a larger drawn seed could not be sent back to reproduce the request.
  std::random_device rd;
  const uint64_t x = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
  return x & ((uint64_t(1) << 53) - 1);
}

uint64_t seed_or_os(std::optional<uint64_t> seed) { return seed ? *seed : os_seed(); }

}  // namespace ds4::engine
