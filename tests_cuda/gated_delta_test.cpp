// The gated delta rule against cpu/gated_delta, from a non-zero state, and the GDN preparation step against the
// loop of models/qwen_hybrid/gated_deltanet.cpp. Inputs are realistic: q, k L2-normalised (q scaled by
// 1/sqrt(dk)), g = -exp(A) softplus(.) <= 0, beta in (0, 1).
//
// Bound: both sides compute in float32. On the CPU, the chunked and recurrent forms of the same function differ
// by about 1e-6 of max|output| up to T = 1000 (measured for dk 64..256); the GPU reorders sums the same way.
// 2e-5 of the largest magnitude leaves a 10x margin, while a wrong decay, gate or index shows at 1e-3 or more.
#include "cuda_test_util.h"

#include <cmath>
#include <cstring>
#include <tuple>

#include "backend/cpu/conv1d.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/norms.h"
#include "models/qwen_hybrid/gated_deltanet.h"

namespace ds4::cpu {
// Readable test names for the shape parameter (found by argument-dependent lookup).
inline void PrintTo(const DeltaShape& s, std::ostream* o) {
  *o << "T=" << s.T << " H=" << s.H << " dk=" << s.dk << " dv=" << s.dv;
}
}  // namespace ds4::cpu

namespace ds4::cuda::test {
namespace {

constexpr double kTol = 2e-5;

struct DeltaInputs {
  std::vector<float> q, k, v, g, beta, state;
};

DeltaInputs make_inputs(const DeltaShape& s, uint32_t seed) {
  DeltaInputs in;
  in.q = rand_vec(size_t(s.T * s.H * s.dk), -1.0f, 1.0f, seed);
  in.k = rand_vec(size_t(s.T * s.H * s.dk), -1.0f, 1.0f, seed + 1);
  in.v = rand_vec(size_t(s.T * s.H * s.dv), -1.0f, 1.0f, seed + 2);
  const auto a = rand_vec(size_t(s.T * s.H), -1.0f, 1.0f, seed + 3), b = rand_vec(size_t(s.T * s.H), -2.0f, 2.0f, seed + 4);
  for (size_t i = 0; i < a.size(); i++) {
    in.g.push_back(-std::exp(a[i]) * cpu::softplus(2.0f * b[i]));
    in.beta.push_back(cpu::sigmoid(2.0f * a[i] + b[i]));
  }
  in.state = rand_vec(size_t(s.H * s.dk * s.dv), -0.1f, 0.1f, seed + 5);
  cpu::l2_norm(in.q.data(), s.T * s.H, s.dk, 1e-6f);
  cpu::l2_norm(in.k.data(), s.T * s.H, s.dk, 1e-6f);
  for (auto& x : in.q) x *= 1.0f / std::sqrt(float(s.dk));
  return in;
}

enum class Form { Recurrent, Chunked };

void check_delta(const DeltaShape& s, Form form, uint32_t seed) {
  const auto in = make_inputs(s, seed);
  auto want_state = in.state;
  std::vector<float> want(size_t(s.T * s.H * s.dv));
  if (form == Form::Recurrent)
    cpu::gated_delta_recurrent(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), s, want_state.data(),
                               want.data());
  else
    cpu::gated_delta_chunked(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), s, want_state.data(),
                             want.data());
  auto dq = upload(in.q), dk = upload(in.k), dv = upload(in.v), dg = upload(in.g), db = upload(in.beta);
  auto dstate = upload(in.state);
  auto dout = nan_buffer<float>(want.size());
  if (form == Form::Recurrent)
    gated_delta_recurrent(ctx(), dq.get(), dk.get(), dv.get(), dg.get(), db.get(), s, dstate.get(), dout.get());
  else
    gated_delta_chunked(ctx(), dq.get(), dk.get(), dv.get(), dg.get(), db.get(), s, dstate.get(), dout.get());
  const std::string what = std::string(form == Form::Recurrent ? "recurrent" : "chunked") + " T=" + std::to_string(s.T) +
                           " H=" + std::to_string(s.H) + " dk=" + std::to_string(s.dk) + " dv=" + std::to_string(s.dv);
  expect_close_scaled(download(dout), want, kTol, what + " out");
  expect_close_scaled(download(dstate), want_state, kTol, what + " state");
}

