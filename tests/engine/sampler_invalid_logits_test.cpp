// Step 1 of SAMPLING.md: NaN, +inf and all -inf rows are errors that name the position and index, consume
// no draw and record nothing, so the request stream continues as if the call had not happened.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "core/error.h"
#include "engine/logits_check.h"
#include "engine/sampler.h"
#include "sampler_case.h"
#include "sampling_fixtures.h"

namespace {

using ds4::engine::Sampler;
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Returns the message of the InvalidLogits error that `fn` throws (fails the test if it throws nothing
// or another kind).
template <class Fn>
std::string invalid_logits_message(Fn fn) {
  try {
    fn();
  } catch (const ds4::Error& e) {
    EXPECT_EQ(e.kind(), ds4::ErrorKind::InvalidLogits) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no InvalidLogits error";
  return "";
}

TEST(SamplerInvalidLogits, NanAndPosInfNameThePositionAndIndex) {
  Sampler s({}, 1);
  std::vector<float> row(400, 0.5f);
  row[345] = kNan;
  std::string msg = invalid_logits_message([&] { s.sample(row, 12); });
  EXPECT_NE(msg.find("position 12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("logit[345]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;

  row[345] = 0.5f;
  row[7] = kInf;
  msg = invalid_logits_message([&] { s.sample(row, 3); });
  EXPECT_NE(msg.find("position 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("logit[7]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("+inf"), std::string::npos) << msg;
}

TEST(SamplerInvalidLogits, AllNegInfAndEmptyRowsAreErrorsButNegInfAloneIsLegal) {
  Sampler s({}, 1);
  const std::vector<float> all_masked(5, -kInf);
  const std::string msg = invalid_logits_message([&] { s.sample(all_masked, 9); });
  EXPECT_NE(msg.find("position 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-inf"), std::string::npos) << msg;
  invalid_logits_message([&] { s.sample(std::span<const float>{}, 0); });
  // Without a position the message still says what is wrong.
  invalid_logits_message([&] { ds4::engine::validate_logits(all_masked); });

  // Only the finite entry can be drawn.
  std::vector<float> one_left(5, -kInf);
  one_left[3] = -2.0f;
  EXPECT_EQ(s.sample(one_left), 3);
  Sampler greedy({.temperature = 0.0}, 1);
  EXPECT_EQ(greedy.sample(one_left), 3);
}

TEST(SamplerInvalidLogits, GreedyAndLogprobsValidateToo) {
  Sampler greedy({.temperature = 0.0}, 1);
  std::vector<float> row = {1.0f, kNan, 2.0f};
  const std::string msg = invalid_logits_message([&] { greedy.sample(row, 4); });
  EXPECT_NE(msg.find("logit[1]"), std::string::npos) << msg;
  invalid_logits_message([&] { greedy.candidates(row); });
}

// A sampled (non-greedy) oracle case whose stream is not constant, so a shifted stream shows.
ds4::test::SamplerCase varied_case() {
  for (const auto& j : ds4::test::load_sampling_fixture("sampler_cases.jsonl")) {
    auto c = ds4::test::parse_sampler_case(j);
    const std::set<int32_t> distinct(c.tokens.begin(), c.tokens.end());
    const bool penalised = c.params.presence_penalty != 0.0 || c.params.frequency_penalty != 0.0;
    if (c.draws == c.tokens.size() && distinct.size() >= 4 && penalised && c.rows[0].size() >= 8) return c;
  }
  throw std::runtime_error("no varied penalised case in the fixture");
}

TEST(SamplerInvalidLogits, ConsumeNoDrawAndRecordNothing) {
  const auto c = varied_case();
  Sampler s(c.params, c.seed);
  for (int32_t t : c.prior_tokens) s.accept(t);
  std::vector<float> bad(c.rows[0].size(), 0.0f);
  for (size_t step = 0; step < c.tokens.size(); ++step) {
    // A bad row before every good one: each must leave the stream and the counts untouched.
    bad[step % bad.size()] = step % 2 ? kNan : kInf;
    EXPECT_THROW(s.sample(bad, static_cast<int64_t>(step)), ds4::Error);
    bad[step % bad.size()] = 0.0f;
    const int32_t tok = s.sample(c.rows[step % c.rows.size()], static_cast<int64_t>(step));
    EXPECT_EQ(tok, c.tokens[step]) << c.name << " step " << step;
    s.accept(tok);
  }
  EXPECT_EQ(s.draws(), c.draws);
}

}  // namespace
