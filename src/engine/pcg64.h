// The request stream of SAMPLING.md: numpy's PCG64 (128-bit LCG, XSL-RR output) seeded through
// SeedSequence, and numpy's double draw. Bit-identical to numpy.random.default_rng(seed).random().
#pragma once
#include <cstdint>

namespace ds4::engine {

using uint128 = unsigned __int128;

class Pcg64 {
 public:
  // PCG64(SeedSequence(seed)): numpy seeds from generate_state(4, uint64) = {s_hi, s_lo, i_hi, i_lo}.
  explicit Pcg64(uint64_t seed);

  // numpy's pcg64_set_seed / pcg_setseq_128_srandom_r: the increment is (initseq << 1) | 1, and the
  // state is stepped once before and once after adding initstate.
  static Pcg64 from_initstate(uint128 initstate, uint128 initseq);

  uint64_t next_u64();     // one LCG step, then XSL-RR of the new state
  double next_double();    // (x >> 11) * 2^-53, numpy's random()

  uint128 state() const { return state_; }
  uint128 inc() const { return inc_; }

 private:
  Pcg64() = default;
  void step();

  uint128 state_ = 0;
  uint128 inc_ = 0;
};

}  // namespace ds4::engine
