// The regex engine's Unicode classes against Oniguruma's, the engine HF runs tokenizer.json patterns
// with: tools/oracle/tokenizer_reference.py records which code points onig puts in \p{L}, \p{N}, \p{M},
// \p{P}, \p{S}, \p{Nd}, \s and \w, and which X make "'X" match (?i:'s|'t|'m|'d). A difference here is a
// difference in pre-tokenization for text with those characters. Likewise the Lowercase normalizer against
// HF's on every code point (lowercase.json).
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "support/tokenizer_fixtures.h"
#include "text/json_node.h"
#include "text/normalizer.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace ds4::test {
namespace {

std::string ranges_text(const std::vector<std::pair<char32_t, char32_t>>& rs, size_t max = 30) {
  std::ostringstream o;
  for (size_t i = 0; i < rs.size() && i < max; ++i) o << std::hex << "U+" << uint32_t(rs[i].first) << "-U+" << uint32_t(rs[i].second) << " ";
  if (rs.size() > max) o << "... (" << std::dec << rs.size() << " ranges)";
  return o.str();
}

std::vector<std::pair<char32_t, char32_t>> to_ranges(const std::vector<char32_t>& cps) {
  std::vector<std::pair<char32_t, char32_t>> out;
  for (char32_t c : cps) {
    if (!out.empty() && out.back().second + 1 == c) {
      out.back().second = c;
    } else {
      out.push_back({c, c});
    }
  }
  return out;
}

class TokenizerUnicode : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = tokenizer_fixtures() + "/onig_classes.json";
    if (!file_exists(path)) GTEST_SKIP() << missing_reference("onig_classes (.json)");
    std::ifstream in(path);
    onig_ = nlohmann::json::parse(in);
  }
  nlohmann::json onig_;
};

TEST_F(TokenizerUnicode, ClassesMatchOniguruma) {
  // Every code point but the surrogates, each once, in order; and their byte offsets.
  std::string all;
  std::vector<char32_t> cps;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    cps.push_back(c);
    text::utf8::append(all, c);
  }
  const std::pair<const char*, const char*> classes[] = {{"L", "\\p{L}"}, {"N", "\\p{N}"},   {"M", "\\p{M}"},
                                                         {"P", "\\p{P}"}, {"S", "\\p{S}"},   {"Nd", "\\p{Nd}"},
                                                         {"s", "\\s"},    {"w", "\\w"}};
  for (const auto& [name, pattern] : classes) {
    std::set<char32_t> want;
    for (const auto& r : onig_[name]) {
      for (char32_t c = r[0].get<char32_t>(); c <= r[1].get<char32_t>(); ++c) want.insert(c);
    }
    std::vector<text::Regex::Match> matches;
    text::Regex(pattern).find_all(all, matches);
    std::set<char32_t> got;
    for (const auto& m : matches) {
      size_t i = m.begin;
      while (i < m.end) got.insert(text::utf8::next(all, i));
    }
    std::vector<char32_t> only_onig, only_ours;
    for (char32_t c : cps) {
      bool w = want.count(c), g = got.count(c);
      if (w && !g) only_onig.push_back(c);
      if (g && !w) only_ours.push_back(c);
    }
    EXPECT_TRUE(only_onig.empty() && only_ours.empty())
        << pattern << ": only Oniguruma matches " << ranges_text(to_ranges(only_onig)) << "\n  only we match "
        << ranges_text(to_ranges(only_ours));
  }
}

TEST_F(TokenizerUnicode, CaseInsensitiveContractionsMatchOniguruma) {
  std::string pairs;
  std::vector<char32_t> cps;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if ((c >= 0xD800 && c <= 0xDFFF) || c == '\'') continue;
    cps.push_back(c);
    pairs += '\'';
    text::utf8::append(pairs, c);
  }
  std::vector<text::Regex::Match> matches;
  text::Regex("(?i:'s|'t|'m|'d)").find_all(pairs, matches);
  std::vector<char32_t> got;
  for (const auto& m : matches) {
    size_t i = m.begin + 1;
    got.push_back(text::utf8::next(pairs, i));
  }
  std::vector<char32_t> want = onig_["fold_stmd"].get<std::vector<char32_t>>();
  EXPECT_EQ(to_ranges(got), to_ranges(want)) << "ours " << ranges_text(to_ranges(got)) << "\n onig "
                                             << ranges_text(to_ranges(want));
}

// lowercase.json lists what HF's Lowercase normalizer makes of each code point it changes. A complete file
// (the reference script's) pins every other code point as unchanged; a partial one (provisional) only
// its listed ones.
TEST(TokenizerLowercase, MatchesReferenceOnEveryCodePoint) {
  std::string path = tokenizer_fixtures() + "/lowercase.json";
  if (!std::ifstream(path).good()) GTEST_SKIP() << missing_reference("lowercase (.json)");
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  std::map<char32_t, std::vector<char32_t>> want;
  for (const auto& m : doc["mappings"]) want[m[0].get<char32_t>()] = m[1].get<std::vector<char32_t>>();
  ASSERT_FALSE(want.empty());
  const bool complete = doc.value("complete", false);
  if (!complete) std::cout << "[ NOTE ] " << path << " is partial (" << doc.value("source", "") << "): checking its "
                           << want.size() << " code points only\n";

  const nlohmann::json spec = {{"type", "Lowercase"}};
  const std::string file = "lowercase-test";
  auto lower = text::make_normalizer(text::JsonNode(spec, file, "normalizer"));
  std::vector<char32_t> wrong;
  size_t checked = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    auto it = want.find(c);
    if (!complete && it == want.end()) continue;
    std::string s, expected;
    text::utf8::append(s, c);
    if (it == want.end()) {
      expected = s;
    } else {
      for (char32_t t : it->second) text::utf8::append(expected, t);
    }
    lower->normalize(s);
    ++checked;
    if (s != expected) wrong.push_back(c);
  }
  EXPECT_GT(checked, complete ? 1000000u : 0u);
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " code points lowercase differently from HF: "
                             << ranges_text(to_ranges(wrong));
}

}  // namespace
}  // namespace ds4::test
