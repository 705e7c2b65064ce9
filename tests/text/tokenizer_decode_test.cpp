// Decoding: round trips on the real tokenizers, HF's decode of arbitrary id sequences (partial UTF-8
// byte tokens, special tokens, unknown ids) with and without skip_special_tokens, and the UTF-8 lossy
// conversion against CPython's bytes.decode("utf-8", "replace").
#include <gtest/gtest.h>

#include "support/tokenizer_fixtures.h"
#include "text/byte_level_alphabet.h"
#include "text/utf8.h"

namespace ds4::test {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

TEST(TokenizerUtf8, LossyConversionMatchesCPython) {
  for (const auto& row : read_jsonl(tokenizer_fixtures() + "/utf8_lossy.jsonl")) {
    std::string bytes = from_hex(row["hex"]), want = row["text"];
    std::string whole;
    EXPECT_EQ(text::utf8::append_lossy(whole, bytes), bytes.size());
    EXPECT_EQ(whole, want) << "bytes " << row["hex"];
    // Fed in two parts, holding back an unfinished character, it must give the same text.
    for (size_t cut = 0; cut <= bytes.size(); ++cut) {
      std::string head = bytes.substr(0, cut), out;
      size_t used = text::utf8::append_lossy(out, head, /*final=*/false);
      std::string rest = head.substr(used) + bytes.substr(cut);
      text::utf8::append_lossy(out, rest, /*final=*/true);
      ASSERT_EQ(out, want) << "bytes " << row["hex"] << " cut at " << cut;
    }
  }
}

// decode(encode(s)) gives back the normalized text: s itself for DeepSeek-V3 (no normalizer), and for
// Qwen3 (NFC) the normalized text HF's pre-tokenizer saw, read from the reference. Its pieces come out of
// Qwen3's ByteLevel pre-tokenizer, so they are spelled in the byte-level alphabet (" I" is "\u0120I"):
// mapped back to bytes, they concatenate to the NFC text.
TEST(TokenizerDecode, RoundTripsDeepSeekV3) {
  const auto& tok = tokenizer("deepseek_v3");
  for (const auto& s : test_strings()) EXPECT_EQ(tok.decode(tok.encode(s)), s) << show(s);
}

TEST(TokenizerDecode, RoundTripsQwen3ToNfc) {
  std::string path = tokenizer_fixtures() + "/qwen3_pretok.jsonl";
  if (!file_exists(path)) GTEST_SKIP() << missing_reference("qwen3_pretok");
  auto pieces = read_jsonl(path);
  const auto& strings = test_strings();
  ASSERT_EQ(pieces.size(), strings.size());
  const auto& tok = tokenizer("qwen3");
  for (size_t i = 0; i < strings.size(); ++i) {
    std::string normalized;
    for (const auto& p : pieces[i]) {
      const std::string piece = p.get<std::string>();
      ASSERT_TRUE(text::byte_level::decode(piece, normalized))
          << "line " << i + 1 << ": piece " << show(piece) << " is not in the byte-level alphabet";
    }
    EXPECT_EQ(tok.decode(tok.encode(strings[i])), normalized) << "line " << i + 1 << ": " << show(strings[i]);
  }
}

TEST(TokenizerDecode, MatchesReferenceForArbitraryIds) {
  std::string path = tokenizer_fixtures() + "/decode.jsonl";
  if (!file_exists(path)) GTEST_SKIP() << missing_reference("decode");
  auto inputs = read_jsonl(tokenizer_fixtures() + "/decode_ids.jsonl");
  auto want = read_jsonl(path);
  ASSERT_EQ(inputs.size(), want.size()) << "decode.jsonl does not match decode_ids.jsonl (regenerate it)";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& tok = tokenizer(inputs[i]["tokenizer"]);
    auto ids = inputs[i]["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids, false), want[i]["text"].get<std::string>()) << inputs[i].dump();
    EXPECT_EQ(tok.decode(ids, true), want[i]["text_skip"].get<std::string>()) << "skipping specials: " << inputs[i].dump();
  }
}

}  // namespace
}  // namespace ds4::test