class CudaDeltaRecurrent : public ::testing::TestWithParam<DeltaShape> {};
TEST_P(CudaDeltaRecurrent, MatchesCpu) { check_delta(GetParam(), Form::Recurrent, 1); }
INSTANTIATE_TEST_SUITE_P(Shapes, CudaDeltaRecurrent,
                         ::testing::Values(DeltaShape{1, 48, 128, 128},  // the decode step at the Flash-Next shape
                                           DeltaShape{1, 3, 64, 80}, DeltaShape{7, 2, 64, 80},
                                           DeltaShape{5, 1, 256, 33}, DeltaShape{3, 2, 100, 7}));

class CudaDeltaChunked : public ::testing::TestWithParam<DeltaShape> {};
TEST_P(CudaDeltaChunked, MatchesCpu) { check_delta(GetParam(), Form::Chunked, 7); }
INSTANTIATE_TEST_SUITE_P(Shapes, CudaDeltaChunked,
                         ::testing::Values(DeltaShape{64, 2, 128, 128}, DeltaShape{200, 3, 64, 40},
                                           DeltaShape{7, 2, 256, 256}, DeltaShape{1, 2, 128, 64},
                                           DeltaShape{33, 1, 128, 130}, DeltaShape{100, 4, 96, 64}));

// Prefill then decode must continue the same recurrence: chunked(T) then recurrent(1) == recurrent(T + 1).
TEST(CudaDelta, ChunkedThenRecurrentContinuesTheState) {
  const DeltaShape all{41, 2, 128, 64};
  const auto in = make_inputs(all, 21);
  auto want_state = in.state;
  std::vector<float> want(size_t(all.T * all.H * all.dv));
  cpu::gated_delta_recurrent(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), all, want_state.data(),
                             want.data());
  auto dq = upload(in.q), dk = upload(in.k), dv = upload(in.v), dg = upload(in.g), db = upload(in.beta);
  auto dstate = upload(in.state);
  auto dout = nan_buffer<float>(want.size());
  const DeltaShape first{40, 2, 128, 64}, last{1, 2, 128, 64};
  gated_delta_chunked(ctx(), dq.get(), dk.get(), dv.get(), dg.get(), db.get(), first, dstate.get(), dout.get());
  const int64_t qo = 40 * 2 * 128, vo = 40 * 2 * 64, go = 40 * 2;
  gated_delta_recurrent(ctx(), dq.get() + qo, dk.get() + qo, dv.get() + vo, dg.get() + go, db.get() + go, last,
                        dstate.get(), dout.get() + vo);
  expect_close_scaled(download(dout), want, kTol, "prefill then decode");
  expect_close_scaled(download(dstate), want_state, kTol, "prefill then decode state");
}

// gdn_prepare against the CPU model's loop (split, repeat_interleave of key heads, L2 norm, q scale, gates).
TEST(CudaDelta, PrepareMatchesTheModelLoop) {
  const int64_t T = 7, KH = 2, VH = 6, dk = 64, dv = 48, conv_dim = 2 * KH * dk + VH * dv;
  const auto conv = rand_vec(size_t(T * conv_dim), -2.0f, 2.0f, 31);
  const auto a = rand_vec(size_t(T * VH), -3.0f, 3.0f, 32), b = rand_vec(size_t(T * VH), -3.0f, 3.0f, 33);
  const auto A_log = rand_vec(size_t(VH), -1.0f, 1.0f, 34), dt_bias = rand_vec(size_t(VH), -1.0f, 1.0f, 35);
  std::vector<float> q, k, v, g, beta;
  qwen::gdn_prepare(conv.data(), a.data(), b.data(), A_log.data(), dt_bias.data(), T, KH, VH, dk, dv, q, k, v, g, beta);
  auto dconv = upload(conv), da = upload(a), db = upload(b), dA = upload(A_log), ddt = upload(dt_bias);
  auto oq = nan_buffer<float>(q.size()), ok = nan_buffer<float>(k.size()), ov = nan_buffer<float>(v.size());
  auto og = nan_buffer<float>(g.size()), ob = nan_buffer<float>(beta.size());
  gdn_prepare(ctx(), dconv.get(), da.get(), db.get(), dA.get(), ddt.get(), T, GdnHeads{KH, VH, dk, dv}, oq.get(), ok.get(),
              ov.get(), og.get(), ob.get());
  // Same arithmetic as the CPU (float64 sums, IEEE sqrt/div); expf/log1pf may differ by 2 ulp.
  expect_close(download(oq), q, 4e-6, 1e-7, "q");
  expect_close(download(ok), k, 4e-6, 1e-7, "k");
  expect_close(download(ov), v, 0.0, 0.0, "v");
  expect_close(download(og), g, 4e-6, 1e-7, "g");
  expect_close(download(ob), beta, 4e-6, 1e-7, "beta");
}

