// A malformed or unsupported tokenizer.json is a ds4::Error of kind Tokenizer whose message names the
// file and says what is wrong; so is input that is not UTF-8.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "support/tokenizer_fixtures.h"

namespace ds4::test {
namespace {

// A minimal valid byte-level BPE file: two characters and one merge.
nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "added_tokens": [], "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
  })");
}

std::string write(const std::string& name, const std::string& text) {
  std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// Loads `text` and expects a Tokenizer error mentioning the file and every one of `needles`.
void expect_error(const std::string& name, const std::string& text, std::vector<std::string> needles) {
  std::string path = write(name, text);
  try {
    text::Tokenizer::from_file(path);
    ADD_FAILURE() << name << ": loaded without error";
  } catch (const ds4::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Tokenizer) << e.what();
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "message lacks '" << n << "': " << msg;
  }
}

TEST(TokenizerErrors, MinimalFileLoads) {
  auto tok = text::Tokenizer::from_file(write("minimal.json", minimal().dump()));
  EXPECT_EQ(tok.encode("ab"), std::vector<int32_t>{2});
}

TEST(TokenizerErrors, MissingFile) {
  std::string path = temp_path("does_not_exist.json");
  try {
    text::Tokenizer::from_file(path);
    ADD_FAILURE();
  } catch (const ds4::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Tokenizer);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, NotJson) { expect_error("not_json.json", "{\"model\": {\"type\": \"BPE\", ", {"not valid JSON"}); }

TEST(TokenizerErrors, NotAnObject) { expect_error("array.json", "[1, 2, 3]", {"object"}); }

TEST(TokenizerErrors, MissingModel) {
  auto j = minimal();
  j.erase("model");
  expect_error("no_model.json", j.dump(), {"model"});
}

TEST(TokenizerErrors, UnknownModelType) {
  auto j = minimal();
  j["model"]["type"] = "WordPiece";
  expect_error("wordpiece.json", j.dump(), {"model.type", "WordPiece"});
}

TEST(TokenizerErrors, MissingVocab) {
  auto j = minimal();
  j["model"].erase("vocab");
  expect_error("no_vocab.json", j.dump(), {"vocab"});
}

TEST(TokenizerErrors, MergeOfUnknownToken) {
  auto j = minimal();
  j["model"]["merges"] = {"a c"};
  expect_error("bad_merge.json", j.dump(), {"model.merges[0]", "'c'"});
}

TEST(TokenizerErrors, MalformedMerge) {
  auto j = minimal();
  j["model"]["merges"] = {"a b c"};
  expect_error("merge_three.json", j.dump(), {"model.merges[0]"});
}

TEST(TokenizerErrors, NonIntegerId) {
  auto j = minimal();
  j["model"]["vocab"]["a"] = "zero";
  expect_error("string_id.json", j.dump(), {"model.vocab", "'a'"});
}

TEST(TokenizerErrors, UnknownPreTokenizer) {
  auto j = minimal();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error("whitespace.json", j.dump(), {"pre_tokenizer.type", "Whitespace"});
}

TEST(TokenizerErrors, RegexThatDoesNotCompile) {
  auto j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}, {"invert", false}};
  expect_error("bad_regex.json", j.dump(), {"pre_tokenizer.pattern", "(unclosed"});
}

TEST(TokenizerErrors, UnknownNormalizerAndDecoder) {
  auto j = minimal();
  j["normalizer"] = {{"type", "Precompiled"}};
  expect_error("precompiled.json", j.dump(), {"normalizer.type", "Precompiled"});
  j = minimal();
  j["decoder"] = {{"type", "CTC"}};
  expect_error("ctc.json", j.dump(), {"decoder.type", "CTC"});
}

TEST(TokenizerErrors, AddedTokenWithoutContent) {
  auto j = minimal();
  j["added_tokens"] = {{{"id", 3}, {"special", true}}};
  expect_error("no_content.json", j.dump(), {"added_tokens[0]", "content"});
}

TEST(TokenizerErrors, InvalidUtf8Input) {
  auto tok = text::Tokenizer::from_file(write("minimal_utf8.json", minimal().dump()));
  try {
    tok.encode("ab\xC3(");
    ADD_FAILURE();
  } catch (const ds4::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Tokenizer);
    EXPECT_NE(std::string(e.what()).find("offset 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ds4::test
