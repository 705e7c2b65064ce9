// StopMatcher: hold-back of partial matches, matches across pieces, overlapping stop strings, flush and
// UTF-8. Besides hand-written cases, a whole-text reference (scan the finished text once for the stop
// that ends first) checks that every way of cutting the text into pieces gives the same output.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/pcg64.h"
#include "engine/stop_strings.h"

namespace {

using ds4::engine::StopMatcher;

struct Outcome {
  std::string text;
  std::optional<size_t> stop;  // index of the stop string, if one completed
  bool operator==(const Outcome&) const = default;
};

// The reference: the first end offset at which some stop string ends, the longest of those; the
// output is the text before it. Written as the definition, with no streaming at all.
Outcome whole_text_reference(const std::string& text, const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end) {
    std::optional<size_t> best;
    for (size_t i = 0; i < stops.size(); ++i) {
      const auto& s = stops[i];
      if (s.empty() || s.size() > end || text.compare(end - s.size(), s.size(), s) != 0) continue;
      if (!best || s.size() > stops[*best].size()) best = i;
    }
    if (best) return {text.substr(0, end - stops[*best].size()), best};
  }
  return {text, std::nullopt};
}

// Streams `pieces` through a matcher, checking on the way that nothing is emitted after a stop.
Outcome stream(const std::vector<std::string>& pieces, const std::vector<std::string>& stops) {
  StopMatcher m(stops);
  Outcome out;
  for (const auto& p : pieces) {
    const auto f = m.feed(p);
    if (out.stop) {
      EXPECT_TRUE(f.text.empty() && f.stopped);
      continue;
    }
    out.text += f.text;
    if (f.stopped) out.stop = f.stop_index;
  }
  const std::string rest = m.flush();
  if (out.stop) {
    EXPECT_TRUE(rest.empty()) << "flush after a stop released '" << rest << "'";
  }
  out.text += rest;
  return out;
}

bool is_utf8_boundary(const std::string& s, size_t i) {
  return i == s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

TEST(StopMatcher, HoldsBackAPartialMatchUntilItDiverges) {
  StopMatcher m({"</end>"});
  auto f = m.feed("hello </e");
  EXPECT_EQ(f.text, "hello ");
  EXPECT_FALSE(f.stopped);
  EXPECT_EQ(m.held(), "</e");
  f = m.feed("x");
  EXPECT_EQ(f.text, "</ex");
  EXPECT_EQ(m.held(), "");
}

TEST(StopMatcher, MatchAcrossPiecesDropsTheStopAndWhatFollows) {
  StopMatcher m({"STOP", "</end>"});
  EXPECT_EQ(m.feed("foo</").text, "foo");
  const auto f = m.feed("end>bar");
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.stop_index, 1u);
  EXPECT_EQ(f.text, "");
  EXPECT_TRUE(m.stopped());
  EXPECT_TRUE(m.feed("more").stopped);
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, TextBeforeTheStopInTheSamePieceIsReleased) {
  StopMatcher m({"STOP"});
  const auto f = m.feed("abc STOP def");
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.text, "abc ");
}

TEST(StopMatcher, FlushReleasesTheHeldText) {
  StopMatcher m({"</end>"});
  EXPECT_EQ(m.feed("x </e").text, "x ");
  EXPECT_EQ(m.flush(), "</e");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, TheStopThatEndsFirstWinsThenTheLongest) {
  // "bc" ends before "abcd" does; "abc" and "bc" end together and the longer one takes more text.
  EXPECT_EQ(stream({"xabcd"}, {"abcd", "bc"}), (Outcome{"xa", 1}));
  EXPECT_EQ(stream({"xabcd"}, {"bc", "abc"}), (Outcome{"x", 1}));
  // A self-overlapping stop string: "aab" inside "aaab".
  EXPECT_EQ(stream({"a", "a", "a", "b"}, {"aab"}), (Outcome{"a", 0}));
}

