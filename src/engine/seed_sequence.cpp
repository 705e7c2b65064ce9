#include "engine/seed_sequence.h"

namespace ds4::engine {
namespace {

// Constants of numpy/random/bit_generator.pyx (the SeedSequence hash, after Melissa O'Neill's seed_seq_fe).
// All arithmetic is on uint32, wrapping, as numpy does with uint32 arrays.
constexpr uint32_t kInitA = 0x43b0d7e5;
constexpr uint32_t kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd;
constexpr uint32_t kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd;
constexpr uint32_t kMixMultR = 0x4973f715;
constexpr int kXShift = 16;  // half of 32 bits

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

}  // namespace

std::vector<uint32_t> SeedSequence::entropy_words(uint64_t seed) {
  std::vector<uint32_t> words;
  do {
    words.push_back(static_cast<uint32_t>(seed & 0xFFFFFFFFu));
    seed >>= 32;
  } while (seed != 0);
  return words;
}

SeedSequence::SeedSequence(uint64_t seed) {
  // mix_entropy: hash each entropy word (zero past the end) into the pool, then cross-mix every pool
  // word into every other. Entropy longer than the pool would be folded in afterwards; a 64-bit seed
  // has at most 2 words, so that loop never runs here.
  const std::vector<uint32_t> entropy = entropy_words(seed);
  uint32_t hash_const = kInitA;
  for (int i = 0; i < kPoolSize; ++i) {
    const uint32_t word = i < static_cast<int>(entropy.size()) ? entropy[i] : 0u;
    pool_[i] = hashmix(word, hash_const);
  }
  for (int src = 0; src < kPoolSize; ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool_[dst] = mix(pool_[dst], hashmix(pool_[src], hash_const));
    }
  }
}

std::vector<uint64_t> SeedSequence::generate_state_u64(int n) const {
  std::vector<uint64_t> out(static_cast<std::size_t>(n), 0);
  uint32_t hash_const = kInitB;
  for (int i = 0; i < 2 * n; ++i) {
    uint32_t value = pool_[i % kPoolSize];  // numpy cycles through the pool
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    // numpy views the uint32 array as uint64 on a little-endian host: even words are the low halves.
    out[i / 2] |= static_cast<uint64_t>(value) << (i % 2 == 0 ? 0 : 32);
  }
  return out;
}

}  // namespace ds4::engine