// gdn_recurrent_fused (prepare, recurrent delta rule and gated norm in one kernel) against the CPU model's chain
// qwen::gdn_prepare -> cpu::gated_delta_recurrent -> cpu::rms_norm_gated, with z, b and a read in place from rows
// of a wider projection; and a chunk of T tokens gives the same bits as T one-token calls (verification rows equal
// decode rows).
struct FusedCase {
  int64_t T, KH, VH, dk, dv;
  Act act;
};

void check_recurrent_fused(const FusedCase& fc, uint32_t seed) {
  const int64_t T = fc.T, KH = fc.KH, VH = fc.VH, dk = fc.dk, dv = fc.dv, vd = VH * dv;
  const int64_t conv_dim = 2 * KH * dk + vd, ld = vd + 2 * VH + 5;  // [z | b | a | unused]
  const std::string what = "fused T=" + std::to_string(T) + " KH=" + std::to_string(KH) + " VH=" + std::to_string(VH) +
                           " dk=" + std::to_string(dk) + " dv=" + std::to_string(dv);
  const auto conv = rand_vec(size_t(T * conv_dim), -2.0f, 2.0f, seed);
  const auto rows = rand_vec(size_t(T * ld), -3.0f, 3.0f, seed + 1);
  const auto A_log = rand_vec(size_t(VH), -1.0f, 1.0f, seed + 2), dt_bias = rand_vec(size_t(VH), -1.0f, 1.0f, seed + 3);
  const Weight norm(size_t(dv), 1.0f, seed + 4);
  const auto state0 = rand_vec(size_t(VH * dk * dv), -0.1f, 0.1f, seed + 5);
  const float eps = 1e-6f;
  std::vector<float> z(size_t(T * vd)), b(size_t(T * VH)), a(size_t(T * VH));
  for (int64_t t = 0; t < T; t++) {
    std::copy_n(rows.begin() + t * ld, vd, z.begin() + t * vd);
    std::copy_n(rows.begin() + t * ld + vd, VH, b.begin() + t * VH);
    std::copy_n(rows.begin() + t * ld + vd + VH, VH, a.begin() + t * VH);
  }
  std::vector<float> q, k, v, g, beta;
  qwen::gdn_prepare(conv.data(), a.data(), b.data(), A_log.data(), dt_bias.data(), T, KH, VH, dk, dv, q, k, v, g, beta);
  auto want_state = state0;
  std::vector<float> core(size_t(T * vd)), want(size_t(T * vd));
  cpu::gated_delta_recurrent(q.data(), k.data(), v.data(), g.data(), beta.data(), DeltaShape{T, VH, dk, dv},
                             want_state.data(), core.data());
  cpu::rms_norm_gated(core.data(), z.data(), norm.h(), want.data(), T * VH, dv, eps, fc.act);

  auto dconv = upload(conv), drows = upload(rows), dA = upload(A_log), ddt = upload(dt_bias);
  const GdnHeads heads{KH, VH, dk, dv};
  auto gates_at = [&](int64_t t) {
    const float* r = drows.get() + t * ld;
    return GdnGates{r, r + vd, r + vd + VH, ld, dA.get(), ddt.get(), norm.d(), eps, fc.act};
  };
  ASSERT_TRUE(gdn_recurrent_fused_supported(T, heads)) << what;
  auto dstate = upload(state0);
  auto dout = nan_buffer<float>(want.size());
  gdn_recurrent_fused(ctx(), dconv.get(), gates_at(0), T, heads, dstate.get(), dout.get());
  const auto got = download(dout), got_state = download(dstate);
  expect_close_scaled(got, want, kTol, what + " out");
  expect_close_scaled(got_state, want_state, kTol, what + " state");

  // One token at a time from the same state: bit for bit the chunk's rows and final state.
  auto sstate = upload(state0);
  auto sout = nan_buffer<float>(want.size());
  for (int64_t t = 0; t < T; t++)
    gdn_recurrent_fused(ctx(), dconv.get() + t * conv_dim, gates_at(t), 1, heads, sstate.get(), sout.get() + t * vd);
  const auto one = download(sout), one_state = download(sstate);
  EXPECT_EQ(0, std::memcmp(one.data(), got.data(), got.size() * sizeof(float))) << what << ": rows differ from decode";
  EXPECT_EQ(0, std::memcmp(one_state.data(), got_state.data(), got_state.size() * sizeof(float)))
      << what << ": state differs from decode";
}

