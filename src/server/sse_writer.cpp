#include "server/sse_writer.h"

namespace ds4::server {

// dump_json never emits a raw newline (strings escape it), so one "data:" line carries the whole event.
std::string sse_data(const ojson& event) { return "data: " + dump_json(event) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string sse_comment(const std::string& text) {
  std::string out = ": ";
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out + "\n\n";
}

}  // namespace ds4::server
