// ToolCallParser: Qwen <tool_call> blocks into calls, malformed ones back into content, the same result
// however the text is cut into pieces; parse_tool_call_body against nlohmann's own parse of the body.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"

namespace ds4::server {
namespace {

ToolCallOutput run(const std::vector<std::string>& pieces, const std::vector<std::string>& known) {
  ToolCallParser p(known);
  ToolCallOutput all;
  auto add = [&](ToolCallOutput o) {
    all.content += o.content;
    for (auto& c : o.calls) all.calls.push_back(c);
  };
  for (const auto& s : pieces) add(p.feed(s));
  add(p.finish());
  return all;
}

void expect_same(const ToolCallOutput& got, const ToolCallOutput& want, const std::string& what) {
  EXPECT_EQ(got.content, want.content) << what;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << what;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].name) << what;
    // Compare arguments as JSON values: the reference is independent of our serialisation.
    EXPECT_EQ(nlohmann::json::parse(got.calls[i].arguments), nlohmann::json::parse(want.calls[i].arguments)) << what;
  }
}

void expect_split_invariant(const std::string& text, const ToolCallOutput& want,
                            const std::vector<std::string>& known = {}) {
  expect_same(run({text}, known), want, "whole: " + text);
  std::vector<std::string> chars;
  for (char c : text) chars.push_back(std::string(1, c));
  expect_same(run(chars, known), want, "char by char: " + text);
  for (size_t i = 0; i <= text.size(); ++i)
    expect_same(run({text.substr(0, i), text.substr(i)}, known), want, "cut at " + std::to_string(i) + ": " + text);
}

TEST(ToolCallParser, OneCall) {
  expect_split_invariant("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                         {"", {{"get_weather", R"({"city":"Paris"})"}}});
}

TEST(ToolCallParser, TextThenTwoCalls) {
  expect_split_invariant(
      "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
      "\"arguments\": {\"x\": [1, 2]}}\n</tool_call>",
      {"Let me check.", {{"a", "{}"}, {"b", R"({"x":[1,2]})"}}});
}

TEST(ToolCallParser, MalformedCallIsContent) {
  const std::string bad = "<tool_call>\n{\"name\": \"a\", \"arguments\": {oops}\n</tool_call>";
  expect_split_invariant(bad, {bad, {}});
  const std::string no_name = "<tool_call>{\"arguments\": {}}</tool_call>";
  expect_split_invariant(no_name, {no_name, {}});
  const std::string not_object = "<tool_call>[1]</tool_call> after";
  expect_split_invariant(not_object, {not_object, {}});
}

TEST(ToolCallParser, UnknownToolIsContentWhenToolsAreListed) {
  const std::string t = "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>";
  expect_split_invariant(t, {t, {}}, {"get_weather"});
  expect_split_invariant(t, {"", {{"rm_rf", "{}"}}}, {"get_weather", "rm_rf"});
}

TEST(ToolCallParser, UnclosedCallAtTheEnd) {
  expect_split_invariant("<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": 1}}\n", {"", {{"a", R"({"k":1})"}}});
  expect_split_invariant("<tool_call>\n{\"name\": \"a\", \"argu", {"<tool_call>\n{\"name\": \"a\", \"argu", {}});
}

TEST(ToolCallParser, PartialTagsArePlainText) {
  expect_split_invariant("a < b and <tool", {"a < b and <tool", {}});
  expect_split_invariant("x <tool_cal y", {"x <tool_cal y", {}});
}

TEST(ToolCallParser, ArgumentsGivenAsAString) {
  expect_split_invariant(R"(<tool_call>{"name": "a", "arguments": "{\"q\": 2}"}</tool_call>)", {"", {{"a", R"({"q":2})"}}});
  const std::string not_json = R"(<tool_call>{"name": "a", "arguments": "nope"}</tool_call>)";
  expect_split_invariant(not_json, {not_json, {}});
}

TEST(ToolCallParser, WhitespaceAroundCallsIsDroppedElsewhereKept) {
  expect_split_invariant("  hello  ", {"  hello  ", {}});
  expect_split_invariant("hi\n\n<tool_call>{\"name\": \"a\"}</tool_call>\n\nbye\n",
                         {"hi\n\nbye", {{"a", "{}"}}});
}

TEST(ToolCallBody, MatchesReferenceParse) {
  const std::vector<std::string> bodies = {
      R"({"name": "f", "arguments": {"a": "é", "b": [true, null, 1.5], "c": {"d": {}}}})",
      R"(  {"name":"f","parameters":{"z":0}}  )",
      R"({"name": "f"})",
  };
  for (const auto& b : bodies) {
    auto call = parse_tool_call_body(b, {});
    ASSERT_TRUE(call) << b;
    auto ref = nlohmann::json::parse(b);
    EXPECT_EQ(call->name, ref["name"]);
    nlohmann::json args = ref.contains("arguments") ? ref["arguments"]
                          : ref.contains("parameters") ? ref["parameters"]
                                                        : nlohmann::json::object();
    EXPECT_EQ(nlohmann::json::parse(call->arguments), args) << b;
  }
  EXPECT_FALSE(parse_tool_call_body(R"({"name": 3})", {}));
  EXPECT_FALSE(parse_tool_call_body(R"({"name": ""})", {}));
  EXPECT_FALSE(parse_tool_call_body(R"({"name": "f", "arguments": 3})", {}));
  EXPECT_FALSE(parse_tool_call_body(std::string(100, '[') + std::string(100, ']'), {}));
}

}  // namespace
}  // namespace ds4::server
