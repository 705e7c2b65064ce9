// Helpers of the GPU tests: one shared Context, random inputs, bf16 weights that the CPU reference sees with the
// same rounding, NaN-filled outputs (an element a kernel forgot to write stays NaN), and comparisons that name
// the worst element.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/ops.h"

namespace ds4::cuda::test {

inline Context& ctx() {
  static Context c(0, size_t(1) << 30);
  return c;
}

inline std::vector<float> rand_vec(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Values that are exactly representable in bf16: what the CPU reference is given for a weight the GPU reads as bf16.
inline std::vector<float> bf16_exact(std::vector<float> v) {
  for (auto& x : v) x = bf16_round(x);
  return v;
}

// A device weight and the float copy the CPU reference uses; both hold the same (bf16) values.
struct Weight {
  std::vector<float> host;
  DeviceBuffer<bf16> dev;
  explicit Weight(std::vector<float> v) : host(bf16_exact(std::move(v))), dev(to_bf16(host)) {}
  Weight(size_t n, float scale, uint32_t seed) : Weight(rand_vec(n, -scale, scale, seed)) {}
  const bf16* d() const { return dev.get(); }
  const float* h() const { return host.data(); }
};

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& v) {
  return DeviceBuffer<T>(v);
}

// An output buffer whose every byte is 0xFF: NaN as float, -1 as int.
template <class T>
DeviceBuffer<T> nan_buffer(size_t n) {
  DeviceBuffer<T> b(n);
  b.fill_bytes(0xFF);
  return b;
}

template <class T>
std::vector<T> download(const DeviceBuffer<T>& b) {
  ctx().synchronize();
  return b.download();
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

// Every element finite (nothing left unwritten) and |got - want| <= bound(i). Reports the worst element.
template <class Bound>
void expect_close_by(const std::vector<float>& got, const std::vector<float>& want, Bound bound, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, worst = 0, unwritten = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.size(); i++) {
    if (!std::isfinite(got[i])) {
      if (unwritten++ == 0) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " (not written?)";
      continue;
    }
    const double err = std::fabs(double(got[i]) - double(want[i])), b = bound(i);
    const double ratio = err / b;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
    if (err > b) bad++;
  }
  EXPECT_EQ(unwritten, 0u) << what << ": " << unwritten << " elements not finite";
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements out of bounds; worst [" << worst
                     << "] got " << got[worst] << " want " << want[worst] << " (error/bound " << worst_ratio << ")";
}

// |got - want| <= atol + rtol * |want| elementwise.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol,
                         const std::string& what) {
  expect_close_by(got, want, [&](size_t i) { return atol + rtol * std::fabs(double(want[i])); }, what);
}

// |got - want| <= tol * max|want|: for results whose error scales with the output's overall magnitude.
inline void expect_close_scaled(const std::vector<float>& got, const std::vector<float>& want, double tol,
                                const std::string& what) {
  const double s = std::max(max_abs(want), 1e-30) * tol;
  expect_close_by(got, want, [&](size_t) { return s; }, what);
}

}  // namespace ds4::cuda::test
