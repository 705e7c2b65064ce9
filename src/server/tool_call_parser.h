// Tool calls in the Qwen format, parsed out of streamed content:
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// Text outside the tags is content. A call whose body is not a JSON object with a string "name" (of a
// tool the request defined, when the list is given) and object "arguments" falls back to plain content,
// tags included, so nothing the model wrote is lost. Whitespace right before a call, and trailing whitespace
// of an output that made calls, is dropped. Incremental: the
// pieces of a stream and the whole text give the same content and calls.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::server {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object, serialised compactly
};

// The body between the tags; nullopt when it is not a valid call (see above). `known` empty: any name.
std::optional<ParsedToolCall> parse_tool_call_body(std::string_view body, const std::vector<std::string>& known);

struct ToolCallOutput {
  std::string content;
  std::vector<ParsedToolCall> calls;
};

class ToolCallParser {
 public:
  ToolCallParser(std::vector<std::string> known_names, std::string open_tag = "<tool_call>",
                 std::string close_tag = "</tool_call>");
  ToolCallOutput feed(std::string_view text);
  // End of output: an unclosed call is parsed as it stands (models may stop right after the JSON), else
  // it is content; held whitespace is content unless a call was made.
  ToolCallOutput finish();
  size_t calls_made() const { return calls_made_; }

 private:
  void emit_content(std::string_view text, ToolCallOutput& out);
  void close_call(std::string_view body, bool closed, ToolCallOutput& out);

  std::vector<std::string> known_;
  std::string open_, close_;
  bool inside_ = false;
  std::string held_;         // inside: the call body so far; outside: a possible open tag
  std::string space_;        // outside: trailing whitespace held in case a call follows
  size_t calls_made_ = 0;
};

}  // namespace ds4::server
