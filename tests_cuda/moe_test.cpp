// MoE on the GPU: routing against the CPU's softmax / cpu::topk_indices / renormalisation (ties included), and
// the whole block (routing, routed experts, gated shared expert) composed from CUDA ops against qwen::moe_forward,
// and moe_experts with the shared expert folded in (decode) or composed inside the op (prefill, other widths).
// The router logits are computed on the CPU and uploaded, so that a near-tie between the k-th and (k+1)-th
// expert cannot flip on the bf16 rounding of the router projection (linear has its own test).
//
// Bounds: decode (T <= 8) keeps activations in float32, so only summation order differs: 1e-4 of the largest
// output. Prefill rounds x and the SwiGLU activations to bf16 (2^-9 each) before the tensor-core GEMMs: the
// typical error is about 3e-3 of a typical output, and 1.5e-2 of the largest output bounds the worst element
// with margin; the relative L2 error must stay under 6e-3. A wrong expert, weight or token is off by O(1).
#include "cuda_test_util.h"

#include <cmath>
#include <sstream>

#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"
#include "backend/cpu/topk.h"
#include "models/qwen_hybrid/moe.h"

namespace ds4::cuda::test {
namespace {

// The CPU model's routing (moe.cpp): per token, softmax, top-k, optional renormalisation.
void cpu_route(const std::vector<float>& logits, int64_t T, int64_t E, int64_t K, bool renorm,
               std::vector<std::vector<int64_t>>& idx, std::vector<std::vector<float>>& wts) {
  idx.assign(size_t(T), {});
  wts.assign(size_t(T), {});
  for (int64_t t = 0; t < T; t++) {
    std::vector<float> l(logits.begin() + t * E, logits.begin() + (t + 1) * E);
    float mx = l[0];
    for (auto v : l) mx = std::max(mx, v);
    float sum = 0.0f;
    for (auto& v : l) sum += (v = std::exp(v - mx));
    for (auto& v : l) v /= sum;
    const auto top = cpu::topk_indices(l.data(), E, K);
    float norm = 0.0f;
    for (auto e : top) norm += l[size_t(e)];
    for (auto e : top) {
      idx[size_t(t)].push_back(e);
      wts[size_t(t)].push_back(renorm ? l[size_t(e)] / norm : l[size_t(e)]);
    }
  }
}

// 128 < E <= 1024 with K < 16 take the 8-warp kernel (each warp ranks its share, warp 0 the offers: {512, 10},
// {1024, 10}, {200, 8} with a partial last warp, {700, 15} with the most offers); other E <= 1024 and K <= 32
// the one-warp kernel (rounds of arg-max; {300, 16} past the offers' limit); {2048, 10} the block kernel with the
// same selection, {100, 40} the block kernel with the bitonic sort.
TEST(CudaMoe, RoutingSelectsLikeTheCpuWithTies) {
  for (auto [E, K] : std::vector<std::pair<int64_t, int64_t>>{{64, 4},
                                                              {512, 10},
                                                              {16, 16},
                                                              {1, 1},
                                                              {45, 32},
                                                              {1024, 10},
                                                              {200, 8},
                                                              {700, 15},
                                                              {300, 16},
                                                              {2048, 10},
                                                              {100, 40}}) {
    for (int64_t T : {1, 7, 33}) {
      auto logits = rand_vec(size_t(T * E), -3.0f, 3.0f, uint32_t(E + T));
      for (size_t i = 0; i < logits.size(); i += 3) logits[i] = std::round(logits[i]);  // many equal logits
      std::vector<std::vector<int64_t>> want_idx;
      std::vector<std::vector<float>> want_w;
      cpu_route(logits, T, E, K, true, want_idx, want_w);
      auto dl = upload(logits);
      auto di = nan_buffer<int32_t>(size_t(T * K));
      auto dw = nan_buffer<float>(size_t(T * K));
      moe_route(ctx(), dl.get(), T, E, K, true, di.get(), dw.get());
      const auto gi = download(di);
      const auto gw = download(dw);
      for (int64_t t = 0; t < T; t++) {
        std::vector<std::pair<int64_t, float>> g, w;
        for (int64_t j = 0; j < K; j++) {
          g.push_back({gi[size_t(t * K + j)], gw[size_t(t * K + j)]});
          w.push_back({want_idx[size_t(t)][size_t(j)], want_w[size_t(t)][size_t(j)]});
        }
        std::sort(g.begin(), g.end());
        std::sort(w.begin(), w.end());
        for (int64_t j = 0; j < K; j++) {
          ASSERT_EQ(g[size_t(j)].first, w[size_t(j)].first) << "E=" << E << " T=" << T << " t=" << t;
          // expf within 2 ulp and a different summation order: a few float32 ulps of each weight.
          EXPECT_NEAR(g[size_t(j)].second, w[size_t(j)].second, 2e-6 * w[size_t(j)].second + 1e-9);
        }
      }
    }
  }
}

struct MoeCase {
  int64_t T, H, E, K, I, shared;
};
std::ostream& operator<<(std::ostream& o, const MoeCase& c) {
  return o << "T=" << c.T << " H=" << c.H << " E=" << c.E << " K=" << c.K << " I=" << c.I << " shared=" << c.shared;
}

// The MoE block's config fields (top-k weights renormalised, as Flash-Next).
qwen::Config moe_config(int64_t H, int64_t E, int64_t K, int64_t I, int64_t SI) {
  qwen::Config c;
  c.hidden_size = H;
  c.num_experts = E;
  c.top_k = K;
  c.moe_inter = I;
  c.shared_inter = SI;
  c.norm_topk_prob = true;
  return c;
}

class CudaMoeBlock : public ::testing::TestWithParam<MoeCase> {};

TEST_P(CudaMoeBlock, MatchesTheModel) {
  const auto m = GetParam();
  const int64_t T = m.T, H = m.H, E = m.E, K = m.K, I = m.I, SI = m.shared;
  const qwen::Config c = moe_config(H, E, K, I, SI);
  Weight router(size_t(E * H), 1.7f / std::sqrt(float(H)), 1);
  Weight gate(size_t(E * I * H), 1.7f / std::sqrt(float(H)), 2), up(size_t(E * I * H), 1.7f / std::sqrt(float(H)), 3),
      down(size_t(E * H * I), 1.7f / std::sqrt(float(I)), 4);
  Weight sg(size_t(SI * H), 1.7f / std::sqrt(float(H)), 5), su(size_t(SI * H), 1.7f / std::sqrt(float(H)), 6),
      sd(size_t(H * SI), 1.7f / std::sqrt(float(SI)), 7), sgw(size_t(H), 1.7f / std::sqrt(float(H)), 8);
  qwen::MoeWeights w;
  w.router = {router.host, {E, H}};
  for (int64_t e = 0; e < E; e++) {
    w.gate.push_back({std::vector<float>(gate.host.begin() + e * I * H, gate.host.begin() + (e + 1) * I * H), {I, H}});
    w.up.push_back({std::vector<float>(up.host.begin() + e * I * H, up.host.begin() + (e + 1) * I * H), {I, H}});
    w.down.push_back({std::vector<float>(down.host.begin() + e * H * I, down.host.begin() + (e + 1) * H * I), {H, I}});
  }
  w.sh_gate = {sg.host, {SI, H}};
  w.sh_up = {su.host, {SI, H}};
  w.sh_down = {sd.host, {H, SI}};
  w.sh_gate_w = {sgw.host, {1, H}};
  const auto x = rand_vec(size_t(T * H), -1.0f, 1.0f, 9);
  std::vector<float> want(size_t(T * H));
  qwen::moe_forward(w, c, x.data(), T, want.data());

  std::vector<float> logits(size_t(T * E));
  cpu::linear(x.data(), T, H, router.h(), E, logits.data());
  auto& cx = ctx();
  auto dx = upload(x), dl = upload(logits);
  DeviceBuffer<int32_t> idx(size_t(T * K));
  DeviceBuffer<float> wts(size_t(T * K)), routed(size_t(T * H)), g(size_t(T * SI)), u(size_t(T * SI)), shared(size_t(T * H)),
      slogit(static_cast<size_t>(T));
  auto out = nan_buffer<float>(size_t(T * H));
  moe_route(cx, dl.get(), T, E, K, true, idx.get(), wts.get());
  routed.fill_bytes(0xFF);  // moe_experts must write every element
  moe_experts(cx, ExpertWeights{gate.d(), up.d(), down.d(), E, H, I}, dx.get(), T, idx.get(), wts.get(), K, routed.get());
  linear(cx, dx.get(), T, H, sg.d(), SI, g.get());
  linear(cx, dx.get(), T, H, su.d(), SI, u.get());
  swiglu(cx, g.get(), u.get(), g.get(), T * SI);
  linear(cx, g.get(), T, SI, sd.d(), H, shared.get());
  linear(cx, dx.get(), T, H, sgw.d(), 1, slogit.get());
  add_gated_rows(cx, routed.get(), shared.get(), slogit.get(), out.get(), T, H);
  const auto got = download(out);
  const bool decode = T <= 8;
  const std::string what = "moe T=" + std::to_string(T) + " H=" + std::to_string(H) + " E=" + std::to_string(E) +
                           " I=" + std::to_string(I);
  expect_close_scaled(got, want, decode ? 1e-4 : 1.5e-2, what);
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); i++) num += std::pow(got[i] - want[i], 2), den += std::pow(want[i], 2);
  EXPECT_LT(std::sqrt(num / den), decode ? 1e-5 : 6e-3) << what << " relative L2";
}

