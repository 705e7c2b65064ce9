// Parity of the CPU reference backend with transformers on every committed qwen4_exp fixture: full
// forward, chunked prefill (1, 5, 64), prefill-then-decode, and greedy continuations.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/model.h"
#include "models/qwen4_fixture.h"

namespace ds4 {
namespace {

using test::kParityBound;

class Qwen4Parity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    model = load_model(test::qwen4_fixture(GetParam()));
    ref = test::qwen4_reference(GetParam());
    V = model->info().vocab_size;
  }
  std::vector<int32_t> sequence(size_t i) const { return ref["sequences"][i].get<std::vector<int32_t>>(); }
  NpyArray reference_logits(size_t i) const {
    return read_npy_f32(test::qwen4_fixture(GetParam()) + "/" + ref["logits_files"][i].get<std::string>());
  }
  // Runs the sequence in chunks of the given sizes (cycled) and returns all-position logits.
  std::vector<float> run_chunked(const std::vector<int32_t>& seq, std::vector<int64_t> chunks) const {
    auto st = model->new_state();
    std::vector<float> all, part;
    size_t i = 0, c = 0;
    while (i < seq.size()) {
      size_t n = std::min<size_t>(size_t(chunks[c++ % chunks.size()]), seq.size() - i);
      model->forward(*st, std::span<const int32_t>(seq.data() + i, n), part, true);
      all.insert(all.end(), part.begin(), part.end());
      i += n;
    }
    EXPECT_EQ(st->position(), int64_t(seq.size()));
    return all;
  }
  void expect_parity(const std::vector<float>& got, const NpyArray& want, const std::string& what) const {
    ASSERT_EQ(got.size(), want.data.size()) << what;
    const double scale = test::max_abs(want.data);
    const int64_t T = want.shape[0];
    for (int64_t t = 0; t < T; t++) {
      double d = test::max_rel_diff(got.data() + t * V, want.data.data() + t * V, size_t(V), scale);
      ASSERT_LE(d, kParityBound) << what << ": position " << t;
    }
  }

  std::unique_ptr<Model> model;
  nlohmann::json ref;
  int64_t V = 0;
};

TEST_P(Qwen4Parity, FullForwardMatchesTransformers) {
  for (size_t i = 0; i < ref["sequences"].size(); i++)
    expect_parity(run_chunked(sequence(i), {1 << 20}), reference_logits(i), "sequence " + std::to_string(i));
}

TEST_P(Qwen4Parity, ChunkedPrefillMatchesFullForward) {
  for (size_t i = 0; i < ref["sequences"].size(); i++) {
    const auto seq = sequence(i);
    const auto want = reference_logits(i);
    for (std::vector<int64_t> chunks : {std::vector<int64_t>{1}, {5}, {64}, {3, 17, 1, 8}})
      expect_parity(run_chunked(seq, chunks), want,
                    "sequence " + std::to_string(i) + " chunk " + std::to_string(chunks[0]));
  }
}

TEST_P(Qwen4Parity, PrefillThenDecodeMatchesFullForward) {
  const auto seq = sequence(2);
  const auto want = reference_logits(2);
  auto st = model->new_state();
  std::vector<float> logits;
  model->forward(*st, std::span<const int32_t>(seq.data(), 20), logits, false);
  const double scale = test::max_abs(want.data);
  ASSERT_LE(test::max_rel_diff(logits.data(), want.data.data() + 19 * V, size_t(V), scale), kParityBound);
  for (size_t t = 20; t < seq.size(); t++) {
    model->forward(*st, std::span<const int32_t>(&seq[t], 1), logits, false);
    ASSERT_LE(test::max_rel_diff(logits.data(), want.data.data() + t * V, size_t(V), scale), kParityBound)
        << "decode step at position " << t;
  }
}

TEST_P(Qwen4Parity, StateCloneContinuesIdentically) {
  // A cloned state is an independent copy: both continue to the same logits, bit for bit.
  const auto seq = sequence(1);
  auto st = model->new_state();
  std::vector<float> a, b;
  model->forward(*st, std::span<const int32_t>(seq.data(), 30), a, false);
  auto copy = st->clone();
  model->forward(*st, std::span<const int32_t>(seq.data() + 30, 10), a, true);
  model->forward(*copy, std::span<const int32_t>(seq.data() + 30, 10), b, true);
  EXPECT_EQ(a, b);
}

TEST_P(Qwen4Parity, GreedyTokensMatchWhileMarginIsClear) {
  const auto prompt = ref["greedy"]["prompt"].get<std::vector<int32_t>>();
  const auto want = ref["greedy"]["tokens"].get<std::vector<int32_t>>();
  const auto margins = ref["greedy"]["margins"].get<std::vector<double>>();
  auto st = model->new_state();
  std::vector<float> logits;
  model->forward(*st, prompt, logits, false);
  size_t compared = 0;
  for (size_t i = 0; i < want.size() && margins[i] > test::kMarginClear; i++, compared++) {
    const int32_t tok = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ASSERT_EQ(tok, want[i]) << "greedy step " << i;
    model->forward(*st, std::span<const int32_t>(&want[i], 1), logits, false);
  }
  EXPECT_GE(compared, 8u) << "the fixture's margins are too small to test greedy decoding";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Qwen4Parity, ::testing::ValuesIn(test::qwen4_fixture_names()));

}  // namespace
}  // namespace ds4
