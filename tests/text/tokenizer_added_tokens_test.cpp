// Added and special tokens of the real files: ids, lookups and "special" as the file lists them (the file,
// read here with a plain JSON parser, is the reference), and every added token is cut out of running
// text as one id, the text around it tokenized on its own (HF's added-vocabulary split).
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "support/tokenizer_fixtures.h"

namespace ds4::test {
namespace {

nlohmann::json file_of(const std::string& name) {
  std::ifstream in(tokenizer_cache() + "/" + name + "/tokenizer.json");
  return nlohmann::json::parse(in);
}

class TokenizerAddedTokens : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerAddedTokens, LookupsFollowTheFile) {
  const auto& tok = tokenizer(GetParam());
  nlohmann::json doc = file_of(GetParam());
  int64_t max_id = -1;
  for (const auto& [token, id] : doc["model"]["vocab"].items()) max_id = std::max<int64_t>(max_id, id.get<int64_t>());
  for (const auto& t : doc["added_tokens"]) {
    int32_t id = t["id"];
    std::string content = t["content"];
    max_id = std::max<int64_t>(max_id, id);
    EXPECT_EQ(tok.token_to_id(content), id) << content;
    EXPECT_EQ(tok.id_to_token(id), content);
    EXPECT_EQ(tok.is_special(id), t["special"].get<bool>()) << content;
  }
  EXPECT_EQ(tok.vocab_size(), static_cast<size_t>(max_id + 1));
  // Ordinary vocabulary entries are not special.
  auto hello = tok.token_to_id("hello");
  ASSERT_TRUE(hello.has_value());
  EXPECT_FALSE(tok.is_special(*hello));
  EXPECT_EQ(tok.id_to_token(*hello), "hello");
  EXPECT_FALSE(tok.token_to_id("no such token, surely").has_value());
  EXPECT_THROW(tok.id_to_token(static_cast<int32_t>(tok.vocab_size()) + 1000), ds4::Error);
}

TEST_P(TokenizerAddedTokens, AreCutOutOfRunningText) {
  const auto& tok = tokenizer(GetParam());
  nlohmann::json doc = file_of(GetParam());
  const std::string before = "Say ", after = "now\n";
  std::vector<int32_t> head = tok.encode(before), tail = tok.encode(after);
  for (const auto& t : doc["added_tokens"]) {
    std::string content = t["content"];
    std::vector<int32_t> want = head;
    want.push_back(t["id"].get<int32_t>());
    want.insert(want.end(), tail.begin(), tail.end());
    EXPECT_EQ(tok.encode(before + content + after), want) << content;
    EXPECT_EQ(tok.encode(content), std::vector<int32_t>{t["id"].get<int32_t>()}) << content;
    EXPECT_EQ(tok.decode(want, /*skip_special_tokens=*/true), t["special"].get<bool>() ? before + after : before + content + after);
  }
}

INSTANTIATE_TEST_SUITE_P(TokenizerRealFiles, TokenizerAddedTokens, ::testing::Values("qwen3", "deepseek_v3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ds4::test
