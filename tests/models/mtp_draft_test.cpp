// The MTP draft head of the shipped model (docs/mtp.md). Teacher-forced on prose, its top-1 draft for
// x_{s+2} must agree with the main model's top-1 at s+1 about as often as training measured with the
// reference implementation (models/README.md: 62.6 % on held-out text; a wrong head agrees by chance, near
// 0 % with 8192 tokens). Where the oracle fixture exists, its logits must match transformers' MTPHead.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "models/model.h"
#include "models/qwen4_fixture.h"
#include "text/tokenizer.h"

namespace ds4 {
namespace {

const std::string kModel = test::source_dir() + "/models/tiny-flash-next";

int32_t argmax(const float* p, int64_t n) { return int32_t(std::max_element(p, p + n) - p); }

TEST(MtpDraft, TeacherForcedAgreementWithTheMainModelIsAsInTraining) {
  auto model = load_model(kModel);
  ASSERT_TRUE(model->has_draft_head());
  auto tok = text::Tokenizer::from_file(kModel + "/tokenizer.json");
  const int64_t V = model->info().vocab_size;
  int agree = 0, total = 0;
  for (const char* text :
       {"It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
        "of a wife. However little known the feelings or views of such a man may be on his first entering a "
        "neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is "
        "considered the rightful property of some one or other of their daughters.",
        "And God said, Let there be light: and there was light. And God saw the light, that it was good: and God "
        "divided the light from the darkness. And God called the light Day, and the darkness he called Night."}) {
    const auto ids = tok.encode(text);
    auto st = model->new_state();
    std::vector<float> logits, draft;
    model->forward(*st, ids, logits, true);
    model->draft(*st, std::span<const int32_t>(ids.data() + 1, ids.size() - 1), draft, true);
    for (size_t s = 0; s + 2 < ids.size(); s++, total++)
      agree += argmax(draft.data() + s * V, V) == argmax(logits.data() + (s + 1) * V, V);
  }
  const double rate = double(agree) / total;
  std::printf("MTP teacher-forced agreement: %d/%d = %.1f%%\n", agree, total, 100 * rate);
  EXPECT_GE(rate, 0.45);
}

TEST(MtpDraft, ChunkedDraftingEqualsOnePass) {
  // The head's own cache: feeding the pairs in pieces gives the same logits as all at once.
  auto model = load_model(kModel);
  const std::vector<int32_t> ids = {562, 348, 515, 601, 614, 257, 7207, 11, 290, 267, 809, 4385, 407};
  auto a = model->new_state(), b = model->new_state();
  std::vector<float> la, lb, tmp;
  model->forward(*a, std::span<const int32_t>(ids.data(), 12), tmp, false);
  model->draft(*a, std::span<const int32_t>(ids.data() + 1, 12), la, true);
  model->forward(*b, std::span<const int32_t>(ids.data(), 5), tmp, false);
  model->draft(*b, std::span<const int32_t>(ids.data() + 1, 5), lb, true);
  model->forward(*b, std::span<const int32_t>(ids.data() + 5, 7), tmp, false);
  model->draft(*b, std::span<const int32_t>(ids.data() + 6, 7), tmp, true);
  lb.insert(lb.end(), tmp.begin(), tmp.end());
  ASSERT_EQ(la.size(), lb.size());
  const double scale = test::max_abs(la);
  EXPECT_LE(test::max_rel_diff(lb.data(), la.data(), la.size(), scale), 1e-5);
}

TEST(MtpDraft, LogitsMatchTransformersMtpHead) {
  const std::string dir = test::fixtures_dir() + "/default_model";
  if (!std::filesystem::exists(dir + "/reference.json"))
    GTEST_SKIP() << "no oracle fixture yet: run tools/oracle/make_default_model_reference.py on the GPU machine";
  auto model = load_model(kModel);
  const auto ref = read_json_file(dir + "/reference.json");
  const int64_t V = model->info().vocab_size;
  for (size_t i = 0; i < ref["sequences"].size(); i++) {
    const auto ids = ref["sequences"][i].get<std::vector<int32_t>>();
    const auto want = read_npy_f32(dir + "/logits_" + std::to_string(i) + ".npy");
    const auto want_mtp = read_npy_f32(dir + "/mtp_logits_" + std::to_string(i) + ".npy");
    // The fixture keeps the last rows of each matrix only (reference.json says from which row).
    const int64_t from = ref["logit_rows_from"][i].get<int64_t>(), mtp_from = ref["mtp_rows_from"][i].get<int64_t>();
    auto st = model->new_state();
    std::vector<float> logits, draft;
    model->forward(*st, ids, logits, true);
    ASSERT_EQ(int64_t(logits.size()) - from * V, int64_t(want.data.size())) << "sequence " << i;
    EXPECT_LE(test::max_rel_diff(logits.data() + from * V, want.data.data(), want.data.size(), test::max_abs(want.data)),
              test::kParityBound) << "main logits, sequence " << i;
    model->draft(*st, std::span<const int32_t>(ids.data() + 1, ids.size() - 1), draft, true);
    ASSERT_EQ(int64_t(draft.size()), int64_t(ids.size() - 1) * V);
    ASSERT_EQ(int64_t(draft.size()) - mtp_from * V, int64_t(want_mtp.data.size())) << "sequence " << i;
    EXPECT_LE(test::max_rel_diff(draft.data() + mtp_from * V, want_mtp.data.data(), want_mtp.data.size(),
                                 test::max_abs(want_mtp.data)), test::kParityBound) << "MTP logits, sequence " << i;
  }
}

}  // namespace
}  // namespace ds4
