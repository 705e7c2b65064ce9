// Parameter validation, seeds from the OS, and the temperature-overflow fallback.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "engine/pcg64.h"
#include "engine/sampler.h"

namespace {

using ds4::engine::Sampler;
using ds4::engine::SamplingParams;

bool rejected(SamplingParams p) {
  try {
    Sampler s(p, 1);
  } catch (const ds4::Error& e) {
    return e.kind() == ds4::ErrorKind::InvalidArgument;
  }
  return false;
}

TEST(SamplerParams, RejectsValuesWithoutMeaning) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(rejected({.temperature = -0.1}));
  EXPECT_TRUE(rejected({.temperature = kNan}));
  EXPECT_TRUE(rejected({.temperature = std::numeric_limits<double>::infinity()}));
  EXPECT_TRUE(rejected({.top_p = kNan}));
  EXPECT_TRUE(rejected({.min_p = kNan}));
  EXPECT_TRUE(rejected({.presence_penalty = 2.5}));
  EXPECT_TRUE(rejected({.frequency_penalty = -2.5}));
  EXPECT_FALSE(rejected({.temperature = 0.0, .top_p = 0.0, .presence_penalty = -2.0, .frequency_penalty = 2.0}));
}

TEST(SamplerSeed, GivenSeedIsKeptAndMissingSeedComesFromTheOs) {
  EXPECT_EQ(ds4::engine::seed_or_os(123u), 123u);
  // Two OS seeds agree with probability 2^-64; equal ones mean the entropy source is not used.
  const uint64_t a = ds4::engine::seed_or_os(std::nullopt);
  const uint64_t b = ds4::engine::seed_or_os(std::nullopt);
  EXPECT_NE(a, b);
  Sampler s({}, a);
  EXPECT_EQ(s.seed(), a);
}

TEST(SamplerSeed, TheSeedSelectsTheStream) {
  // A uniform row makes the token the index of the u-interval, so the token stream mirrors the
  // request's Pcg64 doubles, computed here from the stream itself.
  const std::vector<float> row(64, 0.0f);
  for (uint64_t seed : {0ull, 42ull, 1ull << 63}) {
    Sampler s({}, seed);
    ds4::engine::Pcg64 rng(seed);
    for (int i = 0; i < 16; ++i) {
      const int expected = static_cast<int>(rng.next_double() * 64.0);  // c[i] = (i + 1) / 64 exactly
      EXPECT_EQ(s.sample(row), expected) << "seed " << seed << " draw " << i;
    }
  }
}

TEST(SamplerParams, TemperatureOverflowFallsBackToTheArgmaxAndStillDraws) {
  // z / 5e-324 is +inf for any positive logit; the law's softmax would be NaN.
  const std::vector<float> row = {1.0f, 2.0f, 2.0f, -3.0f};
  Sampler s({.temperature = 5e-324}, 9);
  EXPECT_FALSE(s.is_greedy());
  EXPECT_EQ(s.sample(row), 1);
  EXPECT_EQ(s.draws(), 1u);
  // The fallback used exactly the first double: an all-zero row does not overflow (0 / T = 0) and is
  // uniform, so the next token is the interval of the stream's second double.
  ds4::engine::Pcg64 rng(9);
  rng.next_double();
  const int expected = static_cast<int>(rng.next_double() * 64.0);
  EXPECT_EQ(s.sample(std::vector<float>(64, 0.0f)), expected);
}

}  // namespace
