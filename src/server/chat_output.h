// The assistant message taking shape as text streams out of the engine: reasoning (ReasoningParser), then
// tool calls out of the content (ToolCallParser). One object serves a streamed and a whole response
// alike, so both see the same split: a whole response is the concatenation of the deltas.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace ds4::server {

// The markup a model family writes around reasoning and tool calls; an empty tag turns that parsing off.
struct OutputFormat {
  std::string think_open, think_close;
  std::string tool_open, tool_close;
};

struct ToolCall {
  std::string id;  // "call_..." unique per call
  std::string name;
  std::string arguments;
};

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;  // complete calls, streamed whole when they close
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  void append(ChatDelta&& d);
};

struct ChatOutputOptions {
  OutputFormat format;
  bool starts_in_reasoning = false;      // the prompt left a think block open
  bool parse_tools = false;              // tools were given and tool_choice is not "none"
  std::vector<std::string> tool_names;   // calls to other names are content
  std::string forced_prefix;             // text the server put at the start of the answer (a forced call)
};

class ChatOutput {
 public:
  explicit ChatOutput(ChatOutputOptions options);
  ChatDelta feed(std::string_view text);
  ChatDelta finish();
  bool made_tool_calls() const { return tools_ && tools_->calls_made() > 0; }

 private:
  void add_content(std::string_view text, bool final, ChatDelta& out);

  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
  ChatDelta pending_;  // what the forced prefix produced, released with the first feed
};

// A fresh tool call id ("call_" and 24 random alphanumerics).
std::string new_tool_call_id();

}  // namespace ds4::server