TEST(CudaDelta, RecurrentFusedMatchesTheModelChain) {
  check_recurrent_fused({1, 16, 48, 128, 128, Act::Silu}, 41);  // the decode step at the Flash-Next shape
  check_recurrent_fused({4, 16, 48, 128, 128, Act::Silu}, 42);  // a verification chunk
  check_recurrent_fused({3, 2, 6, 64, 48, Act::Sigmoid}, 43);
  check_recurrent_fused({2, 1, 3, 100, 33, Act::Silu}, 44);     // odd dk, a partial column tile
  check_recurrent_fused({8, 3, 3, 128, 97, Act::Silu}, 45);
  check_recurrent_fused({1, 1, 1, 1, 1, Act::Sigmoid}, 46);
  check_recurrent_fused({2, 1, 2, 64, 200, Act::Silu}, 47);     // 7 blocks in a cluster
  check_recurrent_fused({3, 2, 2, 128, 256, Act::Silu}, 48);    // 8: the largest cluster
}

// The decode step's conv folded in (gdn_recurrent_fused with a GdnConv) against causal_conv1d then the plain fused
// step, from copies of the same conv history and recurrent state: outputs, recurrent state and conv history bit for
// bit, over two steps (the history carried; the first step's last reader of each key head must leave its counter at
// zero for the second), the conv input read in place from a projection row wider than it; and against the CPU
// chain cpu::causal_conv1d -> qwen::gdn_prepare -> cpu::gated_delta_recurrent -> cpu::rms_norm_gated.
void check_conv_fused(const FusedCase& fc, int64_t K, uint32_t seed) {
  const int64_t KH = fc.KH, VH = fc.VH, dk = fc.dk, dv = fc.dv, vd = VH * dv;
  const int64_t conv_dim = 2 * KH * dk + vd, N = conv_dim + vd + 2 * VH + 3;  // [q k v | z | b | a | unused]
  const std::string what = "conv fused KH=" + std::to_string(KH) + " VH=" + std::to_string(VH) + " dk=" +
                           std::to_string(dk) + " dv=" + std::to_string(dv) + " K=" + std::to_string(K);
  const GdnHeads heads{KH, VH, dk, dv};
  ASSERT_EQ(fc.T, 1) << what;
  ASSERT_TRUE(gdn_conv_fused_supported(1, heads, K)) << what;
  const auto A_log = rand_vec(size_t(VH), -1.0f, 1.0f, seed + 2), dt_bias = rand_vec(size_t(VH), -1.0f, 1.0f, seed + 3);
  const Weight norm(size_t(dv), 1.0f, seed + 4), w(size_t(conv_dim * K), 0.5f, seed + 5);
  const float eps = 1e-6f;
  auto conv_state = rand_vec(size_t((K - 1) * conv_dim), -2.0f, 2.0f, seed + 6);
  auto rec_state = rand_vec(size_t(VH * dk * dv), -0.1f, 0.1f, seed + 7);
  auto dA = upload(A_log), ddt = upload(dt_bias);
  auto cs_a = upload(conv_state), cs_b = upload(conv_state), rs_a = upload(rec_state), rs_b = upload(rec_state);
  for (int step = 0; step < 2; step++) {
    const std::string at = what + " step " + std::to_string(step);
    const auto rows = rand_vec(size_t(N), -2.0f, 2.0f, seed + 10 + uint32_t(step));
    const float *z = rows.data() + conv_dim, *b = z + vd, *a = b + VH;
    std::vector<float> co(conv_dim), core(vd), want(vd), q, k, v, g, beta;
    cpu::causal_conv1d(rows.data(), 1, conv_dim, w.h(), K, 1, conv_state.data(), co.data(), Act::Silu);
    qwen::gdn_prepare(co.data(), a, b, A_log.data(), dt_bias.data(), 1, KH, VH, dk, dv, q, k, v, g, beta);
    cpu::gated_delta_recurrent(q.data(), k.data(), v.data(), g.data(), beta.data(), DeltaShape{1, VH, dk, dv},
                               rec_state.data(), core.data());
    cpu::rms_norm_gated(core.data(), z, norm.h(), want.data(), VH, dv, eps, fc.act);

    auto drows = upload(rows);
    const float* r = drows.get();
    const GdnGates gates{r + conv_dim, r + conv_dim + vd, r + conv_dim + vd + VH, N, dA.get(), ddt.get(), norm.d(),
                         eps, fc.act};
    auto dco = nan_buffer<float>(size_t(conv_dim));
    auto out_a = nan_buffer<float>(size_t(vd)), out_b = nan_buffer<float>(size_t(vd));
    causal_conv1d(ctx(), r, 1, conv_dim, w.d(), K, 1, cs_a.get(), dco.get(), Act::Silu);
    gdn_recurrent_fused(ctx(), dco.get(), gates, 1, heads, rs_a.get(), out_a.get());
    const GdnConv fold{r, w.d(), K, cs_b.get(), Act::Silu};
    gdn_recurrent_fused(ctx(), nullptr, gates, 1, heads, rs_b.get(), out_b.get(), &fold);

    for (auto [x, y, name] : {std::tuple{&out_a, &out_b, "out"}, std::tuple{&rs_a, &rs_b, "recurrent state"},
                              std::tuple{&cs_a, &cs_b, "conv history"}}) {
      const auto va = download(*x), vb = download(*y);
      size_t i = 0;
      while (i < va.size() && std::memcmp(&va[i], &vb[i], sizeof(float)) == 0) i++;
      ASSERT_EQ(i, va.size()) << at << ": " << name << " differs at " << i << ": " << va[i] << " vs " << vb[i];
    }
    expect_close_scaled(download(out_b), want, kTol, at + " out");
    expect_close_scaled(download(rs_b), rec_state, kTol, at + " recurrent state");
    expect_close(download(cs_b), conv_state, 0.0, 0.0, at + " conv history");
  }
}

