// The generation loop's contract: invalid logits end the request with a typed error and no token, and the
// next request on the same model works; cancellation stops at the next token; eos ends with "stop".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/generator.h"
#include "models/model.h"
#include "models/qwen4_fixture.h"

namespace ds4 {
namespace {

// Wraps a real model and corrupts one logits row at a chosen position, to test the error path.
class CorruptingModel : public Model {
 public:
  CorruptingModel(std::unique_ptr<Model> m, int64_t bad_pos, float value) : m_(std::move(m)), bad_(bad_pos), value_(value) {}
  const ModelInfo& info() const override { return m_->info(); }
  std::unique_ptr<SequenceState> new_state() const override { return m_->new_state(); }
  void forward(SequenceState& st, std::span<const int32_t> t, std::vector<float>& logits, bool all) const override {
    m_->forward(st, t, logits, all);
    if (st.position() == bad_) logits[3] = value_;
  }

 private:
  std::unique_ptr<Model> m_;
  int64_t bad_;
  float value_;
};

engine::GenerationRequest request(double temperature) {
  engine::GenerationRequest r;
  r.prompt = {5, 9, 11, 40};
  r.max_tokens = 6;
  r.sampling.temperature = temperature;
  r.seed = 7;
  r.ignore_eos = true;
  return r;
}

TEST(Generator, InvalidLogitsEndTheRequestWithATypedErrorAndNoToken) {
  for (float bad : {NAN, INFINITY}) {
    for (double temp : {0.0, 0.9}) {
      CorruptingModel m(load_model(test::qwen4_fixture("text_f32")), /*bad_pos=*/6, bad);
      int emitted = 0;
      auto res = engine::generate(m, nullptr, request(temp), [&](const engine::TokenEvent&) { return ++emitted, true; });
      ASSERT_TRUE(res.error.has_value());
      EXPECT_EQ(res.error->kind(), ErrorKind::InvalidLogits);
      EXPECT_EQ(res.finish_reason, "error");
      EXPECT_EQ(emitted, 2) << "tokens from the rows before the bad one only";
      EXPECT_EQ(res.tokens.size(), 2u);
    }
  }
}

TEST(Generator, NextRequestAfterAnErrorIsUnaffected) {
  auto model = load_model(test::qwen4_fixture("text_f32"));
  auto clean = engine::generate(*model, nullptr, request(0.9));
  CorruptingModel bad(load_model(test::qwen4_fixture("text_f32")), 5, NAN);
  ASSERT_TRUE(engine::generate(bad, nullptr, request(0.9)).error);
  auto again = engine::generate(*model, nullptr, request(0.9));
  EXPECT_FALSE(again.error);
  EXPECT_EQ(again.tokens, clean.tokens);
}

TEST(Generator, CancellationStopsAtTheNextToken) {
  auto model = load_model(test::qwen4_fixture("text_f32"));
  int seen = 0;
  auto res = engine::generate(*model, nullptr, request(0.0), [&](const engine::TokenEvent&) { return ++seen < 3; });
  EXPECT_EQ(res.finish_reason, "cancelled");
  EXPECT_EQ(seen, 3);
}

TEST(Generator, EosEndsWithStopUnlessIgnored) {
  auto model = load_model(test::qwen4_fixture("text_f32"));
  auto req = request(0.0);
  req.max_tokens = 12;
  auto free_run = engine::generate(*model, nullptr, req);
  // Declare the third greedy token an eos by asking for generation to stop there: it must end with "stop".
  const int32_t third = free_run.tokens[2];
  if (std::find(free_run.tokens.begin(), free_run.tokens.begin() + 2, third) != free_run.tokens.begin() + 2)
    GTEST_SKIP() << "the third token also occurs earlier";
  struct EosModel : CorruptingModel {
    EosModel(std::unique_ptr<Model> m, int64_t eos) : CorruptingModel(std::move(m), -1, 0) { info_ = CorruptingModel::info(); info_.eos_ids = {eos}; }
    const ModelInfo& info() const override { return info_; }
    ModelInfo info_;
  } eos_model(load_model(test::qwen4_fixture("text_f32")), third);
  req.ignore_eos = false;
  auto res = engine::generate(eos_model, nullptr, req);
  EXPECT_EQ(res.finish_reason, "stop");
  EXPECT_EQ(res.tokens, std::vector<int32_t>(free_run.tokens.begin(), free_run.tokens.begin() + 3));
}

// A backend that picks greedy tokens itself (Model::forward_greedy), here on the host from the wrapped model's row
// (the first index of the maximum; the first NaN or +inf; a row of only -inf), counting its calls. A corrupted
// position gives the row a bad value, as CorruptingModel does.
class PickingModel : public Model {
 public:
  PickingModel(std::unique_ptr<Model> m, int64_t bad_pos = -1, float value = 0) : m_(std::move(m)), bad_(bad_pos), value_(value) {}
  const ModelInfo& info() const override { return m_->info(); }
  std::unique_ptr<SequenceState> new_state() const override { return m_->new_state(); }
  void forward(SequenceState& st, std::span<const int32_t> t, std::vector<float>& logits, bool all) const override {
    m_->forward(st, t, logits, all);
    if (st.position() == bad_) logits[3] = value_;
  }
  bool forward_greedy(SequenceState& st, std::span<const int32_t> t, GreedyPick& pick) const override {
    ++picks;
    std::vector<float> row;
    forward(st, t, row, false);
    pick = GreedyPick{GreedyPick::Row::AllNegInf, 0};
    for (size_t i = 0; i < row.size(); ++i) {
      if (std::isnan(row[i]) || row[i] == INFINITY) {
        pick = GreedyPick{std::isnan(row[i]) ? GreedyPick::Row::NaN : GreedyPick::Row::PosInf, int64_t(i)};
        return true;
      }
      if (row[i] > -INFINITY && (pick.row != GreedyPick::Row::Ok || row[i] > row[size_t(pick.index)]))
        pick = GreedyPick{GreedyPick::Row::Ok, int64_t(i)};
    }
    return true;
  }
  mutable int picks = 0;

