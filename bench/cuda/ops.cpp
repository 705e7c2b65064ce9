// bench_cuda_ops: times the CUDA ops at the Flash-Next shape (bench/flash-next-shape.json) and prints a table.
// Decode rows report achieved GB/s of the bytes that must cross HBM (weights, KV rows or recurrent state) against
// the measured 4,265 GB/s copy bandwidth; prefill rows report TFLOP/s against the 786 TFLOP/s bf16 matmul.
// Weights are constant-filled (speed does not depend on the values) and, where one copy would fit in the 60 MB
// L2, several copies are cycled so every call reads from HBM. `bench_cuda_ops attention` and `bench_cuda_ops hc` time
// one op alone and print its output's bits, to check two builds of a kernel change for the same results.
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/ops.h"

using namespace ds4::cuda;

namespace {

constexpr double kHbmGBs = 4265.0, kBf16TFlops = 786.0;

// Mean milliseconds of fn(i) over iters calls after 3 warm-up calls; fn gets the call's index.
double time_ms(Context& ctx, const std::function<void(int)>& fn, int iters = 20) {
  for (int i = 0; i < 3; i++) fn(i);
  cudaEvent_t a, b;
  DS4_CUDA_CHECK(cudaEventCreate(&a));
  DS4_CUDA_CHECK(cudaEventCreate(&b));
  DS4_CUDA_CHECK(cudaEventRecord(a, ctx.stream()));
  for (int i = 0; i < iters; i++) fn(i);
  DS4_CUDA_CHECK(cudaEventRecord(b, ctx.stream()));
  DS4_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  DS4_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(ms) / iters;
}

template <class T>
DeviceBuffer<T> filled(size_t n, int byte) {
  DeviceBuffer<T> b(n);
  b.fill_bytes(byte);
  return b;
}

void row_bw(const char* what, double ms, double bytes) {
  std::printf("| %-46s | %9.1f | %8.1f GB/s | %5.1f%% of HBM |\n", what, ms * 1e3, bytes / ms / 1e6,
              100.0 * bytes / ms / 1e6 / kHbmGBs);
}
void row_flops(const char* what, double ms, double flops) {
  std::printf("| %-46s | %9.1f | %8.1f TFLOP/s | %5.1f%% of bf16 |\n", what, ms * 1e3, flops / ms / 1e9,
              100.0 * flops / ms / 1e9 / kBf16TFlops);
}

// FNV-1a of n bytes: an output's bits, so that two builds of a kernel change can be checked for the same results
// in one call.
uint64_t fnv1a(const void* p, size_t n) {
  uint64_t f = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) f = (f ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return f;
}

// A bf16 of about 0.0115 in every element: 0x3C3C.
constexpr int kWeightByte = 0x3C;

void bench_linear(Context& ctx, int64_t T, int64_t K, int64_t N, const char* what) {
  const size_t wbytes = size_t(N * K) * 2;
  const int copies = int(std::max<size_t>(1, (size_t(256) << 20) / wbytes + 1));
  std::vector<DeviceBuffer<bf16>> W;
  for (int i = 0; i < copies; i++) W.push_back(filled<bf16>(size_t(N * K), kWeightByte));
  auto x = filled<float>(size_t(T * K), 0x3C);
  auto y = filled<float>(size_t(T * N), 0);
  const double ms = time_ms(ctx, [&](int i) { linear(ctx, x.get(), T, K, W[size_t(i % copies)].get(), N, y.get()); });
  if (T <= 8) row_bw(what, ms, double(wbytes));
  else row_flops(what, ms, 2.0 * double(T) * double(N) * double(K));
}

// shared: every token of a call selects the same k experts (a verify batch whose tokens agree), so only k
// experts are read; otherwise the T * k selections are all distinct.
void bench_moe(Context& ctx, int64_t T, int64_t E, int64_t K, int64_t H, int64_t I, const char* what,
               bool shared = false) {
  auto gate = filled<bf16>(size_t(E * I * H), kWeightByte), up = filled<bf16>(size_t(E * I * H), kWeightByte),
       down = filled<bf16>(size_t(E * H * I), kWeightByte);
  // Decode calls cycle over disjoint expert sets so that no call finds the previous call's experts in L2.
  const int64_t sets = T * K <= 64 ? 8 : 1;
  std::vector<int32_t> idx(size_t(sets * T * K));
  std::vector<float> w(idx.size(), 1.0f / float(K));
  for (int64_t i = 0; i < sets * T * K; i++) {
    const int64_t set = i / (T * K), j = i % K, pick = shared ? set * K + j : i;
    idx[size_t(i)] = int32_t((pick * 131) % E);  // distinct within a token
  }
  DeviceBuffer<int32_t> didx(idx);
  DeviceBuffer<float> dw(w);
  auto x = filled<float>(size_t(T * H), 0x3C);
  auto out = filled<float>(size_t(T * H), 0);
  const ExpertWeights ew{gate.get(), up.get(), down.get(), E, H, I};
  const double ms = time_ms(ctx, [&](int i) {
    const int64_t o = (i % sets) * T * K;
    moe_experts(ctx, ew, x.get(), T, didx.get() + o, dw.get() + o, K, out.get());
  });
  const double bytes = double(std::min<int64_t>(shared ? K : T * K, E)) * 3.0 * double(I * H) * 2.0;
  if (T <= 8) row_bw(what, ms, bytes);
  else row_flops(what, ms, 2.0 * 3.0 * double(T * K) * double(I * H));
}

// moe_experts with the block's shared expert (width SI, its gate logit, gate and up read in place from a
// router projection of row stride N = E + 1 + 2 SI, as the model does): fused into the decode kernels, or, with
// composed, the block's former tail: routed experts, then swiglu, linear(shared down), add_gated_rows.
void bench_moe_shared(Context& ctx, int64_t T, int64_t E, int64_t K, int64_t H, int64_t I, int64_t SI, bool composed,
                      const char* what) {
  auto gate = filled<bf16>(size_t(E * I * H), kWeightByte), up = filled<bf16>(size_t(E * I * H), kWeightByte),
       down = filled<bf16>(size_t(E * H * I), kWeightByte);
  const int64_t sets = 8, N = E + 1 + 2 * SI;
  std::vector<DeviceBuffer<bf16>> sh_down;
  for (int i = 0; i < sets; i++) sh_down.push_back(filled<bf16>(size_t(H * SI), kWeightByte));
  std::vector<int32_t> idx(size_t(sets * T * K));
  std::vector<float> w(idx.size(), 1.0f / float(K));
  for (int64_t i = 0; i < sets * T * K; i++) idx[size_t(i)] = int32_t((i * 131) % E);
  DeviceBuffer<int32_t> didx(idx);
  DeviceBuffer<float> dw(w);
  auto x = filled<float>(size_t(T * H), 0x3C), pr = filled<float>(size_t(T * N), 0x3C);
  auto out = filled<float>(size_t(T * H), 0), routed = filled<float>(size_t(T * H), 0),
       shared = filled<float>(size_t(T * H), 0), h = filled<float>(size_t(T * SI), 0);
  const ExpertWeights ew{gate.get(), up.get(), down.get(), E, H, I};
  const double ms = time_ms(ctx, [&](int i) {
    const int64_t o = (i % sets) * T * K;
    const bf16* sd = sh_down[size_t(i % sets)].get();
    if (composed) {
      moe_experts(ctx, ew, x.get(), T, didx.get() + o, dw.get() + o, K, routed.get());
      swiglu(ctx, pr.get() + E + 1, pr.get() + E + 1 + SI, h.get(), T * SI);  // T = 1: the columns are dense
      linear(ctx, h.get(), T, SI, sd, H, shared.get());
      add_gated_rows(ctx, routed.get(), shared.get(), pr.get() + E, out.get(), T, H);
    } else {
      SharedExpert sh;
      sh.down = sd, sh.logit = pr.get() + E, sh.gate = pr.get() + E + 1, sh.up = pr.get() + E + 1 + SI;
      sh.ld = N, sh.inter = SI;
      moe_experts(ctx, ew, x.get(), T, didx.get() + o, dw.get() + o, K, out.get(), &sh);
    }
  });
  row_bw(what, ms, (double(std::min<int64_t>(T * K, E)) * 3.0 * double(I * H) + double(H * SI)) * 2.0);
}

// moe_route on random logits (no ties at the k-th place: the selection's fast path).
void bench_route(Context& ctx, int64_t T, int64_t E, int64_t K, const char* what) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> l(size_t(T * E));
  for (auto& v : l) v = d(rng);
  DeviceBuffer<float> dl(l), dw(size_t(T * K));
  DeviceBuffer<int32_t> di(size_t(T * K));
  const double ms = time_ms(ctx, [&](int) { moe_route(ctx, dl.get(), T, E, K, true, di.get(), dw.get()); });
  std::printf("| %-46s | %9.1f | %-30s |\n", what, ms * 1e3, "latency");
}

