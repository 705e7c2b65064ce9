// numpy's SeedSequence, restricted to what the request stream needs: entropy from one unsigned 64-bit
// seed, no spawn key, pool size 4. Ported so that a seed gives the same stream here as
// numpy.random.default_rng(seed) does (SAMPLING.md, "The request stream").
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds4::engine {

class SeedSequence {
 public:
  static constexpr int kPoolSize = 4;

  explicit SeedSequence(uint64_t seed);

  // The seed as numpy splits a Python int: 32-bit words, least significant first, no leading zero words
  // (so seeds below 2^32 give one word, others two).
  static std::vector<uint32_t> entropy_words(uint64_t seed);

  const std::array<uint32_t, kPoolSize>& pool() const { return pool_; }

  // numpy's generate_state(n, np.uint64): 2n 32-bit words, paired little-endian into n 64-bit words.
  std::vector<uint64_t> generate_state_u64(int n) const;

 private:
  std::array<uint32_t, kPoolSize> pool_{};
};

}  // namespace ds4::engine