// moe_experts with the shared expert (the model's single call) against qwen::moe_forward. The shared expert's
// gate logit, gate and up projections come from one GPU projection [logit | gate | up | 3 spare rows], read in
// place with row stride ld = 2 SI + 4, as the model reads its router projection. Expert weights exist only for
// the experts the routing selects: the rest of the device stacks are NaN (reading an unselected expert shows)
// and the CPU model gets empty matrices for them, so 512 experts at the Flash-Next widths stay cheap.
struct SharedCase {
  int64_t T, H, E, K, I, SI;
};
std::ostream& operator<<(std::ostream& o, const SharedCase& c) {
  return o << "T=" << c.T << " H=" << c.H << " E=" << c.E << " K=" << c.K << " I=" << c.I << " SI=" << c.SI;
}

// Uniform in [-scale, scale), rounded to bf16, from a splitmix64 stream (fast: hundreds of millions of weights).
std::vector<float> fast_weights(size_t n, float scale, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    x = bf16_round((float(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * scale);
  }
  return v;
}

void upload_at(bf16* dst, const std::vector<float>& host) {
  const auto b = to_bf16(host);
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
  DS4_CUDA_CHECK(cudaMemcpy(dst, b.data(), b.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  DS4_CUDA_CHECK(cudaDeviceSynchronize());
}

class CudaMoeShared : public ::testing::TestWithParam<SharedCase> {};

TEST_P(CudaMoeShared, MatchesTheModel) {
  const auto m = GetParam();
  const int64_t T = m.T, H = m.H, E = m.E, K = m.K, I = m.I, SI = m.SI, ld = 2 * SI + 4;
  const qwen::Config c = moe_config(H, E, K, I, SI);
  const float sh = 1.7f / std::sqrt(float(H)), si = 1.7f / std::sqrt(float(I)), ssi = 1.7f / std::sqrt(float(SI));
  Weight router(size_t(E * H), sh, 21);
  const auto x = rand_vec(size_t(T * H), -1.0f, 1.0f, 22);
  std::vector<float> logits(size_t(T * E));
  cpu::linear(x.data(), T, H, router.h(), E, logits.data());
  std::vector<std::vector<int64_t>> sel;
  std::vector<std::vector<float>> sel_w;
  cpu_route(logits, T, E, K, true, sel, sel_w);

  qwen::MoeWeights w;
  w.router = {router.host, {E, H}};
  w.gate.resize(size_t(E));
  w.up.resize(size_t(E));
  w.down.resize(size_t(E));
  DeviceBuffer<bf16> dg(size_t(E * I * H)), du(size_t(E * I * H)), dd(size_t(E * H * I));
  dg.fill_bytes(0xFF);
  du.fill_bytes(0xFF);
  dd.fill_bytes(0xFF);
  for (const auto& row : sel)
    for (const int64_t e : row) {
      if (!w.gate[size_t(e)].v.empty()) continue;
      w.gate[size_t(e)] = {fast_weights(size_t(I * H), sh, uint64_t(3 * e + 1)), {I, H}};
      w.up[size_t(e)] = {fast_weights(size_t(I * H), sh, uint64_t(3 * e + 2)), {I, H}};
      w.down[size_t(e)] = {fast_weights(size_t(H * I), si, uint64_t(3 * e + 3)), {H, I}};
      upload_at(dg.get() + e * I * H, w.gate[size_t(e)].v);
      upload_at(du.get() + e * I * H, w.up[size_t(e)].v);
      upload_at(dd.get() + e * H * I, w.down[size_t(e)].v);
    }
  Weight sg(size_t(SI * H), sh, 23), su(size_t(SI * H), sh, 24), sd(size_t(H * SI), ssi, 25), sgw(size_t(H), sh, 26);
  w.sh_gate = {sg.host, {SI, H}};
  w.sh_up = {su.host, {SI, H}};
  w.sh_down = {sd.host, {H, SI}};
  w.sh_gate_w = {sgw.host, {1, H}};
  std::vector<float> want(size_t(T * H));
  qwen::moe_forward(w, c, x.data(), T, want.data());

  std::vector<float> proj(sgw.host);  // [logit | gate | up | spare] x H
  proj.insert(proj.end(), sg.host.begin(), sg.host.end());
  proj.insert(proj.end(), su.host.begin(), su.host.end());
  proj.resize(size_t(ld * H), 0.25f);
  const Weight dproj(proj);
  auto& cx = ctx();
  auto dx = upload(x), dl = upload(logits);
  DeviceBuffer<int32_t> idx(size_t(T * K));
  DeviceBuffer<float> wts(size_t(T * K)), pr(size_t(T * ld));
  auto out = nan_buffer<float>(size_t(T * H));
  moe_route(cx, dl.get(), T, E, K, true, idx.get(), wts.get());
  linear(cx, dx.get(), T, H, dproj.d(), ld, pr.get());
  SharedExpert s;
  s.down = sd.d();
  s.logit = pr.get();
  s.gate = pr.get() + 1;
  s.up = pr.get() + 1 + SI;
  s.ld = ld;
  s.inter = SI;
  moe_experts(cx, ExpertWeights{dg.get(), du.get(), dd.get(), E, H, I}, dx.get(), T, idx.get(), wts.get(), K, out.get(),
              &s);
  const auto got = download(out);
  const bool decode = T <= 8;
  std::ostringstream what;
  what << "moe+shared " << m;
  expect_close_scaled(got, want, decode ? 1e-4 : 1.5e-2, what.str());
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); i++) num += std::pow(got[i] - want[i], 2), den += std::pow(want[i], 2);
  EXPECT_LT(std::sqrt(num / den), decode ? 1e-5 : 6e-3) << what.str() << " relative L2";

  // The same block added into two hyper-connection streams (RowsOut): the bits of the output above through
  // hc_inject, whether the one-token down pass does it in its epilogue or the op composes it.
  const int64_t S = 2;
  const auto streams0 = rand_vec(size_t(T * S * H), -2.0f, 2.0f, 27);
  const auto inj = rand_vec(size_t(T * S), 0.0f, 2.0f, 28);
  auto dinj = upload(inj), want_s = upload(streams0), got_s = upload(streams0);
  hc_inject(cx, want_s.get(), out.get(), dinj.get(), T, S, H);
  moe_experts(cx, ExpertWeights{dg.get(), du.get(), dd.get(), E, H, I}, dx.get(), T, idx.get(), wts.get(), K,
              RowsOut{nullptr, got_s.get(), dinj.get(), S}, &s);
  expect_close(download(got_s), download(want_s), 0.0, 0.0, what.str() + " into streams");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaMoeShared,
    ::testing::Values(SharedCase{1, 2560, 512, 10, 640, 640},  // Flash-Next decode: shared expert in the down kernel
                      SharedCase{2, 2560, 512, 10, 640, 640},
                      SharedCase{3, 2560, 512, 10, 640, 640},
                      SharedCase{8, 2560, 512, 10, 640, 640},
                      SharedCase{3, 200, 24, 5, 40, 40},     // odd: 16-row tiles past H, a partial K step
                      SharedCase{8, 200, 12, 4, 40, 72},     // tokens sharing experts; shared width != routed
                      SharedCase{5, 136, 16, 3, 24, 8},      // shared expert narrower than one K step
                      SharedCase{2, 128, 16, 4, 48, 36},     // shared width not a multiple of 8: composed
                      SharedCase{3, 100, 12, 3, 44, 20},     // scalar decode path: composed
                      SharedCase{20, 256, 16, 4, 64, 96},    // prefill: composed, shared width != routed
                      SharedCase{24, 2560, 32, 10, 640, 640}));  // prefill at the Flash-Next widths

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaMoeBlock,
    ::testing::Values(MoeCase{1, 128, 16, 4, 48, 40},      // decode
                      MoeCase{7, 128, 16, 4, 48, 40},      // small batch decode
                      MoeCase{64, 128, 16, 4, 48, 40},     // prefill: grouped GEMM
                      MoeCase{200, 96, 8, 4, 64, 32},      // prefill: experts with more than one 64-row tile
                      MoeCase{3, 100, 12, 3, 44, 20},      // odd widths: scalar loads
                      MoeCase{20, 100, 12, 3, 44, 20},     // odd widths in the grouped GEMM
                      MoeCase{1, 2560, 32, 10, 640, 640},  // Flash-Next widths, decode
                      MoeCase{24, 2560, 32, 10, 640, 640}));

}  // namespace
}  // namespace ds4::cuda::test
