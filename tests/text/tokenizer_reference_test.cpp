// Encoding against HF `tokenizers` 0.23.2: for every test string, our ids must equal the reference ids
// (tools/oracle/tokenizer_reference.py). Covers the real Qwen3 and DeepSeek-V3 files, Qwen3 with the
// Qwen3.5 \p{M} split regex, and synthetic files for the features the real ones do not use.
#include <gtest/gtest.h>

#include "support/tokenizer_fixtures.h"

namespace ds4::test {
namespace {

std::string tokens_of(const text::Tokenizer& tok, const std::vector<int32_t>& ids, size_t from) {
  std::string out;
  for (size_t i = from; i < ids.size() && i < from + 8; ++i) {
    try {
      out += show(tok.id_to_token(ids[i]), 40) + " ";
    } catch (const std::exception&) {
      out += "<unknown id> ";
    }
  }
  return out;
}

void expect_reference(const std::string& tokenizer_name, const std::string& reference_name, bool add_special) {
  auto ref = reference_ids(reference_name);
  if (!ref) GTEST_SKIP() << missing_reference(reference_name);
  const auto& strings = test_strings();
  ASSERT_EQ(ref->size(), strings.size()) << reference_name << " does not match strings.jsonl (regenerate it)";
  const text::Tokenizer& tok = tokenizer(tokenizer_name);
  size_t failures = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    std::vector<int32_t> got = tok.encode(strings[i], add_special);
    const auto& want = (*ref)[i];
    if (got == want) continue;
    if (++failures > 10) continue;
    size_t d = 0;
    while (d < got.size() && d < want.size() && got[d] == want[d]) ++d;
    ADD_FAILURE() << tokenizer_name << " line " << i + 1 << ": " << show(strings[i]) << "\n  first difference at id #" << d
                  << "\n  want " << show(want) << "\n  got  " << show(got) << "\n  want tokens from there: "
                  << tokens_of(tok, want, d) << "\n  got tokens from there:  " << tokens_of(tok, got, d);
  }
  EXPECT_EQ(failures, 0u) << tokenizer_name << ": " << failures << " of " << strings.size()
                          << " strings differ from the reference";
}

TEST(TokenizerReference, Qwen3) { expect_reference("qwen3", "qwen3_ids", false); }
TEST(TokenizerReference, DeepSeekV3) { expect_reference("deepseek_v3", "deepseek_v3_ids", false); }
TEST(TokenizerReference, Qwen3WithQwen35MarkRegex) { expect_reference("qwen3_marks", "qwen3_marks_ids", false); }

class TokenizerReferenceSynthetic : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerReferenceSynthetic, WithoutSpecialTokens) { expect_reference(GetParam(), GetParam() + "_ids", false); }
TEST_P(TokenizerReferenceSynthetic, WithSpecialTokens) {
  expect_reference(GetParam(), GetParam() + "_ids_special", true);
}

INSTANTIATE_TEST_SUITE_P(TokenizerFiles, TokenizerReferenceSynthetic, ::testing::ValuesIn(synthetic_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ds4::test
