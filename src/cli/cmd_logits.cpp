// ds4 logits --model DIR --tokens 5,9,11 --out FILE.npy [--chunk N]: float32 logits at every position.
#include <cstdio>

#include "cli/command.h"
#include "cli/token_list.h"
#include "core/error.h"
#include "io/npy.h"
#include "models/model.h"

namespace {
struct Args {
  std::string model, tokens, out, backend = "cpu";
  int64_t chunk = 0;
};

void run(const Args& a) {
  auto tokens = ds4::cli::parse_token_list(a.tokens);
  if (tokens.empty()) throw ds4::Error(ds4::ErrorKind::InvalidArgument, "--tokens is empty");
  auto model = ds4::load_model(a.model, [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); }, {a.backend});
  const int64_t V = model->info().vocab_size, T = int64_t(tokens.size());
  const int64_t chunk = a.chunk > 0 ? a.chunk : T;
  auto state = model->new_state();
  std::vector<float> all, part;
  all.reserve(size_t(T * V));
  for (int64_t i = 0; i < T; i += chunk) {
    const int64_t n = std::min(chunk, T - i);
    model->forward(*state, std::span<const int32_t>(tokens.data() + i, size_t(n)), part, true);
    all.insert(all.end(), part.begin(), part.end());
  }
  ds4::write_npy_f32(a.out, all.data(), {T, V});
}

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("logits", "Write the logits at every position of a token sequence to a .npy file");
  sub->add_option("--model", args->model, "Model directory")->required();
  sub->add_option("--backend", args->backend, "Compute backend: cpu (reference) or cuda (when built with it)")->capture_default_str();
  sub->add_option("--tokens", args->tokens, "Comma-separated token ids")->required();
  sub->add_option("--out", args->out, "Output .npy path (float32 [tokens, vocab])")->required();
  sub->add_option("--chunk", args->chunk, "Prefill in chunks of this many tokens (default: all at once)");
  sub->callback([args] { run(*args); });
});
}  // namespace
