// The classic sampler of SAMPLING.md: one per request, owning the request's PCG64 stream and the counts
// of the tokens it has generated (for the penalties).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "engine/candidates.h"
#include "engine/pcg64.h"
#include "engine/sampling_params.h"

namespace ds4::engine {

// A kept candidate of the last row: its id and its full-vocabulary probability (not renormalised).
struct Candidate {
  int32_t id;
  double p;
};

class Sampler {
 public:
  // Throws ds4::Error(InvalidArgument) for parameters the law has no meaning for (validate_sampling_params).
  Sampler(SamplingParams params, uint64_t seed);

  // Validates the row (NaN / +inf / all -inf -> ds4::Error(InvalidLogits) naming the position and index;
  // no draw consumed, nothing recorded), applies the penalties from the accepted tokens, then takes the
  // argmax (greedy) or draws the next u of the stream. Does not count the token: call accept() for the
  // tokens that are emitted (a rejected speculative draft is sampled but not emitted).
  int32_t sample(std::span<const float> logits, int64_t position_for_errors = -1);

  // The kept candidates (steps 1-8) for a row, in the law's order, without drawing. Greedy samplers
  // return the argmax alone with p = 1.
  std::vector<Candidate> candidates(std::span<const float> logits, int64_t position_for_errors = -1);

  // Counts a generated token for the presence and frequency penalties.
  void accept(int32_t token);

  bool is_greedy() const;
  uint64_t seed() const { return seed_; }
  uint64_t draws() const { return draws_; }  // u values consumed so far
  const SamplingParams& params() const { return params_; }

 private:
  void penalised(std::span<const float> logits, int64_t position_for_errors);

  SamplingParams params_;
  uint64_t seed_;
  Pcg64 rng_;
  uint64_t draws_ = 0;
  std::map<int32_t, int64_t> counts_;  // accepted token -> times generated
  std::vector<double> z_;              // scratch: the penalised row
  std::vector<double> kept_p_;         // scratch: the kept p, in the law's order
  CandidateSelector selector_;
};

// A seed from the operating system's entropy source, for requests that give none (reported back to the
// client through Sampler::seed()).
uint64_t os_seed();
uint64_t seed_or_os(std::optional<uint64_t> seed);

}  // namespace ds4::engine
