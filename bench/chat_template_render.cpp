// How long rendering a prompt with a real chat template takes, per conversation length: the server
// renders once per request, so this is latency added before prefill. Prints a table.
// Usage: bench_chat_template_render [TOKENIZER_CACHE]  (default $DS4_TOKENIZER_CACHE or ~/.cache/ds4/tokenizers)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "text/chat_template.h"

namespace {

using json = nlohmann::ordered_json;

json conversation(int turns) {
  json tool = {{"type", "function"},
               {"function",
                {{"name", "get_weather"},
                 {"description", "Get the weather"},
                 {"parameters",
                  {{"type", "object"},
                   {"properties", {{"city", {{"type", "string"}}}, {"days", {{"type", "integer"}}}}},
                   {"required", {"city"}}}}}}};
  json messages = json::array({{{"role", "system"}, {"content", "You are a helpful assistant."}}});
  for (int i = 0; i < turns; ++i) {
    std::string n = std::to_string(i);
    messages.push_back({{"role", "user"}, {"content", "Question " + n + ": what is the weather like in Paris today?"}});
    messages.push_back({{"role", "assistant"},
                        {"content", ""},
                        {"tool_calls", json::array({{{"type", "function"},
                                                     {"function", {{"name", "get_weather"},
                                                                   {"arguments", {{"city", "Paris"}, {"days", i}}}}}}})}});
    messages.push_back({{"role", "tool"}, {"content", "{\"temperature\": 21, \"sky\": \"clear\"}"}});
    messages.push_back({{"role", "assistant"}, {"content", "It is 21 degrees and clear in Paris (" + n + ")."}});
  }
  return {{"messages", messages}, {"tools", json::array({tool})}, {"add_generation_prompt", true}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string cache;
  if (argc > 1) cache = argv[1];
  else if (const char* e = std::getenv("DS4_TOKENIZER_CACHE")) cache = e;
  else cache = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/ds4/tokenizers";
  std::printf("%-12s %8s %10s %12s %12s\n", "template", "messages", "bytes", "us/render", "MB/s");
  for (const char* model : {"qwen3", "deepseek_v3"}) {
    ds4::text::ModelChatTemplate tmpl;
    try {
      tmpl = ds4::text::ModelChatTemplate::load(cache + "/" + model);
    } catch (const ds4::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    for (int turns : {1, 10, 100, 1000}) {
      json request = conversation(turns);
      if (std::string(model) == "deepseek_v3") {
        // DeepSeek-V3's template wants string arguments and null content next to tool calls.
        for (auto& m : request["messages"]) {
          if (!m.contains("tool_calls")) continue;
          m["content"] = nullptr;
          for (auto& c : m["tool_calls"]) c["function"]["arguments"] = c["function"]["arguments"].dump();
        }
      }
      std::string out = tmpl.render(request);
      int reps = turns >= 1000 ? 5 : turns >= 100 ? 50 : 500;
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) out = tmpl.render(request);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
      std::printf("%-12s %8zu %10zu %12.1f %12.1f\n", model, request["messages"].size(), out.size(), us,
                  static_cast<double>(out.size()) / us);
    }
  }
  return 0;
}
