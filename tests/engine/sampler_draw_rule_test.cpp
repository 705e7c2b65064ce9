// Step 9 alone (draw_index), at u values exactly on the cumulative boundaries where "c[i] > u * c[n-1]"
// and ">=" part ways; expected indices from tools/oracle/sampler_vectors.py (draw_rule.jsonl).
#include <gtest/gtest.h>

#include "engine/candidates.h"
#include "sampling_fixtures.h"

namespace {

TEST(SamplerDrawRule, MatchesTheOracleOnBoundaries) {
  const auto cases = ds4::test::load_sampling_fixture("draw_rule.jsonl");
  ASSERT_GE(cases.size(), 40u);
  for (const auto& j : cases) {
    const auto p = j["p"].get<std::vector<double>>();
    const double u = j["u"].get<double>();
    EXPECT_EQ(ds4::engine::draw_index(p, u), j["index"].get<size_t>()) << j.dump();
  }
}

}  // namespace
