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

// One mixer's random weights (seeds seed0 .. seed0 + 4), an input x [T][S*H] and the CPU's qwen::hc_mix outputs.
struct HcReference {
  qwen::Config c;
  int64_t D;
  Weight norm, down, up, inject;
  std::vector<float> x, want_mixed, want_inject;
  HcReference(int64_t T, int64_t H, int64_t S, int64_t R, bool has_inject, uint32_t seed0)
      : D(S * H),
        norm(size_t(D), 0.2f, seed0),
        down(size_t(R * D), 1.7f / std::sqrt(float(D)), seed0 + 1),
        up(size_t(D * R), 1.7f / std::sqrt(float(R)), seed0 + 2),
        inject(size_t(S * D), 1.7f / std::sqrt(float(D)), seed0 + 3),
        x(rand_vec(size_t(T * D), -2.0f, 2.0f, seed0 + 4)),
        want_mixed(size_t(T * H)),
        want_inject(size_t(T * S)) {
    c.hidden_size = H;
    c.hc_count = S;
    c.hc_lowrank = R;
    c.rms_eps = 1e-6;
    qwen::HyperConnWeights w;
    w.norm = {norm.host, {D}};
    w.down = {down.host, {R, D}};
    w.up = {up.host, {D, R}};
    w.inject = {inject.host, {S, D}};
    w.has_inject = has_inject;
    qwen::hc_mix(w, c, x.data(), T, want_mixed.data(), want_inject.data());
  }
};

