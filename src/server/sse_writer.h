// Server-sent events framing for streamed responses: "data: <json>\n\n" per event, "data: [DONE]\n\n" at
// the end, and comment lines (": ...") that clients ignore.
#pragma once
#include <string>

#include "server/response_builder.h"

namespace ds4::server {

std::string sse_data(const ojson& event);
std::string sse_done();
std::string sse_comment(const std::string& text);

}  // namespace ds4::server
