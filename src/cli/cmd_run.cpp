// ds4 run: an interactive chat in the terminal. Each turn is rendered through the model's chat template
// with the whole conversation and streamed token by token as it is generated.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/default_model.h"
#include "core/error.h"
#include "engine/generation_defaults.h"
#include "engine/generator.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace {
struct Args {
  std::string model, system, backend = "cpu";
  int64_t max_tokens = 512;
  std::optional<double> temperature, top_p;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
};

void run(const Args& a) {
  const std::string dir = a.model.empty() ? ds4::cli::default_model_dir() : a.model;
  std::fprintf(stderr, "loading %s ...\n", dir.c_str());
  auto model = ds4::load_model(dir, [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); }, {a.backend});
  if (!std::filesystem::exists(dir + "/tokenizer.json"))
    throw ds4::Error(ds4::ErrorKind::InvalidArgument, dir + ": ds4 run needs tokenizer.json and a chat template");
  auto tokenizer = ds4::text::Tokenizer::from_file(dir + "/tokenizer.json");
  auto tmpl = ds4::text::ModelChatTemplate::load(dir);
  auto sampling = ds4::engine::generation_defaults(dir);
  if (a.temperature) sampling.temperature = *a.temperature;
  if (a.top_p) sampling.top_p = *a.top_p;
  if (a.top_k) sampling.top_k = *a.top_k;

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!a.system.empty()) messages.push_back({{"role", "system"}, {"content", a.system}});
  std::fprintf(stderr, "Type a message; /reset starts over, /exit or Ctrl-D quits.\n");
  std::string line;
  uint64_t turn = 0;
  while (true) {
    std::fputs("> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    if (line == "/reset") {
      messages.erase(messages.begin() + (a.system.empty() ? 0 : 1), messages.end());
      continue;
    }
    messages.push_back({{"role", "user"}, {"content", line}});
    ds4::engine::GenerationRequest req;
    req.prompt = tokenizer.encode(tmpl.render({{"messages", messages}, {"add_generation_prompt", true}}));
    req.max_tokens = a.max_tokens;
    req.sampling = sampling;
    if (a.seed) req.seed = *a.seed + turn++;
    auto res = ds4::engine::generate(*model, &tokenizer, req, [](const ds4::engine::TokenEvent& ev) {
      std::fputs(ev.text.c_str(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputs("\n", stdout);
    if (res.error) {
      std::fprintf(stderr, "error: %s: %s\n", ds4::error_kind_name(res.error->kind()), res.error->what());
      messages.erase(messages.end() - 1);
      continue;
    }
    messages.push_back({{"role", "assistant"}, {"content", res.text}});
  }
}

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("run", "Chat with a model in the terminal");
  sub->add_option("--model", a->model, "Model directory (default: the shipped model)");
  sub->add_option("--backend", a->backend, "Compute backend: cpu (reference) or cuda (when built with it)")->capture_default_str();
  sub->add_option("--system", a->system, "System prompt");
  sub->add_option("--max-tokens", a->max_tokens, "Most tokens per answer");
  sub->add_option("--temperature", a->temperature, "Override generation_config.json's temperature");
  sub->add_option("--top-p", a->top_p, "Override top_p");
  sub->add_option("--top-k", a->top_k, "Override top_k");
  sub->add_option("--seed", a->seed, "Seed of the first turn (later turns use seed + turn)");
  sub->callback([a] { run(*a); });
});
}  // namespace
