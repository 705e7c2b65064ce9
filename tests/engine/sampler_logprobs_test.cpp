// log_softmax and top_logprobs against numpy (tools/oracle/sampler_vectors.py writes logprobs.jsonl, with
// the C library's exp and log, the port's, so values compare exactly).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "engine/logprobs.h"
#include "sampler_case.h"
#include "sampling_fixtures.h"

namespace {

TEST(SamplerLogprobs, MatchNumpy) {
  const auto cases = ds4::test::load_sampling_fixture("logprobs.jsonl");
  ASSERT_GE(cases.size(), 10u);
  for (const auto& j : cases) {
    const std::string name = j["name"].get<std::string>();
    const auto row = ds4::test::stored_row(j["logits"]);
    const auto lp = ds4::engine::log_softmax(row);
    ASSERT_EQ(lp.size(), row.size());
    if (!j["logprobs"].is_null()) {
      for (size_t i = 0; i < row.size(); ++i) {
        const auto& want = j["logprobs"][i];
        if (want.is_null()) {
          EXPECT_EQ(lp[i], -std::numeric_limits<double>::infinity()) << name << " id " << i;
        } else {
          EXPECT_EQ(lp[i], want.get<double>()) << name << " id " << i;
        }
      }
    }
    const auto top = ds4::engine::top_logprobs(lp, j["top_n"].get<size_t>());
    const auto ids = j["top_ids"].get<std::vector<int32_t>>();
    std::vector<double> vals;  // null = -inf (a masked token among the top n)
    for (const auto& v : j["top_logprobs"]) vals.push_back(v.is_null() ? -std::numeric_limits<double>::infinity() : v.get<double>());
    ASSERT_EQ(top.size(), ids.size()) << name;
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(top[i].id, ids[i]) << name << " rank " << i;
      EXPECT_EQ(top[i].logprob, vals[i]) << name << " rank " << i;
    }
  }
}

TEST(SamplerLogprobs, ValidateAndClampN) {
  const std::vector<float> bad = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_THROW(ds4::engine::log_softmax(bad, 2), ds4::Error);
  const std::vector<double> lp = {-1.0, -0.5};
  const auto top = ds4::engine::top_logprobs(lp, 10);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, 1);
}

}  // namespace