// T queries over `keys` cached rows each (position lists when `lists`, else causal). used < keys: the lists hold
// `keys` slots but only `used` are filled (the decode graph's selection before the context reaches the budget).
// hash: random inputs, and the output's bits are printed, so that two builds can be checked for the same results.
void bench_attention(Context& ctx, int64_t T, int64_t keys, bool lists, const char* what, int64_t cache = 200000,
                     bool hash = false, int64_t used = -1) {
  const int64_t heads = 32, kv = 2, hd = 256;
  if (used < 0) used = keys;
  auto kc = filled<bf16>(size_t(cache * kv * hd), kWeightByte), vc = filled<bf16>(size_t(cache * kv * hd), kWeightByte);
  auto q = filled<float>(size_t(T * heads * hd), 0x3C), gate = filled<float>(size_t(T * heads * hd), 0x3C);
  auto out = filled<float>(size_t(T * heads * hd), 0);
  if (hash) {
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0f, 1.0f);
    auto fill = [&](auto& buf, size_t n) {
      using V = std::remove_pointer_t<decltype(buf.get())>;
      std::vector<V> h(n);
      for (auto& v : h) v = V(d(rng));
      DS4_CUDA_CHECK(cudaMemcpy(buf.get(), h.data(), n * sizeof(V), cudaMemcpyHostToDevice));
    };
    fill(kc, size_t(cache * kv * hd));
    fill(vc, size_t(cache * kv * hd));
    fill(q, size_t(T * heads * hd));
    fill(gate, size_t(T * heads * hd));
  }
  std::vector<int32_t> sel(size_t(T * keys));
  std::vector<int32_t> count(static_cast<size_t>(T), static_cast<int32_t>(used));
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < keys; i++) sel[size_t(t * keys + i)] = int32_t(i * (cache / keys));  // spread rows
  DeviceBuffer<int32_t> dsel(sel), dcount(count);
  const KeySelection ks = lists ? KeySelection::lists(dsel.get(), dcount.get(), keys) : KeySelection::causal(keys - T, T);
  const double ms = time_ms(ctx, [&](int) {
    attention(ctx, q.get(), kc.get(), vc.get(), AttnShape{heads, kv, hd}, T, ks, 1.0f / 16.0f, gate.get(), out.get());
  });
  if (T == 1) row_bw(what, ms, double(keys) * 2.0 * double(kv * hd) * 2.0);
  if (hash) {
    // The output's bits. The inputs differ per row: q varies by position so every key and split counts.
    std::vector<float> h(size_t(T * heads * hd));
    DS4_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));  // the default stream's copy does not wait for it
    DS4_CUDA_CHECK(cudaMemcpy(h.data(), out.get(), h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("|   output bits (FNV-1a) %016llx |  |  |\n",
                static_cast<unsigned long long>(fnv1a(h.data(), h.size() * sizeof(float))));
  }
  else row_flops(what, ms, 4.0 * double(T) * double(heads) * double(keys) * double(hd) * (lists ? 1.0 : 0.5));
}

