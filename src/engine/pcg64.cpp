#include "engine/pcg64.h"

#include <vector>

#include "engine/seed_sequence.h"

namespace ds4::engine {
namespace {

// PCG_DEFAULT_MULTIPLIER_128 of pcg64.h in numpy (and of the PCG reference implementation).
constexpr uint128 kMultiplier =
    (static_cast<uint128>(0x2360ED051FC65DA4ull) << 64) | static_cast<uint128>(0x4385DF649FCCF645ull);

uint128 make128(uint64_t hi, uint64_t lo) { return (static_cast<uint128>(hi) << 64) | lo; }

uint64_t rotr64(uint64_t value, unsigned rot) { return (value >> rot) | (value << ((64 - rot) & 63)); }

}  // namespace

Pcg64::Pcg64(uint64_t seed) {
  const std::vector<uint64_t> w = SeedSequence(seed).generate_state_u64(4);
  *this = from_initstate(make128(w[0], w[1]), make128(w[2], w[3]));
}

Pcg64 Pcg64::from_initstate(uint128 initstate, uint128 initseq) {
  Pcg64 g;
  g.state_ = 0;
  g.inc_ = (initseq << 1) | 1;
  g.step();
  g.state_ += initstate;
  g.step();
  return g;
}

void Pcg64::step() { state_ = state_ * kMultiplier + inc_; }

uint64_t Pcg64::next_u64() {
  step();
  const uint64_t hi = static_cast<uint64_t>(state_ >> 64);
  const uint64_t lo = static_cast<uint64_t>(state_);
  return rotr64(hi ^ lo, static_cast<unsigned>(state_ >> 122));
}

double Pcg64::next_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

}  // namespace ds4::engine