TEST(StopMatcher, NoStopStringsPassesTextThroughButNeverHalfACharacter) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("ab").text, "ab");
  EXPECT_EQ(m.feed("\xE2\x82").text, "");  // first two bytes of U+20AC
  EXPECT_EQ(m.feed("\xAC!").text, "\xE2\x82\xAC!");
  EXPECT_EQ(m.feed("\xF0\x9F").text, "");  // half of a 4-byte character, released raw at the end
  EXPECT_EQ(m.flush(), "\xF0\x9F");
}

TEST(StopMatcher, MultiByteStopStrings) {
  StopMatcher m({"\xC3\xA9t\xC3\xA9"});  // "été"
  EXPECT_EQ(m.feed("caf\xC3").text, "caf");
  EXPECT_EQ(m.feed("\xA9 \xC3").text, "\xC3\xA9 ");
  EXPECT_EQ(m.feed("\xA9t").text, "");
  const auto f = m.feed("\xC3\xA9 fini");
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.text, "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  EXPECT_EQ(stream({"abc"}, {""}), (Outcome{"abc", std::nullopt}));
  EXPECT_EQ(stream({"abc"}, {"", "c"}), (Outcome{"ab", 1}));
}

TEST(StopMatcher, EveryCutOfTheTextGivesTheReferenceOutput) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"xxabcabd", {"abd", "ca"}},
      {"aaaab", {"aab", "aaa"}},
      {"hello </end> world", {"</end>", "world"}},
      {"caf\xC3\xA9 \xE2\x82\xAC 12", {"\xE2\x82\xAC 1", "12"}},
      {"abababx", {"abx", "babx"}},
      {"no stop in here", {"zz", "here!"}},
      {"stop", {"stop"}},
  };
  for (const auto& [text, stops] : cases) {
    const Outcome want = whole_text_reference(text, stops);
    // Every subset of the n-1 cut points: all 2^(n-1) ways of splitting the text.
    const size_t cuts = text.size() - 1;
    for (uint32_t mask = 0; mask < (1u << cuts); ++mask) {
      std::vector<std::string> pieces(1);
      for (size_t i = 0; i < text.size(); ++i) {
        pieces.back() += text[i];
        if (i < cuts && (mask >> i & 1)) pieces.emplace_back();
      }
      ASSERT_EQ(stream(pieces, stops), want) << "text '" << text << "' mask " << mask;
    }
  }
}

TEST(StopMatcher, RandomStreamsMatchTheReferenceAndEmitOnlyWholeCharacters) {
  // Small alphabets make partial and overlapping matches frequent; the random source is the request
  // stream generator, so the cases are the same on every run.
  ds4::engine::Pcg64 rng(7);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng.next_double() * static_cast<double>(n)); };
  const std::vector<std::string> alphabet = {"a", "b", "\xC3\xA9", "\xE2\x82\xAC"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::string> stops(1 + pick(3));
    for (auto& s : stops) {
      for (size_t k = 1 + pick(3); k > 0; --k) s += alphabet[pick(alphabet.size())];
    }
    std::string text;
    for (size_t k = pick(16); k > 0; --k) text += alphabet[pick(alphabet.size())];
    std::vector<std::string> pieces(1);
    for (char c : text) {
      pieces.back() += c;
      if (pick(3) == 0) pieces.emplace_back();
    }
    // Pieces are cut at any byte, but what is emitted must end on a character boundary of the text,
    // and the matcher holds no more than a stop string's length plus an incomplete character.
    size_t max_stop = 0;
    for (const auto& s : stops) max_stop = std::max(max_stop, s.size());
    StopMatcher m(stops);
    size_t emitted = 0;
    for (const auto& p : pieces) {
      const auto f = m.feed(p);
      emitted += f.text.size();
      if (f.stopped) break;
      EXPECT_TRUE(is_utf8_boundary(text, emitted)) << "trial " << trial << " emitted " << emitted;
      EXPECT_LT(m.held().size(), max_stop + 4) << "trial " << trial;
    }
    ASSERT_EQ(stream(pieces, stops), whole_text_reference(text, stops)) << "trial " << trial << " text " << text;
  }
}

}  // namespace
