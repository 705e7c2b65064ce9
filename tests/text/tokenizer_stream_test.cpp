// StreamDecoder: fed ids one at a time, the concatenation of its outputs equals decode() of all of them,
// and no output ever ends inside a UTF-8 character.
#include <gtest/gtest.h>

#include "support/tokenizer_fixtures.h"
#include "text/stream_decoder.h"
#include "text/utf8.h"

namespace ds4::test {
namespace {

void expect_stream_equals_decode(const text::Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special,
                                 const std::string& what) {
  text::StreamDecoder stream(tok, skip_special);
  std::string joined;
  for (int32_t id : ids) {
    std::string part = stream.push(id);
    ASSERT_EQ(text::utf8::find_invalid(part), std::string::npos) << what << ": push emitted broken UTF-8";
    joined += part;
  }
  std::string tail = stream.flush();
  ASSERT_EQ(text::utf8::find_invalid(tail), std::string::npos) << what;
  joined += tail;
  ASSERT_EQ(joined, tok.decode(ids, skip_special)) << what << " ids " << show(ids);
}

TEST(TokenizerStream, EqualsDecodeOnEncodedStrings) {
  for (const char* name : {"qwen3", "deepseek_v3"}) {
    const auto& tok = tokenizer(name);
    for (const auto& s : test_strings()) expect_stream_equals_decode(tok, tok.encode(s), false, name + (": " + show(s)));
  }
}

TEST(TokenizerStream, EqualsDecodeOnArbitraryIds) {
  for (const auto& row : read_jsonl(tokenizer_fixtures() + "/decode_ids.jsonl")) {
    const auto& tok = tokenizer(row["tokenizer"]);
    auto ids = row["ids"].get<std::vector<int32_t>>();
    expect_stream_equals_decode(tok, ids, false, row.dump());
    expect_stream_equals_decode(tok, ids, true, "skipping specials: " + row.dump());
  }
}

TEST(TokenizerStream, EqualsDecodeOnSyntheticEncodings) {
  for (const auto& name : synthetic_names()) {
    const auto& tok = tokenizer(name);
    for (const auto& s : test_strings()) {
      auto ids = tok.encode(s, true);
      expect_stream_equals_decode(tok, ids, false, name + ": " + show(s));
      expect_stream_equals_decode(tok, ids, true, name + " skipping specials: " + show(s));
    }
  }
}

TEST(TokenizerStream, HoldsBackHalfCharactersAndStartsAfreshAfterFlush) {
  const auto& tok = tokenizer("qwen3");
  // U+1F600 as its four single-byte tokens, looked up by their GPT-2 byte-level spelling (F0 9F 98 80 are
  // written U+00F0 U+0141 U+013A U+0122).
  const char* spelled[] = {"\xC3\xB0", "\xC5\x81", "\xC4\xBA", "\xC4\xA2"};
  std::vector<int32_t> ids;
  for (const char* s : spelled) {
    auto id = tok.token_to_id(s);
    ASSERT_TRUE(id.has_value()) << s;
    ids.push_back(*id);
  }
  ASSERT_EQ(tok.decode(ids), "\xF0\x9F\x98\x80");
  text::StreamDecoder stream(tok);
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.push(ids[1]), "");
  EXPECT_EQ(stream.push(ids[2]), "");
  EXPECT_EQ(stream.push(ids[3]), "\xF0\x9F\x98\x80");
  // An unfinished character at flush becomes U+FFFD, as decode() makes it; the next push starts afresh.
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.flush(), std::string(text::utf8::kReplacement));
  EXPECT_EQ(stream.push(*tok.token_to_id("hello")), "hello");
}

}  // namespace
}  // namespace ds4::test
