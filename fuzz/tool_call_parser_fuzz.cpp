// libFuzzer target: the tool-call parser over arbitrary model output, fed whole and cut into pieces at
// offsets taken from the input. Whatever the cut, the content and calls are the same, every call's
// arguments are a JSON object, and nothing crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tool_call_parser.h"

namespace {

ds4::server::ToolCallOutput run(const std::string& text, size_t step) {
  ds4::server::ToolCallParser p({});
  ds4::server::ToolCallOutput all;
  auto add = [&](ds4::server::ToolCallOutput o) {
    all.content += o.content;
    for (auto& c : o.calls) all.calls.push_back(std::move(c));
  };
  for (size_t i = 0; i < text.size(); i += step) add(p.feed(text.substr(i, step)));
  add(p.finish());
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 7;  // the first byte picks the piece size
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto whole = run(text, text.size() + 1);
  const auto pieces = run(text, step);
  if (whole.content != pieces.content || whole.calls.size() != pieces.calls.size()) std::abort();
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    if (whole.calls[i].name != pieces.calls[i].name || whole.calls[i].arguments != pieces.calls[i].arguments)
      std::abort();
    auto args = nlohmann::json::parse(whole.calls[i].arguments, nullptr, false);
    if (args.is_discarded() || !args.is_object()) std::abort();
  }
  (void)ds4::server::parse_tool_call_body(text, {"get_weather"});
  return 0;
}