void bench_delta(Context& ctx, int64_t T, bool chunked, const char* what) {
  const int64_t H = 48, dk = 128, dv = 128;
  auto q = filled<float>(size_t(T * H * dk), 0x3C), k = filled<float>(size_t(T * H * dk), 0x3C);
  auto v = filled<float>(size_t(T * H * dv), 0x3C), g = filled<float>(size_t(T * H), 0xBC),
       beta = filled<float>(size_t(T * H), 0x3C);
  std::vector<DeviceBuffer<float>> states;
  for (int i = 0; i < 24; i++) states.push_back(filled<float>(size_t(H * dk * dv), 0));  // 24 layers' states: > L2
  auto out = filled<float>(size_t(T * H * dv), 0);
  const DeltaShape s{T, H, dk, dv};
  const double ms = time_ms(ctx, [&](int i) {
    float* st = states[size_t(i % 24)].get();
    if (chunked) gated_delta_chunked(ctx, q.get(), k.get(), v.get(), g.get(), beta.get(), s, st, out.get());
    else gated_delta_recurrent(ctx, q.get(), k.get(), v.get(), g.get(), beta.get(), s, st, out.get());
  });
  if (!chunked) row_bw(what, ms, 2.0 * double(H * dk * dv) * 4.0);
  else std::printf("| %-46s | %9.1f | %8.0f tokens/ms per layer |\n", what, ms * 1e3, double(T) / ms);
}

