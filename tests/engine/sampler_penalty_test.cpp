// Penalties count the tokens passed to accept(), and only those (SAMPLING.md step 2).
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/sampler.h"
#include "sampler_case.h"
#include "sampling_fixtures.h"

namespace {

using ds4::engine::Sampler;

ds4::test::SamplerCase greedy_penalty_case() {
  for (const auto& j : ds4::test::load_sampling_fixture("sampler_cases.jsonl")) {
    if (j["name"] == "greedy_with_penalties") return ds4::test::parse_sampler_case(j);
  }
  throw std::runtime_error("greedy_with_penalties missing from the fixture");
}

TEST(SamplerPenalties, OnlyAcceptedTokensCount) {
  const auto c = greedy_penalty_case();
  ASSERT_NE(c.tokens[0], c.tokens[1]) << "the case must show the penalty moving the argmax";
  Sampler s(c.params, c.seed);
  // Sampling without accept() changes nothing: a rejected draft must not be penalised.
  EXPECT_EQ(s.sample(c.rows[0]), c.tokens[0]);
  EXPECT_EQ(s.sample(c.rows[0]), c.tokens[0]);
  s.accept(c.tokens[0]);
  EXPECT_EQ(s.sample(c.rows[0]), c.tokens[1]);
}

TEST(SamplerPenalties, PriorCountsMatterForTheOracleCases) {
  // Cases with prior tokens and penalties, run without the prior tokens: at least one must differ, so
  // a sampler that ignored accept() before the first draw would fail TokenStreamsMatchTheNumpyOracle.
  size_t differ = 0, total = 0;
  for (const auto& j : ds4::test::load_sampling_fixture("sampler_cases.jsonl")) {
    const auto c = ds4::test::parse_sampler_case(j);
    if (c.prior_tokens.empty() || (c.params.presence_penalty == 0.0 && c.params.frequency_penalty == 0.0)) continue;
    ++total;
    Sampler s(c.params, c.seed);
    std::vector<int32_t> got;
    for (size_t step = 0; step < c.tokens.size(); ++step) {
      got.push_back(s.sample(c.rows[step % c.rows.size()]));
      s.accept(got.back());
    }
    differ += got != c.tokens;
  }
  EXPECT_GT(total, 10u);
  EXPECT_GT(differ, 0u);
}

TEST(SamplerPenalties, TokensOutsideTheRowAreRejected) {
  Sampler s({.presence_penalty = 1.0}, 3);
  EXPECT_THROW(s.accept(-1), ds4::Error);
  s.accept(10);
  const std::vector<float> row(4, 0.0f);
  try {
    s.sample(row);
    ADD_FAILURE() << "no error";
  } catch (const ds4::Error& e) {
    EXPECT_EQ(e.kind(), ds4::ErrorKind::InvalidArgument);
    EXPECT_EQ(s.draws(), 0u);
  }
}

}  // namespace