void check_hc(int64_t T, int64_t H, int64_t S, int64_t R) {
  const HcReference ref(T, H, S, R, true, 1);
  const qwen::Config& c = ref.c;
  const int64_t D = ref.D;
  const Weight &norm = ref.norm, &down = ref.down, &up = ref.up, &inject = ref.inject;
  const auto& x = ref.x;
  const auto &want_mixed = ref.want_mixed, &want_inject = ref.want_inject;

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

// hc_mix_fused against qwen::hc_mix. inject_rows: down_inject carries the inject rows (as the model stores
// [down | inject]); ask_inject: the inject weights are asked for. The fused op reassociates the down
// projection (inv_s * sum w x (1 + norm) per stream) and sums in its own order: float32 rounding, so the T <= 8
// bound of the composition (1e-4 of the largest value) applies.
void check_hc_fused(int64_t T, int64_t H, int64_t S, int64_t R, bool inject_rows, bool ask_inject) {
  const HcReference ref(T, H, S, R, ask_inject, 11);
  const qwen::Config& c = ref.c;
  const Weight &norm = ref.norm, &down = ref.down, &up = ref.up, &inject = ref.inject;
  const auto& x = ref.x;
  const auto &want_mixed = ref.want_mixed, &want_inject = ref.want_inject;

  // The model's single [down | inject] matrix (the values are bf16 already: uploading them is exact).
  auto rows = down.host;
  if (inject_rows) rows.insert(rows.end(), inject.host.begin(), inject.host.end());
  const Weight down_inject(rows);
  const int64_t down_rows = R + (inject_rows ? S : 0);
  const std::string what = "T=" + std::to_string(T) + " H=" + std::to_string(H) + " S=" + std::to_string(S) +
                           " R=" + std::to_string(R) + (inject_rows ? " inject rows" : "");
  ASSERT_TRUE(hc_mix_fused_supported(T, S, H, R, down_rows)) << what;
  auto dx = upload(x);
  auto mixed = nan_buffer<float>(size_t(T * H)), inj = nan_buffer<float>(size_t(T * S));
  hc_mix_fused(ctx(), dx.get(), T, S, H, R, norm.d(), down_inject.d(), down_rows, up.d(), float(c.rms_eps),
               mixed.get(), ask_inject ? inj.get() : nullptr);
  expect_close_scaled(download(mixed), want_mixed, 1e-4, "hc_mix_fused mixed " + what);
  if (ask_inject) {
    expect_close_scaled(download(inj), want_inject, 1e-4, "hc_mix_fused inject " + what);
  } else {
    for (float v : download(inj)) ASSERT_TRUE(std::isnan(v)) << "hc_mix_fused wrote inject unasked " << what;
  }
}

TEST(CudaHyperConnection, FusedMixMatchesTheModel) {
  for (int64_t T : {1, 2, 5, 8}) check_hc_fused(T, 2560, 4, 320, true, true);  // the Flash-Next widths
  check_hc_fused(1, 2560, 4, 320, false, false);  // the final mixer: no inject rows
  check_hc_fused(3, 40, 3, 16, true, true);       // odd streams, one short chunk, a partial last h block
  check_hc_fused(1, 64, 2, 8, false, false);
  check_hc_fused(8, 64, 2, 8, false, false);
  check_hc_fused(4, 64, 4, 8, true, false);       // inject rows present but not asked for
  check_hc_fused(2, 1288, 2, 400, true, true);    // chunks of 648 and 640 columns; two passes over lowrank
  check_hc_fused(7, 1288, 3, 1024, true, true);   // the largest lowrank
}

// Every sum of the fused op has an order fixed by the shape alone, so a token's row is the same bits whether the
// token is decoded alone or verified in a chunk (as with the composition's GEMVs).
TEST(CudaHyperConnection, FusedRowsDoNotDependOnTheChunk) {
  const int64_t H = 2560, S = 4, R = 320, D = S * H, T = 8;
  Weight norm(size_t(D), 0.2f, 21), di(size_t((R + S) * D), 1.7f / std::sqrt(float(D)), 22),
      up(size_t(D * R), 1.7f / std::sqrt(float(R)), 23);
  auto dx = upload(rand_vec(size_t(T * D), -2.0f, 2.0f, 24));
  auto run = [&](int64_t t0, int64_t n) {
    auto mixed = nan_buffer<float>(size_t(n * H)), inj = nan_buffer<float>(size_t(n * S));
    hc_mix_fused(ctx(), dx.get() + t0 * D, n, S, H, R, norm.d(), di.d(), R + S, up.d(), 1e-6f, mixed.get(), inj.get());
    auto m = download(mixed), i = download(inj);
    m.insert(m.end(), i.begin(), i.end());
    return m;  // [n][H] mixed, then [n][S] inject
  };
  const auto all = run(0, T);
  auto row = [&](const std::vector<float>& v, int64_t n, int64_t t) {
    std::vector<float> r(v.begin() + t * H, v.begin() + (t + 1) * H);
    r.insert(r.end(), v.begin() + n * H + t * S, v.begin() + n * H + (t + 1) * S);
    return r;
  };
  for (int64_t t = 0; t < T; t++) ASSERT_EQ(row(run(t, 1), 1, 0), row(all, T, t)) << "token " << t << " alone";
  const auto three = run(2, 3);
  for (int64_t t = 0; t < 3; t++) ASSERT_EQ(row(three, 3, t), row(all, T, t + 2)) << "token " << t + 2 << " of 3";
}

TEST(CudaHyperConnection, FusedMixReportsUnsupportedShapes) {
  EXPECT_TRUE(hc_mix_fused_supported(1, 4, 2560, 320, 324));
  EXPECT_TRUE(hc_mix_fused_supported(8, 4, 2560, 320, 320));
  EXPECT_FALSE(hc_mix_fused_supported(0, 4, 2560, 320, 324));   // no tokens
  EXPECT_FALSE(hc_mix_fused_supported(9, 4, 2560, 320, 324));   // beyond kHcFusedMaxT: the composition
  EXPECT_FALSE(hc_mix_fused_supported(1, 4, 2564, 320, 324));   // H not a multiple of 8
  EXPECT_FALSE(hc_mix_fused_supported(1, 4, 2560, 324, 328));   // lowrank not a multiple of 8
  EXPECT_FALSE(hc_mix_fused_supported(1, 4, 2560, 1032, 1036)); // lowrank beyond shared memory
  EXPECT_FALSE(hc_mix_fused_supported(1, 65, 64, 8, 73));       // too many streams for a block
  EXPECT_FALSE(hc_mix_fused_supported(1, 4, 2560, 320, 323));   // neither down nor down + inject rows
  EXPECT_FALSE(hc_mix_fused_supported(1, 4, 0, 320, 324));

  const int64_t T = 1, S = 2, H = 64, R = 8, D = S * H;
  DeviceBuffer<float> x(size_t(T * D + 4)), out(size_t(T * H + S));
  DeviceBuffer<bf16> di(size_t((R + S) * D + 8)), up(size_t(D * R + 8)), norm(static_cast<size_t>(D));
  auto call = [&](int64_t t, int64_t r, int64_t rows, const float* xp, const bf16* dp, float* inj) {
    hc_mix_fused(ctx(), xp, t, S, H, r, norm.get(), dp, rows, up.get(), 1e-6f, out.get(), inj);
  };
  auto kind = [&](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;  // nothing thrown
  };
  EXPECT_EQ(kind([&] { call(9, R, R, x.get(), di.get(), nullptr); }), ErrorKind::Unsupported);
  EXPECT_EQ(kind([&] { call(T, 12, 12, x.get(), di.get(), nullptr); }), ErrorKind::Unsupported);
  EXPECT_EQ(kind([&] { call(T, R, R, x.get() + 1, di.get(), nullptr); }), ErrorKind::Unsupported);  // misaligned
  EXPECT_EQ(kind([&] { call(T, R, R, x.get(), di.get() + 4, nullptr); }), ErrorKind::Unsupported);
  // inject asked for without the inject rows
  EXPECT_EQ(kind([&] { call(T, R, R, x.get(), di.get(), out.get() + H); }), ErrorKind::InvalidArgument);
  ctx().synchronize();  // nothing was enqueued
}

TEST(CudaHyperConnection, MixAndInjectMatchTheModel) {
  check_hc(1, 256, 4, 40);
  check_hc(5, 100, 4, 24);
  check_hc(20, 256, 4, 40);  // prefill: projections through cuBLAS
  check_hc(3, 2560, 4, 320); // the Flash-Next widths
}

}  // namespace
}  // namespace ds4::cuda::test