// hc_mix: the fused op (two kernels) against the composition the model runs above kHcFusedMaxT tokens (norm,
// down | inject GEMV, silu, up GEMV, collapse, inject sigmoid: six launches at T = 1),
// both reading the 13.2 MB of norm, [down | inject] and up weights; copies are cycled so every call reads HBM.
void bench_hc(Context& ctx) {
  const int64_t H = 2560, S = 4, R = 320, D = S * H, NI = R + S, T = 8;
  const double bytes = double(NI * D + D * R + D) * 2.0;
  const int copies = int((size_t(256) << 20) / size_t(bytes) + 1);
  std::vector<DeviceBuffer<bf16>> di, up, norm;
  for (int i = 0; i < copies; i++) {
    di.push_back(filled<bf16>(size_t(NI * D), kWeightByte));
    up.push_back(filled<bf16>(size_t(D * R), kWeightByte));
    norm.push_back(filled<bf16>(size_t(D), 0));
  }
  auto x = filled<float>(size_t(T * D), 0x3C), normed = filled<float>(size_t(D), 0);
  auto li = filled<float>(size_t(NI), 0), mix = filled<float>(size_t(D), 0);
  auto mixed = filled<float>(size_t(T * H), 0), inj = filled<float>(size_t(T * S), 0);
  auto fused = [&](int64_t t) {
    return time_ms(ctx, [&](int i) {
      const size_t k = size_t(i % copies);
      hc_mix_fused(ctx, x.get(), t, S, H, R, norm[k].get(), di[k].get(), NI, up[k].get(), 1e-6f, mixed.get(),
                   inj.get());
    });
  };
  const double composed = time_ms(ctx, [&](int i) {
    const size_t k = size_t(i % copies);
    rms_norm_offset(ctx, x.get(), norm[k].get(), normed.get(), 1, D, H, 1e-6f);
    linear(ctx, normed.get(), 1, D, di[k].get(), NI, li.get());
    activate(ctx, li.get(), li.get(), R, Act::Silu, float(S));
    linear(ctx, li.get(), 1, R, up[k].get(), D, mix.get());
    hc_collapse(ctx, mix.get(), normed.get(), 1, S, H, mixed.get());
    activate(ctx, li.get() + R, inj.get(), S, Act::Sigmoid, float(S), 2.0f);
  });
  row_bw("hc_mix T=1 composed (7 kernels)", composed, bytes);
  row_bw("hc_mix_fused T=1 (2 kernels)", fused(1), bytes);
  row_bw("hc_mix_fused T=8", fused(T), bytes);
}

