// Seeded sampling on the qwen4 fixtures: ds4's generator must reproduce the oracle's token streams, which
// apply the sampling law to transformers' logits with numpy's PCG64 stream (tools/oracle/make_qwen4_fixtures.py).
#include <gtest/gtest.h>

#include "engine/generator.h"
#include "models/model.h"
#include "models/qwen4_fixture.h"

namespace ds4 {
namespace {

engine::SamplingParams params_from(const nlohmann::json& p) {
  engine::SamplingParams s;
  s.temperature = p.value("temperature", 1.0);
  s.top_k = p.value("top_k", 0);
  s.top_p = p.value("top_p", 1.0);
  s.min_p = p.value("min_p", 0.0);
  s.presence_penalty = p.value("presence_penalty", 0.0);
  s.frequency_penalty = p.value("frequency_penalty", 0.0);
  return s;
}

class Qwen4Sampling : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen4Sampling, SeededStreamsMatchTheOracle) {
  auto model = load_model(test::qwen4_fixture(GetParam()));
  const auto ref = test::qwen4_reference(GetParam());
  for (const auto& c : ref["sampled"]) {
    engine::GenerationRequest req;
    req.prompt = c["prompt"].get<std::vector<int32_t>>();
    const auto want = c["tokens"].get<std::vector<int32_t>>();
    req.max_tokens = int64_t(want.size());
    req.sampling = params_from(c["params"]);
    req.seed = c["params"]["seed"].get<uint64_t>();
    req.ignore_eos = true;  // the oracle samples through eos
    auto res = engine::generate(*model, nullptr, req);
    EXPECT_EQ(res.tokens, want) << "params " << c["params"].dump();
    EXPECT_EQ(res.seed, *req.seed);
    EXPECT_EQ(res.finish_reason, "length");
  }
}

TEST_P(Qwen4Sampling, GreedyGenerationMatchesTheOracleWhileMarginIsClear) {
  auto model = load_model(test::qwen4_fixture(GetParam()));
  const auto ref = test::qwen4_reference(GetParam());
  engine::GenerationRequest req;
  req.prompt = ref["greedy"]["prompt"].get<std::vector<int32_t>>();
  const auto want = ref["greedy"]["tokens"].get<std::vector<int32_t>>();
  const auto margins = ref["greedy"]["margins"].get<std::vector<double>>();
  req.max_tokens = int64_t(want.size());
  req.sampling.temperature = 0.0;
  req.ignore_eos = true;
  auto res = engine::generate(*model, nullptr, req);
  ASSERT_EQ(res.tokens.size(), want.size());
  for (size_t i = 0; i < want.size() && margins[i] > test::kMarginClear; i++) ASSERT_EQ(res.tokens[i], want[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Qwen4Sampling, ::testing::ValuesIn(test::qwen4_fixture_names()));

}  // namespace
}  // namespace ds4
