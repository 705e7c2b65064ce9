// The committed qwen4_exp oracle fixtures (tools/oracle/make_qwen4_fixtures.py) and comparisons against them.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/json_file.h"
#include "io/npy.h"
#include "support/paths.h"

namespace ds4::test {

inline std::vector<std::string> qwen4_fixture_names() { return {"text_f32", "vl_bf16", "text_f16_sharded"}; }
inline std::string qwen4_fixture(const std::string& name) { return fixtures_dir() + "/qwen4/" + name; }

inline nlohmann::json qwen4_reference(const std::string& name) {
  return read_json_file(qwen4_fixture(name) + "/reference.json");
}

// Largest |a - b| over a row block, relative to the largest |reference| logit (the parity bound's measure).
inline double max_rel_diff(const float* a, const float* ref, size_t n, double ref_scale) {
  double d = 0;
  for (size_t i = 0; i < n; i++) d = std::max(d, double(std::fabs(a[i] - ref[i])));
  return d / ref_scale;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

constexpr double kParityBound = 1e-4;  // issue: logits within 1e-4 of the reference relative to max |logit|
constexpr double kMarginClear = 1e-3;  // greedy tokens compared while the reference's top-1/top-2 margin exceeds this

}  // namespace ds4::test
