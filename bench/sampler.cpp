// Time per sampled token of the classic sampler on a real vocabulary size, per parameter set.
// Prints a table; not run by the tests.
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/pcg64.h"
#include "engine/sampler.h"

int main() {
  using ds4::engine::SamplingParams;
  constexpr size_t kVocab = 151936;
  constexpr int kIters = 50;
  struct Row {
    const char* name;
    double spread;  // logits uniform in [-spread, spread): 8 is flat-ish, 24 is peaked like a model
  };
  struct Config {
    const char* name;
    SamplingParams p;
  };
  const Row rows[] = {{"flat(+-8)", 8.0}, {"peaked(+-24)", 24.0}};
  const Config configs[] = {
      {"greedy", {.temperature = 0.0}},
      {"T=1 (full sort)", {}},
      {"T=0.7 top_k=50", {.temperature = 0.7, .top_k = 50}},
      {"T=0.6 top_k=20 top_p=0.95", {.temperature = 0.6, .top_k = 20, .top_p = 0.95}},
      {"T=1 top_p=0.9", {.top_p = 0.9}},
      {"T=1 min_p=0.1", {.min_p = 0.1}},
      {"T=1 penalties", {.presence_penalty = 0.5, .frequency_penalty = 0.5}},
  };
  std::printf("%-14s %-28s %10s\n", "logits", "params", "ms/token");
  for (const auto& r : rows) {
    ds4::engine::Pcg64 rng(1);
    std::vector<float> logits(kVocab);
    for (auto& v : logits) v = static_cast<float>((rng.next_double() * 2.0 - 1.0) * r.spread);
    for (const auto& c : configs) {
      ds4::engine::Sampler s(c.p, 42);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kIters; ++i) s.accept(s.sample(logits));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%-14s %-28s %10.3f\n", r.name, c.name, ms / kIters);
    }
  }
}
