// libFuzzer target: any bytes given to the chat and completion request parsers either parse or raise an
// ApiError with a 4xx status; nothing else escapes, and nothing crashes or hangs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/api_error.h"
#include "server/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (int endpoint = 0; endpoint < 2; ++endpoint) {
    try {
      if (endpoint == 0) {
        auto r = ds4::server::parse_chat_request(body);
        // What the server does next with a parsed request: serialise its parts.
        (void)r.messages.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        (void)r.tools.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      } else {
        (void)ds4::server::parse_completion_request(body);
      }
    } catch (const ds4::server::ApiError& e) {
      if (e.status() < 400 || e.status() >= 500) std::abort();
      (void)e.body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  return 0;
}
