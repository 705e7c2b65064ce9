// The sampler against the numpy oracle (tools/oracle/sampler_vectors.py): token streams of whole
// requests, the kept candidates, and the worked example of SAMPLING.md step 7.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>

#include "engine/sampler.h"
#include "sampler_case.h"
#include "sampling_fixtures.h"

namespace {

using ds4::engine::Sampler;
using ds4::test::SamplerCase;

const std::vector<nlohmann::json>& raw_cases() {
  static const auto rows = ds4::test::load_sampling_fixture("sampler_cases.jsonl");
  return rows;
}

SamplerCase find_case(const std::string& name) {
  for (const auto& j : raw_cases()) {
    if (j["name"] == name) return ds4::test::parse_sampler_case(j);
  }
  throw std::runtime_error("no sampler case " + name);
}

// Runs a request the way the Generator does: prior tokens counted, each sampled token counted next.
std::vector<int32_t> run_request(const SamplerCase& c, Sampler& s) {
  for (int32_t t : c.prior_tokens) s.accept(t);
  std::vector<int32_t> got;
  for (size_t step = 0; step < c.tokens.size(); ++step) {
    got.push_back(s.sample(c.rows[step % c.rows.size()], static_cast<int64_t>(step)));
    s.accept(got.back());
  }
  return got;
}

TEST(SamplerLaw, TokenStreamsMatchTheNumpyOracle) {
  ASSERT_GE(raw_cases().size(), 200u);
  size_t large = 0;
  for (const auto& j : raw_cases()) {
    const SamplerCase c = ds4::test::parse_sampler_case(j);
    large += c.rows[0].size() > 100000;
    Sampler s(c.params, c.seed);
    EXPECT_EQ(run_request(c, s), c.tokens) << c.name;
    EXPECT_EQ(s.draws(), c.draws) << c.name;
  }
  EXPECT_GE(large, 5u);  // the partial-order paths are exercised on a real vocabulary size
}

TEST(SamplerLaw, KeptCandidatesMatchTheNumpyOracle) {
  size_t checked = 0;
  for (const auto& j : raw_cases()) {
    const SamplerCase c = ds4::test::parse_sampler_case(j);
    if (!c.first_kept) continue;
    Sampler s(c.params, c.seed);
    for (int32_t t : c.prior_tokens) s.accept(t);
    const auto kept = s.candidates(c.rows[0]);
    const auto& want = *c.first_kept;
    ASSERT_EQ(kept.size(), want["count"].get<size_t>()) << c.name;
    const auto ids = want["ids"].get<std::vector<int32_t>>();
    const auto p = want["p"].get<std::vector<double>>();
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(kept[i].id, ids[i]) << c.name << " rank " << i;
      // Exact: the oracle records p with the C library's exp (the port's), so every rounding of the
      // float64 pipeline (penalties, z / T, the sequential sums, the division) must be the law's.
      EXPECT_EQ(kept[i].p, p[i]) << c.name << " rank " << i;
    }
    ++checked;
    EXPECT_EQ(s.draws(), 0u) << "candidates() must not draw";
  }
  EXPECT_GE(checked, 100u);
}

TEST(SamplerLaw, WorkedExampleOfStep7KeepsBothTokensUnnormalised) {
  // .4, .3, .3/62 x 62 with top_k 2, top_p .5: .4 < .5 so both stay; the draw is over .4 and .3.
  const SamplerCase c = find_case("worked_example_step7");
  Sampler s(c.params, c.seed);
  const auto kept = s.candidates(c.rows[0]);
  ASSERT_EQ(kept.size(), 2u);
  const auto ids = c.first_kept->at("ids").get<std::vector<int32_t>>();
  const auto p = c.first_kept->at("p").get<std::vector<double>>();
  EXPECT_EQ(kept[0].id, ids[0]);
  EXPECT_EQ(kept[1].id, ids[1]);
  // The oracle asserts that these normalise to 4/7 and 3/7 (the contract's .5714 / .4286).
  EXPECT_EQ(kept[0].p, p[0]);
  EXPECT_EQ(kept[1].p, p[1]);
  EXPECT_EQ(run_request(c, s), c.tokens);
}

TEST(SamplerLaw, EachSampledTokenConsumesOneDoubleAndGreedyNone) {
  const SamplerCase sampled = find_case("all_equal_min_p_one");
  Sampler s(sampled.params, sampled.seed);
  run_request(sampled, s);
  EXPECT_EQ(s.draws(), sampled.tokens.size());
  const SamplerCase greedy = find_case("greedy_with_penalties");
  Sampler g(greedy.params, greedy.seed);
  EXPECT_TRUE(g.is_greedy());
  EXPECT_EQ(run_request(greedy, g), greedy.tokens);
  EXPECT_EQ(g.draws(), 0u);
  EXPECT_FALSE(s.is_greedy());
}

// The softmax of a vocabulary-sized row runs its element-wise passes on several threads; the kept candidates and
// their probabilities must be the same bits on one thread as on four (the sum stays sequential in index order).
TEST(SamplerLaw, ProbabilitiesDoNotDependOnTheThreadCount) {
  size_t checked = 0;
  for (const auto& j : raw_cases()) {
    const SamplerCase c = ds4::test::parse_sampler_case(j);
    if (c.rows[0].size() < 100000 || c.params.temperature == 0.0) continue;
    auto kept_with = [&](int threads) {
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
      Sampler s(c.params, c.seed);
      for (int32_t t : c.prior_tokens) s.accept(t);
      auto kept = s.candidates(c.rows[0]);
      omp_set_num_threads(before);
      return kept;
    };
    const auto one = kept_with(1), four = kept_with(4);
    ASSERT_EQ(one.size(), four.size()) << c.name;
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_EQ(one[i].id, four[i].id) << c.name << " candidate " << i;
      ASSERT_EQ(std::memcmp(&one[i].p, &four[i].p, sizeof(double)), 0) << c.name << " candidate " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 3u);
}

}  // namespace