 private:
  std::unique_ptr<Model> m_;
  int64_t bad_;
  float value_;
};

// Greedy requests without penalties or logprobs let the model pick (the same tokens as the sampler's argmax
// of the row); anything that needs the row itself goes through forward() and the sampler.
TEST(Generator, GreedyTokensMayBePickedByTheModel) {
  auto plain = load_model(test::qwen4_fixture("text_f32"));
  struct Case {
    const char* what;
    double temperature;
    int top_k;
    double presence;
    int top_logprobs;
    bool picks;
  };
  for (const Case c : {Case{"greedy", 0.0, 0, 0.0, -1, true}, Case{"top_k 1", 0.7, 1, 0.0, -1, true},
                       Case{"greedy with a penalty", 0.0, 0, 0.5, -1, false},
                       Case{"greedy with logprobs", 0.0, 0, 0.0, 2, false}, Case{"sampled", 0.9, 0, 0.0, -1, false}}) {
    auto req = request(c.temperature);
    req.max_tokens = 10;
    req.sampling.top_k = c.top_k;
    req.sampling.presence_penalty = c.presence;
    req.top_logprobs = c.top_logprobs;
    PickingModel m(load_model(test::qwen4_fixture("text_f32")));
    const auto want = engine::generate(*plain, nullptr, req);
    const auto got = engine::generate(m, nullptr, req);
    EXPECT_EQ(got.tokens, want.tokens) << c.what;
    EXPECT_EQ(got.finish_reason, want.finish_reason) << c.what;
    EXPECT_EQ(m.picks, c.picks ? 10 : 0) << c.what << ": the prompt and 9 decode steps";
  }
}

// An invalid row found by the model's pick ends the request as the sampler's check does.
TEST(Generator, InvalidLogitsFromTheModelsPickAreTheSameError) {
  for (float bad : {NAN, INFINITY}) {
    PickingModel m(load_model(test::qwen4_fixture("text_f32")), /*bad_pos=*/6, bad);
    int emitted = 0;
    auto res = engine::generate(m, nullptr, request(0.0), [&](const engine::TokenEvent&) { return ++emitted, true; });
    ASSERT_TRUE(res.error.has_value());
    EXPECT_EQ(res.error->kind(), ErrorKind::InvalidLogits);
    EXPECT_EQ(res.finish_reason, "error");
    EXPECT_EQ(emitted, 2);
    EXPECT_GT(m.picks, 0);
    CorruptingModel via_row(load_model(test::qwen4_fixture("text_f32")), 6, bad);
    const auto want = engine::generate(via_row, nullptr, request(0.0));
    ASSERT_TRUE(want.error.has_value());
    EXPECT_STREQ(res.error->what(), want.error->what()) << "the sampler's message for the same row";
  }
}

TEST(Generator, PromptPlusMaxTokensOverTheContextIsRejected) {
  auto model = load_model(test::qwen4_fixture("text_f32"));
  auto req = request(0.0);
  req.max_tokens = model->info().max_positions;
  try {
    engine::generate(*model, nullptr, req);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("exceeds the context"), std::string::npos);
  }
}

}  // namespace
}  // namespace ds4
