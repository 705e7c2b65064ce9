// One case of tests/fixtures/sampling/sampler_cases.jsonl (tools/oracle/sampler_vectors.py) as C++ data.
#pragma once
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/pcg64.h"
#include "engine/sampler.h"

namespace ds4::test {

struct SamplerCase {
  std::string name;
  std::vector<std::vector<float>> rows;  // step i uses rows[i % rows.size()]
  engine::SamplingParams params;
  uint64_t seed = 0;
  std::vector<int32_t> prior_tokens;
  std::vector<int32_t> tokens;  // expected, one per step
  uint64_t draws = 0;
  const nlohmann::json* first_kept = nullptr;  // null for greedy cases
};

// Large rows are stored as the recipe the oracle used: float32(((u * 16) - 8) * scale) over the PCG64
// doubles of gen_seed, the last masked_tail entries -inf.
inline std::vector<float> generated_row(const nlohmann::json& g) {
  engine::Pcg64 rng(g["seed"].get<uint64_t>());
  const size_t vocab = g["vocab"].get<size_t>();
  const double scale = g["scale"].get<double>();
  const size_t masked = g["masked_tail"].get<size_t>();
  std::vector<float> row(vocab);
  for (size_t i = 0; i < vocab; ++i) row[i] = static_cast<float>(((rng.next_double() * 16.0) - 8.0) * scale);
  for (size_t i = vocab - masked; i < vocab; ++i) row[i] = -std::numeric_limits<float>::infinity();
  return row;
}

inline std::vector<float> stored_row(const nlohmann::json& r) {
  std::vector<float> row;
  for (const auto& v : r) row.push_back(v.is_null() ? -std::numeric_limits<float>::infinity() : v.get<float>());
  return row;
}

inline SamplerCase parse_sampler_case(const nlohmann::json& j) {
  SamplerCase c;
  c.name = j["name"].get<std::string>();
  if (j.contains("generated")) {
    c.rows.push_back(generated_row(j["generated"]));
  } else {
    for (const auto& r : j["logits"]) c.rows.push_back(stored_row(r));
  }
  const auto& p = j["params"];
  c.params.temperature = p["temperature"].get<double>();
  c.params.top_k = p["top_k"].get<int>();
  c.params.top_p = p["top_p"].get<double>();
  c.params.min_p = p["min_p"].get<double>();
  c.params.presence_penalty = p["presence_penalty"].get<double>();
  c.params.frequency_penalty = p["frequency_penalty"].get<double>();
  c.seed = j["seed"].get<uint64_t>();
  c.prior_tokens = j["prior_tokens"].get<std::vector<int32_t>>();
  c.tokens = j["tokens"].get<std::vector<int32_t>>();
  c.draws = j["draws"].get<uint64_t>();
  if (j.contains("first_kept")) c.first_kept = &j["first_kept"];
  return c;
}

}  // namespace ds4::test
