// ds4 bench: prefill and batch-1 decode speed of a model directory, or of a config's shapes with random
// weights, as a table (tokens/s and the bandwidth of the weights a decoded token reads).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "cli/token_list.h"
#include "core/error.h"
#include "engine/logits_check.h"
#include "io/json_file.h"
#include "models/model.h"
#ifdef DS4_WITH_CUDA
#include "backend/cuda/bandwidth.h"
#endif

namespace {
struct Args {
  std::string model, config, prefill = "128", backend = "cpu", reference_prefill = "512";
  bool random_weights = false, reference = false, no_warmup = false;
  std::string python = "python3";
  int64_t layers = 0, experts = 0, ple_vocab_base = 0, decode = 32, threads = 0;
  uint64_t seed = 1;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Shrinks a config for timing: fewer layers or experts, a smaller PLE table. Each change is printed.
nlohmann::json shrink(nlohmann::json j, const Args& a) {
  nlohmann::json& t = j.contains("text_config") ? j["text_config"] : j;
  if (a.layers > 0) {
    t["num_hidden_layers"] = a.layers;
    if (t.contains("layer_types")) t["layer_types"] = std::vector<nlohmann::json>(t["layer_types"].begin(), t["layer_types"].begin() + a.layers);
    if (t.contains("ple_layer_ids")) {
      nlohmann::json keep = nlohmann::json::array();
      for (auto& id : t["ple_layer_ids"])
        if (id.get<int64_t>() <= a.layers) keep.push_back(id);
      t["ple_layer_ids"] = keep;
    }
    std::printf("note: cut to %lld layers\n", (long long)a.layers);
  }
  if (a.experts > 0) {
    t["num_experts"] = a.experts;
    std::printf("note: %lld experts per layer (a batch-1 decode step reads the same top-k bytes)\n", (long long)a.experts);
  }
  if (a.ple_vocab_base > 0) {
    t["ngram_vocab_size_base"] = a.ple_vocab_base;
    std::printf("note: PLE n-gram table shrunk to base %lld rows per head for timing\n", (long long)a.ple_vocab_base);
  }
  return j;
}

// transformers on the same shape (tools/oracle/bench_transformers.py), so the ratio is measured in one run.
// ours_decode: ds4's decode tokens/s after each prompt length; transformers decodes after its last prefill, and the
// ratio takes ds4's row after the same prompt (else after ds4's longest).
void print_reference(const Args& a, const std::map<int, double>& ours_prefill, const std::map<int, double>& ours_decode) {
  const std::string config = a.config.empty() ? a.model + "/config.json" : a.config;
  std::string cmd = a.python + " " + std::string(DS4_SOURCE_DIR) + "/tools/oracle/bench_transformers.py --config '" +
                    config + "' --prefill " + a.reference_prefill + " --decode " + std::to_string(a.decode);
  if (a.layers) cmd += " --layers " + std::to_string(a.layers);
  if (a.experts) cmd += " --experts " + std::to_string(a.experts);
  if (a.ple_vocab_base) cmd += " --ple-vocab-base " + std::to_string(a.ple_vocab_base);
  std::fflush(stdout);
  FILE* p = popen((cmd + " 2>/dev/null | tail -n 1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception&) {
    throw ds4::Error(ds4::ErrorKind::InvalidArgument,
                     "--reference: the transformers benchmark printed no result (needs python3 with torch and "
                     "transformers 5.17): " + cmd);
  }
  std::printf("\ntransformers %s on %s, bf16, sdpa:\n", "5.17", j.value("transformers_device", "?").c_str());
  std::printf("| phase   | tokens | transformers tokens/s | ds4 tokens/s | ds4 / transformers |\n");
  std::printf("|---------|-------:|----------------------:|-------------:|-------------------:|\n");
  for (const auto& r : j["prefill"]) {
    const int tokens = r["tokens"].get<int>();
    const double t = r["tokens_per_s"].get<double>();
    const auto ours = ours_prefill.find(tokens);
    if (ours == ours_prefill.end()) continue;
    std::printf("| prefill | %6d | %21.1f | %12.1f | %17.1fx |\n", tokens, t, ours->second, ours->second / t);
  }
  if (!j["decode"].is_null() && !j["prefill"].empty() && !ours_decode.empty()) {
    const double t = j["decode"]["tokens_per_s"].get<double>();
    const int after = j["prefill"].back()["tokens"].get<int>();
    const auto same = ours_decode.find(after);
    const auto ours = same != ours_decode.end() ? *same : *ours_decode.rbegin();
    std::printf("| decode  | %6d | %21.1f | %12.1f | %17.1fx |\n", j["decode"]["tokens"].get<int>(), t, ours.second,
                ours.second / t);
    std::printf("\nnote: decode after %d prompt tokens (transformers) and after %d (ds4)\n", after, ours.first);
  }
}

// Bytes one decoded token must read: every weight it uses once, in the backend's storage format.
double bytes_per_param(const std::string& backend) { return backend == "cpu" ? 4.0 : 2.0; }

void run(const Args& a) {
  if (a.threads > 0) omp_set_num_threads(int(a.threads));
  std::unique_ptr<ds4::Model> model;
  std::string what;
  auto log = [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  const ds4::LoadOptions load{a.backend};
  if (!a.model.empty()) {
    model = ds4::load_model(a.model, log, load);
    what = a.model;
  } else if (!a.config.empty()) {
    if (!a.random_weights)
      throw ds4::Error(ds4::ErrorKind::InvalidArgument, "--config needs --random-weights (no checkpoint is read)");
    model = ds4::random_model(shrink(ds4::read_json_file(a.config), a), a.seed, log, load);
    what = a.config + " (random weights)";
  } else {
    throw ds4::Error(ds4::ErrorKind::InvalidArgument, "give --model DIR or --config FILE --random-weights");
  }
  const auto& info = model->info();
  const double active_bytes = double(info.active_params) * bytes_per_param(a.backend);
  std::printf("ds4 bench: %s\n", what.c_str());
  double limit_gbs = 0;  // the bandwidth the decode figure is compared with
  if (a.backend == "cpu") {
    std::printf("backend cpu (float32 weights), %d threads\n", omp_get_max_threads());
  } else {
#ifdef DS4_WITH_CUDA
    const auto bw = ds4::cuda::measure_bandwidth(0);
    limit_gbs = bw.spec_gbs;
    std::printf("backend %s (bfloat16 weights, float32 activations and state): %s, HBM limit %.0f GB/s (spec), "
                "device-to-device copy measured now %.0f GB/s\n",
                a.backend.c_str(), bw.device.c_str(), bw.spec_gbs, bw.copy_gbs);
#endif
  }
  std::printf("parameters: %.2f M total, %.2f M read per decoded token (%.1f MB)\n", info.total_params / 1e6,
              info.active_params / 1e6, active_bytes / 1e6);
  std::printf("prefill TFLOP/s counts 2 x active parameters per token (attention scores not counted)\n");
  if (info.decode_state_bytes)
    std::printf("decode \"+ state\" adds the sequence state each step reads and writes (recurrent and conv state, the "
                "selected keys and values, the indexer's keys: %.1f MB a step after the first prompt)\n",
                info.decode_state_bytes(ds4::cli::parse_token_list(a.prefill).front() + 1) / 1e6);
  std::printf("\n| phase   | tokens | seconds | tokens/s | weight GB/s | %% of HBM limit | + state GB/s | %% of HBM limit "
              "| TFLOP/s |\n"
              "|---------|-------:|--------:|---------:|------------:|---------------:|-------------:|---------------:"
              "|--------:|\n");
  std::map<int, double> ours_prefill;
  std::map<int, double> ours_decode;  // after each prompt length
  const int64_t V = info.vocab_size;
  std::vector<float> logits;
  // n greedy steps from `tok`: picked by the model where it can (device_pick), else from the host row; returns the
  // last pick.
  auto decode_greedy = [&](ds4::SequenceState& st, int32_t tok, bool device_pick, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
      const std::span<const int32_t> one(&tok, 1);
      ds4::GreedyPick pick;
      if (device_pick && model->forward_greedy(st, one, pick)) {
        tok = ds4::engine::check_greedy_pick(pick, size_t(V));
        continue;
      }
      model->forward(st, one, logits, false);
      tok = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    return tok;
  };
  std::string first_steps;  // the first decode step of each prompt, timed apart (ms)
  auto prompt_of = [&](int32_t P) {
    std::vector<int32_t> prompt(static_cast<size_t>(P));
    for (int32_t i = 0; i < P; i++) prompt[size_t(i)] = int32_t((int64_t(i) * 7919 + 13) % V);
    return prompt;
  };
  if (a.backend != "cpu" && !a.no_warmup) {
    // Warm-up: library heuristics, first launches and the decode graph's capture are not timed.
    auto st = model->new_state();
    model->forward(*st, prompt_of(64), logits, false);
    for (int i = 0; i < 3; i++) model->forward(*st, std::vector<int32_t>{1}, logits, false);
  }
  for (int32_t P : ds4::cli::parse_token_list(a.prefill)) {
    const auto prompt = prompt_of(P);
    auto st = model->new_state();
    double t0 = now();
    model->forward(*st, prompt, logits, false);
    double dt = now() - t0;
    const double tflops = 2.0 * double(info.active_params) * P / dt / 1e12;
    std::printf("| prefill | %6d | %7.3f | %8.1f | %11s | %14s | %12s | %14s | %7.1f |\n", P, dt, P / dt, "-", "-", "-",
                "-", tflops);
    ours_prefill[P] = P / dt;
    if (a.decode > 0) {
      // Greedy decode as transformers' figure is taken: the pick stays on the device where the backend can do it.
      // A sequence's first decode step carries one-time work (the caches' growth past the prompt's capacity and,
      // on the CUDA backend, the capture of the sequence's decode graph): it is timed apart, and the row times
      // the steady steps after it (tools/oracle/bench_transformers.py times transformers' the same way).
      t0 = now();
      const int32_t tok = decode_greedy(*st, prompt.back(), true, 1);
      char first[64];
      std::snprintf(first, sizeof first, "%s%.1f ms after %d", first_steps.empty() ? "" : ", ", 1e3 * (now() - t0), P);
      first_steps += first;
      t0 = now();
      decode_greedy(*st, tok, true, a.decode);
      dt = now() - t0;
      const double gbs = active_bytes * a.decode / dt / 1e9;
      // The timed steps decode the tokens at positions P + 1 .. P + decode (the first step, at P, is timed apart).
      double state = 0;
      if (info.decode_state_bytes)
        for (int64_t p = P + 1; p <= P + a.decode; p++) state += info.decode_state_bytes(p);
      auto pct_of = [&](double v) {
        char b[32] = "-";
        if (limit_gbs > 0) std::snprintf(b, sizeof b, "%.1f%%", 100.0 * v / limit_gbs);
        return std::string(b);
      };
      const double with_state = gbs + state / dt / 1e9;
      char with_gbs[32] = "-";
      if (info.decode_state_bytes) std::snprintf(with_gbs, sizeof with_gbs, "%.1f", with_state);
      std::printf("| decode  | %6lld | %7.3f | %8.1f | %11.1f | %14s | %12s | %14s | %7s |\n", (long long)a.decode, dt,
                  a.decode / dt, gbs, pct_of(gbs).c_str(), with_gbs,
                  info.decode_state_bytes ? pct_of(with_state).c_str() : "-", "-");
      ours_decode[P] = a.decode / dt;
    }
  }
  if (!first_steps.empty())
    std::printf("\nnote: each decode row times %lld steps after the sequence's first decode step, timed apart (the "
                "caches' growth and the decode graph's capture): %s tokens\n",
                (long long)a.decode, first_steps.c_str());
  if (a.decode > 0 && a.backend != "cpu") {
    // What a decode step costs when the whole row comes to the host (the sampler's path for sampled tokens).
    auto st = model->new_state();
    model->forward(*st, prompt_of(16), logits, false);
    const int32_t tok = decode_greedy(*st, 1, false, 1);
    const double t0 = now();
    decode_greedy(*st, tok, false, a.decode);
    const double dt = now() - t0;
    std::printf("\nnote: decode above picks the greedy token on the device; with each step's logits row copied to "
                "the host and scanned there (the sampler's path): %.1f tokens/s after a 16-token prompt\n",
                a.decode / dt);
  }
  if (a.reference) print_reference(a, ours_prefill, ours_decode);
}

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("bench", "Time prefill and batch-1 decode (prints a table)");
  sub->add_option("--model", args->model, "Model directory");
  sub->add_option("--config", args->config, "config.json of the shapes to time");
  sub->add_flag("--random-weights", args->random_weights, "Generate weights from --seed instead of reading files");
  sub->add_option("--seed", args->seed, "Seed of the random weights");
  sub->add_option("--layers", args->layers, "Keep only the first N layers");
  sub->add_option("--experts", args->experts, "Routed experts per layer");
  sub->add_option("--ple-vocab-base", args->ple_vocab_base, "Shrink the PLE n-gram table for timing");
  sub->add_option("--prefill", args->prefill, "Prompt lengths, comma-separated");
  sub->add_option("--decode", args->decode, "Decode steps after each prefill");
  sub->add_flag("--no-warmup", args->no_warmup,
                "Skip the untimed warm-up forward (so a profiler sees only the timed calls)");
  sub->add_option("--threads", args->threads, "CPU threads (default: all)");
  sub->add_option("--backend", args->backend, "Compute backend: cpu (reference) or cuda (when built with it)")
      ->capture_default_str();
  sub->add_flag("--reference", args->reference, "Also time transformers on the same shape (GPU machine)");
  sub->add_option("--reference-prefill", args->reference_prefill, "Prompt lengths transformers is timed on")
      ->capture_default_str();
  sub->add_option("--python", args->python, "Python with torch and transformers, for --reference");
  sub->callback([args] { run(*args); });
});
}  // namespace
