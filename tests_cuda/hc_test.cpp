// Hyper-connection mixing and inject, composed from the CUDA ops the way the model will call them, against
// qwen::hc_mix and qwen::hc_inject.
//
// Bounds: with T <= 8 every projection is a float32 GEMV, so the composition agrees to float32 rounding (1e-4 of
// the largest value covers the sums of H*hc terms). With T > 8 the projections round their inputs to bf16 (2^-9
// relative per term, see linear_test), which moves the mixer logits by up to about 2^-8 of their term sums;
// through sigmoid (slope <= 1/4) that stays well inside 1e-2 of the largest output.
#include "cuda_test_util.h"

#include <cmath>

#include "models/qwen_hybrid/hyper_connection.h"

namespace ds4::cuda::test {
namespace {

void check_hc(int64_t T, int64_t H, int64_t S, int64_t R) {
  qwen::Config c;
  c.hidden_size = H;
  c.hc_count = S;
  c.hc_lowrank = R;
  c.rms_eps = 1e-6;
  const int64_t D = S * H;
  Weight norm(size_t(D), 0.2f, 1), down(size_t(R * D), 1.7f / std::sqrt(float(D)), 2),
      up(size_t(D * R), 1.7f / std::sqrt(float(R)), 3), inject(size_t(S * D), 1.7f / std::sqrt(float(D)), 4);
  qwen::HyperConnWeights w;
  w.norm = {norm.host, {D}};
  w.down = {down.host, {R, D}};
  w.up = {up.host, {D, R}};
  w.inject = {inject.host, {S, D}};
  w.has_inject = true;
  const auto x = rand_vec(size_t(T * D), -2.0f, 2.0f, 5);
  std::vector<float> want_mixed(size_t(T * H)), want_inject(size_t(T * S));
  qwen::hc_mix(w, c, x.data(), T, want_mixed.data(), want_inject.data());

  auto dx = upload(x);
  DeviceBuffer<float> normed(size_t(T * D)), low(size_t(T * R)), mix(size_t(T * D));
  auto mixed = nan_buffer<float>(size_t(T * H)), inj = nan_buffer<float>(size_t(T * S));
  auto& cx = ctx();
  rms_norm_offset(cx, dx.get(), norm.d(), normed.get(), T, D, H, float(c.rms_eps));
  linear(cx, normed.get(), T, D, down.d(), R, low.get());
  activate(cx, low.get(), low.get(), T * R, Act::Silu, float(S));
  linear(cx, low.get(), T, R, up.d(), D, mix.get());
  hc_collapse(cx, mix.get(), normed.get(), T, S, H, mixed.get());
  linear(cx, normed.get(), T, D, inject.d(), S, inj.get());
  activate(cx, inj.get(), inj.get(), T * S, Act::Sigmoid, float(S), 2.0f);
  const double tol = T <= 8 ? 1e-4 : 1e-2;
  const std::string what = "T=" + std::to_string(T) + " H=" + std::to_string(H);
  expect_close_scaled(download(mixed), want_mixed, tol, "hc mixed " + what);
  expect_close_scaled(download(inj), want_inject, tol, "hc inject weights " + what);

  // hc_inject on the CPU's inject weights: x[t][s][:] += out[t][:] * inject[t][s] (one multiply-add per element).
  const auto out = rand_vec(size_t(T * H), -1.0f, 1.0f, 6);
  auto want_x = x;
  qwen::hc_inject(want_x.data(), out.data(), want_inject.data(), T, c);
  auto dout = upload(out), dinj = upload(want_inject);
  hc_inject(cx, dx.get(), dout.get(), dinj.get(), T, S, H);
  expect_close(download(dx), want_x, 1e-6, 1e-6, "hc_inject " + what);
}

TEST(CudaHyperConnection, MixAndInjectMatchTheModel) {
  check_hc(1, 256, 4, 40);
  check_hc(5, 100, 4, 24);
  check_hc(20, 256, 4, 40);  // prefill: projections through cuBLAS
  check_hc(3, 2560, 4, 320); // the Flash-Next widths
}

}  // namespace
}  // namespace ds4::cuda::test