TEST(CudaDelta, RecurrentFusedConvEqualsTheConvKernel) {
  check_conv_fused({1, 16, 48, 128, 128, Act::Silu}, 4, 61);  // the decode step at the Flash-Next shape: 12 readers
  check_conv_fused({1, 1, 3, 32, 40, Act::Sigmoid}, 4, 62);   // 3 heads of 2 tiles, the second partial
  check_conv_fused({1, 3, 3, 100, 97, Act::Silu}, 3, 63);     // odd dk, one value head per key head, 3 taps
  check_conv_fused({1, 1, 2, 128, 256, Act::Silu}, 4, 64);    // clusters of 8: 16 readers
  check_conv_fused({1, 2, 4, 64, 64, Act::Silu}, 1, 65);      // no history
  check_conv_fused({1, 1, 5, 64, 128, Act::Silu}, 4, 66);     // 20 readers of one key head
  EXPECT_FALSE(gdn_conv_fused_supported(2, GdnHeads{16, 48, 128, 128}, 4));
  EXPECT_FALSE(gdn_conv_fused_supported(1, GdnHeads{16, 48, 128, 128}, 5));
}

TEST(CudaDelta, RecurrentFusedRejectsUnsupportedShapes) {
  EXPECT_FALSE(gdn_recurrent_fused_supported(9, GdnHeads{1, 1, 64, 64}));
  EXPECT_FALSE(gdn_recurrent_fused_supported(1, GdnHeads{1, 1, 256, 64}));
  EXPECT_FALSE(gdn_recurrent_fused_supported(1, GdnHeads{1, 1, 64, 257}));
  EXPECT_FALSE(gdn_recurrent_fused_supported(1, GdnHeads{2, 3, 64, 64}));
}

}  // namespace
}  // namespace ds4::cuda::test