// The fused mixer's output bits on random inputs at the Flash-Next shape, per token (its mixed row / its inject
// values), for chunks of 1, 8, 2, 4, 1 and 8 tokens: a token's bits are the same in every chunk, and two builds of a
// mixer change can be compared in one call.
void hash_hc(Context& ctx) {
  const int64_t H = 2560, S = 4, R = 320, D = S * H, NI = R + S, T = 8;
  std::mt19937 rng(11);
  auto rand_bf16 = [&](size_t n, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<bf16> v(n);
    for (auto& e : v) e = __float2bfloat16(u(rng));
    return DeviceBuffer<bf16>(v);
  };
  auto di = rand_bf16(size_t(NI * D), 0.02f), up = rand_bf16(size_t(D * R), 0.1f), norm = rand_bf16(size_t(D), 0.2f);
  std::vector<float> xh(size_t(T * D));
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (auto& e : xh) e = u(rng);
  DeviceBuffer<float> x(xh), mixed(size_t(T * H)), inj(size_t(T * S));
  for (int64_t t : {int64_t(1), T, int64_t(2), int64_t(4), int64_t(1), T}) {
    hc_mix_fused(ctx, x.get(), t, S, H, R, norm.get(), di.get(), NI, up.get(), 1e-6f, mixed.get(), inj.get());
    // The context's stream does not synchronise with the default stream's copies.
    DS4_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
    std::vector<float> m(size_t(t * H)), j(size_t(t * S));
    DS4_CUDA_CHECK(cudaMemcpy(m.data(), mixed.get(), m.size() * sizeof(float), cudaMemcpyDeviceToHost));
    DS4_CUDA_CHECK(cudaMemcpy(j.data(), inj.get(), j.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("| hc_mix_fused T=%lld output bits (FNV-1a) of each token's mixed row / inject:",
                static_cast<long long>(t));
    for (int64_t k = 0; k < t; k++)
      std::printf(" %08llx/%04llx", static_cast<unsigned long long>(fnv1a(m.data() + k * H, size_t(H) * 4) >> 32),
                  static_cast<unsigned long long>(fnv1a(j.data() + k * S, size_t(S) * 4) >> 48));
    std::printf(" |\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Context ctx(0, size_t(2) << 30);
    if (argc > 1 && std::string(argv[1]) == "attention") {
      // Decode attention alone, over selections packed in a 4096-position cache (as after a 4096-token prompt).
      std::printf("| %-46s | %9s | %-30s |\n|---|---|---|\n", "op", "us", "rate");
      for (int64_t used : {16, 64, 512, 2112}) {
        const std::string what = "attention T=1, " + std::to_string(used) + " of 2112 listed keys";
        bench_attention(ctx, 1, 2112, true, what.c_str(), 4096, true, used);
      }
      bench_attention(ctx, 4, 2112, true, "attention T=4, 2112 listed keys", 4096, true);
      return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "moe") {  // one token's expert passes alone (the full table's rows)
      std::printf("| %-46s | %9s | %-30s |\n|---|---|---|\n", "op", "us", "rate");
      bench_moe(ctx, 1, 512, 10, 2560, 640, "moe_experts T=1 (10 of 512 experts)");
      bench_moe_shared(ctx, 1, 512, 10, 2560, 640, 640, false, "moe_experts T=1 with shared (fused)");
      return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "hc") {  // the mixer's output bits, then its timing
      hash_hc(ctx);
      std::printf("| %-46s | %9s | %-30s |\n|---|---|---|\n", "op", "us", "rate");
      bench_hc(ctx);
      return 0;
    }
    cudaDeviceProp prop{};
    DS4_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs, L2 %d MB. Flash-Next shapes (hidden 2560, 512 experts top-10 x 640, 32/2 heads x 256).\n\n",
                prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    std::printf("| %-46s | %9s | %-30s |\n|---|---|---|\n", "op", "us", "rate");
    bench_linear(ctx, 1, 2560, 10240, "linear T=1 2560->10240 (GDN qkv)");
    bench_linear(ctx, 1, 2560, 2560, "linear T=1 2560->2560");
    bench_linear(ctx, 1, 6144, 2560, "linear T=1 6144->2560 (GDN out)");
    bench_linear(ctx, 1, 2560, 248320, "linear T=1 2560->248320 (lm_head)");
    bench_linear(ctx, 1, 2560, 19584, "linear T=1 2560->19584 (fused)");
    bench_linear(ctx, 1, 2560, 16480, "linear T=1 2560->16480 (fused)");
    bench_linear(ctx, 1, 2560, 512, "linear T=1 2560->512 (router)");
    bench_linear(ctx, 2, 2560, 10240, "linear T=2 2560->10240");
    bench_linear(ctx, 4, 2560, 10240, "linear T=4 2560->10240");
    bench_linear(ctx, 8, 2560, 10240, "linear T=8 2560->10240");
    bench_linear(ctx, 8, 6144, 2560, "linear T=8 6144->2560");
    bench_moe(ctx, 1, 512, 10, 2560, 640, "moe_experts T=1 (10 of 512 experts)");
    bench_moe(ctx, 2, 512, 10, 2560, 640, "moe_experts T=2");
    bench_moe(ctx, 4, 512, 10, 2560, 640, "moe_experts T=4");
    bench_moe(ctx, 8, 512, 10, 2560, 640, "moe_experts T=8");
    bench_moe(ctx, 4, 512, 10, 2560, 640, "moe_experts T=4, tokens share experts", true);
    bench_moe_shared(ctx, 1, 512, 10, 2560, 640, 640, false, "moe_experts T=1 with shared (fused)");
    bench_moe_shared(ctx, 1, 512, 10, 2560, 640, 640, true, "moe_experts T=1 + shared composed (before)");
    bench_moe_shared(ctx, 4, 512, 10, 2560, 640, 640, false, "moe_experts T=4 with shared (fused)");
    bench_route(ctx, 1, 512, 10, "moe_route T=1 E=512 k=10");
    bench_route(ctx, 4, 512, 10, "moe_route T=4 E=512 k=10");
    bench_attention(ctx, 1, 2112, true, "attention T=1, 2112 selected keys, bf16 KV");
    bench_attention(ctx, 1, 32768, false, "attention T=1, 32768 causal keys, bf16 KV");
    bench_delta(ctx, 1, false, "gated_delta_recurrent T=1 (48 heads 128x128)");
    bench_hc(ctx);
    bench_linear(ctx, 512, 2560, 10240, "linear T=512 2560->10240 (cuBLASLt)");
    bench_moe(ctx, 512, 512, 10, 2560, 640, "moe_experts T=512 (grouped WMMA)");
    bench_attention(ctx, 512, 512, false, "attention T=512 causal from 0");
    bench_attention(ctx, 512, 2112, true, "attention T=512, 2112 keys each");
    bench_delta(ctx, 512, true, "gated_delta_chunked T=512");
    std::printf("\nscratch peak %.1f MB\n", double(ctx.scratch().peak()) / 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
