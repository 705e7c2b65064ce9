// ds4 generate: one completion from token ids (--tokens) or text (--prompt, through the model's chat
// template unless --raw), printed as JSON with --json (with the generation's wall time: prompt and completion,
// not the model's load).
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/token_list.h"
#include "core/error.h"
#include "engine/generator.h"
#include "io/json_file.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace {
struct Args {
  std::string model, tokens, prompt, backend = "cpu";
  bool raw = false, ignore_eos = false, json = false, speculative = false;
  int64_t max_tokens = 64;
  double temperature = 1.0, top_p = 1.0, min_p = 0.0, presence = 0.0, frequency = 0.0;
  int top_k = 0;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
};

bool has_chat_template(const std::string& dir) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(dir) / "chat_template.jinja")) return true;
  const auto cfg = fs::path(dir) / "tokenizer_config.json";
  return fs::exists(cfg) && ds4::read_json_file(cfg.string()).contains("chat_template");
}

std::string json_escape(const std::string& s) { return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

int run(const Args& a) {
  const std::string dir = a.model.empty() ? ds4::cli::default_model_dir() : a.model;
  if (a.tokens.empty() == a.prompt.empty())
    throw ds4::Error(ds4::ErrorKind::InvalidArgument, "give exactly one of --tokens and --prompt");
  auto model = ds4::load_model(dir, [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); }, {a.backend});
  std::optional<ds4::text::Tokenizer> tokenizer;
  if (std::filesystem::exists(dir + "/tokenizer.json")) tokenizer = ds4::text::Tokenizer::from_file(dir + "/tokenizer.json");

  ds4::engine::GenerationRequest req;
  if (!a.tokens.empty()) {
    req.prompt = ds4::cli::parse_token_list(a.tokens);
  } else {
    if (!tokenizer) throw ds4::Error(ds4::ErrorKind::InvalidArgument, dir + ": --prompt needs tokenizer.json");
    std::string text = a.prompt;
    if (!a.raw && has_chat_template(dir)) {
      nlohmann::ordered_json request = {{"messages", {{{"role", "user"}, {"content", a.prompt}}}},
                                        {"add_generation_prompt", true}};
      text = ds4::text::ModelChatTemplate::load(dir).render(request);
    }
    req.prompt = tokenizer->encode(text);
  }
  req.max_tokens = a.max_tokens;
  req.sampling = {a.temperature, a.top_k, a.top_p, a.min_p, a.presence, a.frequency};
  req.seed = a.seed;
  req.stop = a.stop;
  req.ignore_eos = a.ignore_eos;
  req.speculative = a.speculative;
  const auto t0 = std::chrono::steady_clock::now();
  auto res = ds4::engine::generate(*model, tokenizer ? &*tokenizer : nullptr, req,
                                   [&](const ds4::engine::TokenEvent& ev) {
                                     if (!a.json) {
                                       std::fputs(ev.text.c_str(), stdout);
                                       std::fflush(stdout);
                                     }
                                     return true;
                                   });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (res.error) throw *res.error;
  if (a.json) {
    std::string toks;
    for (auto t : res.tokens) toks += (toks.empty() ? "" : ", ") + std::to_string(t);
    std::printf("{\"tokens\": [%s], \"text\": %s, \"finish_reason\": \"%s\", \"seed\": %llu, \"prompt_tokens\": %lld",
                toks.c_str(), json_escape(res.text).c_str(), res.finish_reason.c_str(),
                (unsigned long long)res.seed, (long long)res.prompt_tokens);
    if (a.speculative) std::printf(", \"drafted\": %lld, \"accepted\": %lld", (long long)res.drafted, (long long)res.accepted);
    std::printf(", \"seconds\": %.6f}\n", seconds);
  } else {
    std::printf("\n");
  }
  return 0;
}

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("generate", "Generate a completion for token ids or a prompt");
  sub->add_option("--model", a->model, "Model directory (default: the shipped model)");
  sub->add_option("--backend", a->backend, "Compute backend: cpu (reference) or cuda (when built with it)")->capture_default_str();
  sub->add_option("--tokens", a->tokens, "Prompt as comma-separated token ids");
  sub->add_option("--prompt", a->prompt, "Prompt text (rendered through the chat template unless --raw)");
  sub->add_flag("--raw", a->raw, "Tokenize --prompt as is, without the chat template");
  sub->add_option("--max-tokens", a->max_tokens, "Most tokens to generate");
  sub->add_option("--temperature", a->temperature, "0 = greedy");
  sub->add_option("--top-k", a->top_k, "Keep the k most likely tokens (0 = off)");
  sub->add_option("--top-p", a->top_p, "Nucleus on full-vocabulary probabilities (1 = off)");
  sub->add_option("--min-p", a->min_p, "Drop tokens below min_p * p_max (0 = off)");
  sub->add_option("--presence-penalty", a->presence, "OpenAI presence penalty");
  sub->add_option("--frequency-penalty", a->frequency, "OpenAI frequency penalty");
  sub->add_option("--seed", a->seed, "Seed of the request's random stream (default: from the OS, reported)");
  sub->add_option("--stop", a->stop, "Stop string (repeatable)");
  sub->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past end-of-sequence tokens");
  sub->add_flag("--json", a->json, "Print {tokens, text, finish_reason} as JSON");
  sub->add_flag("--speculative", a->speculative, "Draft with the model's MTP head (same output, fewer forwards)");
  sub->callback([a] { run(*a); });
});
}  // namespace
