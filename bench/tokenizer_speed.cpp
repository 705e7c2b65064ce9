// Tokenizer encode throughput, single thread, next to HF `tokenizers` measured on the same inputs by
// tools/oracle/tokenizer_reference.py (tests/fixtures/tokenizer/tokenizer_speed.json, when present).
//
//   bench_tokenizer_speed [TOKENIZER_CACHE_DIR]
//
// The cache dir holds qwen3/ and deepseek_v3/ (tools/fetch-tokenizers.sh; default $DS4_TOKENIZER_CACHE,
// else ~/.cache/ds4/tokenizers). Cases: every test string encoded in turn; the strings joined by "\n"
// into one long text, encoded whole, repeatedly. Each case is warmed up once (the BPE cache fills, as in
// a running server) and then repeated for at least two seconds of the thread's CPU time, which keeps the
// figure meaningful on a machine shared with other work (on an idle machine it equals wall time).
// MB = 10^6 bytes of UTF-8 input.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

double mb_per_s(const std::function<void()>& run, size_t bytes) {
  run();
  size_t rounds = 0;
  double t0 = thread_cpu_seconds(), elapsed = 0;
  while (elapsed < 2.0 || rounds < 3) {
    run();
    ++rounds;
    elapsed = thread_cpu_seconds() - t0;
  }
  return static_cast<double>(bytes) * rounds / elapsed / 1e6;
}

std::string cache_dir(int argc, char** argv) {
  if (argc > 1) return argv[1];
  if (const char* d = std::getenv("DS4_TOKENIZER_CACHE"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/ds4/tokenizers";
}

}  // namespace

int main(int argc, char** argv) {
  std::string fixtures = std::string(DS4_SOURCE_DIR) + "/tests/fixtures/tokenizer";
  std::vector<std::string> strings;
  {
    std::ifstream in(fixtures + "/strings.jsonl");
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) strings.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  if (strings.empty()) {
    std::fprintf(stderr, "no test strings in %s/strings.jsonl\n", fixtures.c_str());
    return 1;
  }
  size_t total = 0;
  std::string long_text;
  for (size_t i = 0; i < strings.size(); ++i) {
    total += strings[i].size();
    if (i) long_text += '\n';
    long_text += strings[i];
  }
  nlohmann::json ref;
  if (std::ifstream in(fixtures + "/tokenizer_speed.json"); in) ref = nlohmann::json::parse(in);
  auto ref_figure = [&](const std::string& name, const char* key) -> std::string {
    if (!ref.contains("mb_per_s") || !ref["mb_per_s"].contains(name)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", ref["mb_per_s"][name].value(key, 0.0));
    return buf;
  };

  std::printf("%zu strings, %zu bytes; long text %zu bytes\n", strings.size(), total, long_text.size());
  std::printf("%-12s %-22s %8s %18s %17s %15s\n", "tokenizer", "case", "load s", "ds4 MB/s (1 thread)",
              "HF MB/s (1 thread)", "HF batch MB/s");
  std::string dir = cache_dir(argc, argv);
  for (const std::string name : {"qwen3", "deepseek_v3"}) {
    auto t0 = Clock::now();
    auto tok = ds4::text::Tokenizer::from_file(dir + "/" + name + "/tokenizer.json");
    double load = seconds_since(t0);
    double s = mb_per_s([&] {
      for (const auto& str : strings) tok.encode(str);
    }, total);
    double l = mb_per_s([&] { tok.encode(long_text); }, long_text.size());
    std::printf("%-12s %-22s %8.2f %18.2f %17s %15s\n", name.c_str(), "strings one by one", load, s,
                ref_figure(name, "strings_single_thread").c_str(), ref_figure(name, "strings_encode_batch").c_str());
    std::printf("%-12s %-22s %8s %18.2f %17s %15s\n", name.c_str(), "long text, repeated", "", l,
                ref_figure(name, "long_text_single_thread").c_str(), "");
  }
  if (ref.is_null()) std::printf("(no tests/fixtures/tokenizer/tokenizer_speed.json: HF figures not available)\n");
  return 0;
}
