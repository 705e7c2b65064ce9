// ReasoningParser: the split of known outputs, and the same split however the text is cut into pieces.
#include <gtest/gtest.h>

#include "server/reasoning_parser.h"

namespace ds4::server {
namespace {

ReasoningSplit run(const std::vector<std::string>& pieces, bool starts_inside) {
  ReasoningParser p("<think>", "</think>", starts_inside);
  ReasoningSplit all;
  for (const auto& s : pieces) {
    auto o = p.feed(s);
    all.reasoning += o.reasoning;
    all.content += o.content;
  }
  auto o = p.finish();
  all.reasoning += o.reasoning;
  all.content += o.content;
  return all;
}

// Every way of cutting `text` into single characters, and into two pieces at every offset.
void expect_split_invariant(const std::string& text, bool starts_inside, const ReasoningSplit& want) {
  auto whole = run({text}, starts_inside);
  EXPECT_EQ(whole.reasoning, want.reasoning) << text;
  EXPECT_EQ(whole.content, want.content) << text;
  std::vector<std::string> chars;
  for (char c : text) chars.push_back(std::string(1, c));
  auto bychar = run(chars, starts_inside);
  EXPECT_EQ(bychar.reasoning, want.reasoning) << "char by char: " << text;
  EXPECT_EQ(bychar.content, want.content) << "char by char: " << text;
  for (size_t i = 0; i <= text.size(); ++i) {
    auto two = run({text.substr(0, i), text.substr(i)}, starts_inside);
    EXPECT_EQ(two.reasoning, want.reasoning) << "cut at " << i << ": " << text;
    EXPECT_EQ(two.content, want.content) << "cut at " << i << ": " << text;
  }
}

TEST(ReasoningParser, SplitsThinkBlockFromAnswer) {
  expect_split_invariant("<think>\nLet me add.\n</think>\n\nThe answer is 4.", false, {"Let me add.\n", "The answer is 4."});
}

TEST(ReasoningParser, LeadingWhitespaceBeforeOpenTag) {
  expect_split_invariant("\n <think>hmm</think>ok", false, {"hmm", "ok"});
}

TEST(ReasoningParser, NoThinkBlockIsAllContent) {
  expect_split_invariant("Hello <think>not reasoning</think>", false, {"", "Hello <think>not reasoning</think>"});
  expect_split_invariant("<thinking>", false, {"", "<thinking>"});
}

TEST(ReasoningParser, PromptOpenedTheBlock) {
  expect_split_invariant("\nstep one\n</think>\n\nDone", true, {"step one\n", "Done"});
}

TEST(ReasoningParser, UnfinishedBlockIsReasoning) {
  expect_split_invariant("<think>still thinking </thi", false, {"still thinking </thi", ""});
}

TEST(ReasoningParser, UnfinishedOpenTagIsContent) {
  expect_split_invariant("<thi", false, {"", "<thi"});
  expect_split_invariant("  ", false, {"", "  "});
}

TEST(ReasoningParser, EmptyThinkBlock) {
  expect_split_invariant("<think>\n\n</think>\n\nHi", false, {"", "Hi"});
}

TEST(ReasoningParser, UnicodeSurvivesAnyCut) {
  expect_split_invariant("<think>é😀</think>日本", false, {"é😀", "日本"});
}

}  // namespace
}  // namespace ds4::server
