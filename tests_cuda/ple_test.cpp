// PLE on the GPU: the n-gram rows and carried context against qwen::ple_ngram_rows, and the whole block composed
// from CUDA ops (hash, gather, projections, norms, gate, dilated conv) against qwen::ple_forward over chunks.
//
// Bound: the embeddings are bf16 table rows, so even the cuBLAS projections see exact inputs; everything is float32
// up to summation order. The gate's signed square root is steep only near 0, which random inputs do not hit.
// 1e-4 of the largest output covers that with a wide margin; a wrong row or stream is off by O(1).
#include "cuda_test_util.h"

#include <cmath>
#include <cstring>

#include "models/qwen_hybrid/ple.h"

namespace ds4::cuda::test {
namespace {

struct PleSetup {
  qwen::Config c;
  qwen::PleWeights w;
  std::vector<Weight> dev;  // table, key, value, norm_key, norm_query, norm_conv, conv
  PleHash hash;
};

PleSetup make_ple(int64_t H, int64_t S, int64_t E, int64_t N, int64_t hpn) {
  PleSetup p;
  auto& c = p.c;
  c.vocab_size = 1000;
  c.hidden_size = H;
  c.hc_count = S;
  c.ple_embed_dim = E;
  c.ngram_size = N;
  c.heads_per_ngram = hpn;
  c.ple_conv_kernel = 4;
  c.ngram_vocab_base = 50;
  c.ngram_divisor = 16;
  c.eos_ids = {7};
  c.rms_eps = 1e-6;
  c.seed = 1234;
  auto& w = p.w;
  const int64_t heads = (N - 1) * hpn, hd = E / heads, D = S * H;
  w.multipliers = qwen::ple_layer_multipliers(c.vocab_size, N, 0, c.seed);
  w.head_sizes = qwen::ple_head_vocab_sizes(c.ngram_vocab_base, heads, 0);
  int64_t total = 0;
  for (auto s : w.head_sizes) w.head_offsets.push_back(total), total += s;
  const int64_t rows = (total + c.ngram_divisor - 1) / c.ngram_divisor * c.ngram_divisor;
  p.dev.emplace_back(size_t(rows * hd), 1.0f, 1);
  p.dev.emplace_back(size_t(D * E), 1.7f / std::sqrt(float(E)), 2);
  p.dev.emplace_back(size_t(H * E), 1.7f / std::sqrt(float(E)), 3);
  p.dev.emplace_back(size_t(D), 0.2f, 4);
  p.dev.emplace_back(size_t(D), 0.2f, 5);
  p.dev.emplace_back(size_t(D), 0.2f, 6);
  p.dev.emplace_back(size_t(D * c.ple_conv_kernel), 0.5f, 7);
  w.table = {p.dev[0].host, {rows, hd}};
  w.key = {p.dev[1].host, {D, E}};
  w.value = {p.dev[2].host, {H, E}};
  w.norm_key = {p.dev[3].host, {D}};
  w.norm_query = {p.dev[4].host, {D}};
  w.norm_conv = {p.dev[5].host, {D}};
  w.conv = {p.dev[6].host, {D, 1, c.ple_conv_kernel}};
  p.hash = PleHash::make(N, hpn, c.eos_for_ple(), w.multipliers, w.head_sizes, w.head_offsets);
  return p;
}

std::vector<int32_t> tokens_with_eos(int64_t T, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(T));
  for (auto& x : t) x = rng() % 4 == 0 ? 7 : int32_t(rng() % 1000);
  return t;
}

// The block's front on the device: n-gram rows (context carried in dctx), table rows, the key [T][S*H] and value
// [T][H] projections.
void ple_front(const PleSetup& p, const int32_t* tokens, int64_t T, int64_t* dctx, float* key, float* value) {
  const int64_t heads = p.hash.heads(), E = p.c.ple_embed_dim, hd = E / heads;
  const int64_t D = p.c.hc_count * p.c.hidden_size;
  DeviceBuffer<int64_t> rows(size_t(T * heads));
  DeviceBuffer<float> emb(size_t(T * E));
  ple_ngram_rows(ctx(), p.hash, tokens, T, dctx, rows.get());
  gather_rows(ctx(), p.dev[0].d(), hd, rows.get(), T * heads, emb.get());
  linear(ctx(), emb.get(), T, E, p.dev[1].d(), D, key);
  linear(ctx(), emb.get(), T, E, p.dev[2].d(), p.c.hidden_size, value);
}

// The rest composed from the single ops: out = gated + conv (the block's output before it is added to x); key is
// normalised in place.
void ple_composed_tail(const PleSetup& p, float* key, const float* value, const float* x, int64_t T, float* conv_state,
                       float* out) {
  const int64_t H = p.c.hidden_size, S = p.c.hc_count, D = S * H;
  const float eps = float(p.c.rms_eps);
  auto& cx = ctx();
  DeviceBuffer<float> query(size_t(T * D)), gated(size_t(T * D)), normed(size_t(T * D)), conv(size_t(T * D));
  rms_norm_offset(cx, key, p.dev[3].d(), key, T, D, H, eps);
  rms_norm_offset(cx, x, p.dev[4].d(), query.get(), T, D, H, eps);
  ple_gate(cx, key, query.get(), value, T, S, H, gated.get());
  rms_norm_offset(cx, gated.get(), p.dev[5].d(), normed.get(), T, D, H, eps);
  causal_conv1d(cx, normed.get(), T, D, p.dev[6].d(), p.c.ple_conv_kernel, p.c.ngram_size, conv_state, conv.get(),
                Act::Silu);
  add(cx, gated.get(), conv.get(), out, T * D);
}

TEST(CudaPle, NgramRowsAndContextMatchTheModel) {
  auto p = make_ple(32, 4, 48, 3, 3);
  qwen::PleState s;
  qwen::init_ple_state(s, p.c);
  auto dctx = upload(s.context);
  const int64_t heads = p.hash.heads();
  uint32_t seed = 1;
  for (int64_t T : {1, 7, 64, 2, 300}) {
    const auto tokens = tokens_with_eos(T, seed++);
    const auto want = qwen::ple_ngram_rows(p.w, p.c, s, tokens.data(), T);
    auto dt = upload(tokens);
    auto rows = nan_buffer<int64_t>(size_t(T * heads));
    ple_ngram_rows(ctx(), p.hash, dt.get(), T, dctx.get(), rows.get());
    ASSERT_EQ(download(rows), want) << "T=" << T;
    ASSERT_EQ(download(dctx), s.context) << "T=" << T;
  }
}

TEST(CudaPle, BlockMatchesTheModelAcrossChunks) {
  const int64_t H = 32, S = 4, E = 48, N = 3, D = S * H;
  auto p = make_ple(H, S, E, N, 3);
  qwen::PleState s;
  qwen::init_ple_state(s, p.c);
  auto dctx = upload(s.context);
  DeviceBuffer<float> conv_state(s.conv.size());
  conv_state.fill_bytes(0);
  uint32_t seed = 50;
  for (int64_t T : {5, 1, 12, 3}) {
    const auto tokens = tokens_with_eos(T, seed++);
    const auto x = rand_vec(size_t(T * D), -2.0f, 2.0f, seed++);
    std::vector<float> want(size_t(T * D));
    qwen::ple_forward(p.w, p.c, s, x.data(), tokens.data(), T, want.data());

    auto dt = upload(tokens);
    auto dx = upload(x);
    DeviceBuffer<float> key(size_t(T * D)), value(size_t(T * H));
    auto out = nan_buffer<float>(size_t(T * D));
    ple_front(p, dt.get(), T, dctx.get(), key.get(), value.get());
    ple_composed_tail(p, key.get(), value.get(), dx.get(), T, conv_state.get(), out.get());
    expect_close_scaled(download(out), want, 1e-4, "ple T=" + std::to_string(T));
  }
  expect_close_scaled(download(conv_state), s.conv, 1e-4, "ple conv state");
}

// ple_embed is ple_ngram_rows + gather_rows in one launch: the same rows, carried context and embeddings over
// chunks of every length it takes (eos inside, so n-grams are cut), and the rows against the CPU model.
TEST(CudaPle, EmbedEqualsRowsAndGather) {
  for (const int64_t E : {int64_t(48), int64_t(480)}) {  // 480: more elements than the block gathers in one round
    auto p = make_ple(32, 4, E, 3, 3);
    const int64_t heads = p.hash.heads(), hd = E / heads;
    qwen::PleState s;
    qwen::init_ple_state(s, p.c);
    auto ctx_a = upload(s.context), ctx_b = upload(s.context);
    uint32_t seed = 90;
    for (int64_t T : {1, 8, 3, 1, 5, 2, 7, 4, 6, 1}) {
      const std::string what = "E=" + std::to_string(E) + " T=" + std::to_string(T);
      ASSERT_TRUE(ple_embed_supported(p.hash, T)) << what;
      const auto tokens = tokens_with_eos(T, seed++);
      const auto want = qwen::ple_ngram_rows(p.w, p.c, s, tokens.data(), T);
      auto dt = upload(tokens);
      auto rows_a = nan_buffer<int64_t>(size_t(T * heads)), rows_b = nan_buffer<int64_t>(size_t(T * heads));
      auto emb_a = nan_buffer<float>(size_t(T * heads * hd)), emb_b = nan_buffer<float>(size_t(T * heads * hd));
      ple_ngram_rows(ctx(), p.hash, dt.get(), T, ctx_a.get(), rows_a.get());
      gather_rows(ctx(), p.dev[0].d(), hd, rows_a.get(), T * heads, emb_a.get());
      ple_embed(ctx(), p.hash, dt.get(), T, ctx_b.get(), p.dev[0].d(), hd, rows_b.get(), emb_b.get());
      ASSERT_EQ(download(rows_b), want) << what;
      ASSERT_EQ(download(rows_b), download(rows_a)) << what;
      ASSERT_EQ(download(ctx_b), s.context) << what;
      const auto ea = download(emb_a), eb = download(emb_b);
      ASSERT_EQ(std::memcmp(ea.data(), eb.data(), ea.size() * sizeof(float)), 0) << what;
    }
    EXPECT_FALSE(ple_embed_supported(p.hash, 9));
    EXPECT_FALSE(ple_embed_supported(p.hash, 0));
  }
}

// step_inputs is fill_positions + embed_streams + ple_embed in one launch: the same positions, streams, rows,
// embeddings and carried context, byte for byte, over chunks of every length ple_embed takes, with the tokens in
// device memory and in pinned host memory read in place (a replayed decode step's), copied to the device when
// asked; without the PLE part also for a chunk longer than the tokens the kernel stages. The position is read from
// the device and moved on in place (a replayed step's), or given by the host and written moved on.
TEST(CudaPle, StepInputsEqualTheOps) {
  const int64_t H = 40, S = 4, V = 1000, E = 48;
  auto p = make_ple(32, S, E, 3, 3);
  const int64_t heads = p.hash.heads(), hd = E / heads;
  const Weight table(size_t(V * H), 1.0f, 11);
  qwen::PleState s;
  qwen::init_ple_state(s, p.c);
  auto ctx_a = upload(s.context), ctx_b = upload(s.context);
  int32_t* pinned = nullptr;
  DS4_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned), 300 * sizeof(int32_t)));
  DeviceBuffer<int64_t> pos(1);
  uint32_t seed = 300;
  int64_t p0 = 0;
  for (int64_t T : {1, 8, 3, 1, 5, 1, 300}) {
    const bool ple = T <= 8;
    for (const bool host : {false, true}) {
      const std::string what = "T=" + std::to_string(T) + (host ? " (host tokens)" : "");
      const auto tokens = tokens_with_eos(T, seed++);
      auto dt = upload(tokens);
      std::copy(tokens.begin(), tokens.end(), pinned);
      pos.upload(std::vector<int64_t>{p0});
      const SeqPos sp{pos.get(), p0 + 16};
      auto pos3_a = nan_buffer<int32_t>(size_t(3 * T)), pos3_b = nan_buffer<int32_t>(size_t(3 * T));
      auto x_a = nan_buffer<float>(size_t(T * S * H)), x_b = nan_buffer<float>(size_t(T * S * H));
      auto rows_a = nan_buffer<int64_t>(size_t(T * heads)), rows_b = nan_buffer<int64_t>(size_t(T * heads));
      auto emb_a = nan_buffer<float>(size_t(T * E)), emb_b = nan_buffer<float>(size_t(T * E));
      auto copy = nan_buffer<int32_t>(size_t(T));
      fill_positions(ctx(), sp, T, pos3_a.get());
      embed_streams(ctx(), table.d(), H, dt.get(), T, S, x_a.get());
      if (ple) ple_embed(ctx(), p.hash, dt.get(), T, ctx_a.get(), p.dev[0].d(), hd, rows_a.get(), emb_a.get());
      const StepPle sple{&p.hash, ctx_b.get(), p.dev[0].d(), hd, rows_b.get(), emb_b.get()};
      // The position read from the device and moved on in place (a replayed step's), or given by the host.
      DeviceBuffer<int64_t> moved(1), copied(1);
      moved.upload(std::vector<int64_t>{p0});
      const StepPos spos{host ? SeqPos{moved.get(), p0 + 16} : SeqPos::host(p0), pos3_b.get(),
                         host ? copied.get() : nullptr, moved.get()};
      step_inputs(ctx(), host ? pinned : dt.get(), T, host ? copy.get() : nullptr, spos, table.d(), H, S, x_b.get(),
                  ple ? &sple : nullptr);
      ctx().synchronize();
      ASSERT_EQ(download(pos3_b), download(pos3_a)) << what;
      ASSERT_EQ(download(moved), std::vector<int64_t>{p0 + T}) << what;
      if (host) {
        ASSERT_EQ(download(copied), std::vector<int64_t>{p0}) << what;
      }
      const auto xa = download(x_a), xb = download(x_b);
      ASSERT_EQ(std::memcmp(xa.data(), xb.data(), xa.size() * sizeof(float)), 0) << what;
      if (host) {
        ASSERT_EQ(download(copy), tokens) << what;
      }
      if (ple) {
        ASSERT_EQ(download(rows_b), download(rows_a)) << what;
        ASSERT_EQ(download(ctx_b), download(ctx_a)) << what;
        const auto ea = download(emb_a), eb = download(emb_b);
        ASSERT_EQ(std::memcmp(ea.data(), eb.data(), ea.size() * sizeof(float)), 0) << what;
      }
      p0 += T;
    }
  }
  cudaFreeHost(pinned);
}

// ple_tail is the composition after the projections (norms, gate, norm, conv, adds) with the same bits: over
// chunks of every supported length, with the conv history carried, at the Flash-Next width and an odd one (1288:
// a partial last stride of the 1024-thread norms and of the gate's 256 threads). Against the CPU model as well.
// Three fused runs a chunk, each with its own history: key and value apart; both in one buffer (the model's one
// pass over both projections: token rows S*H + H apart); and norm weights that start off a 16-byte boundary, which
// the staged form cannot copy, so the kernel reads every operand where it lies.
TEST(CudaPle, FusedTailEqualsTheComposition) {
  for (const int64_t H : {int64_t(2560), int64_t(1288)}) {
    const int64_t S = 4, E = 48, N = 3, D = S * H;
    auto p = make_ple(H, S, E, N, 3);
    const int64_t Kc = p.c.ple_conv_kernel;
    const float eps = float(p.c.rms_eps);
    qwen::PleState s;
    qwen::init_ple_state(s, p.c);
    auto dctx = upload(s.context);
    constexpr int kRuns = 3;
    DeviceBuffer<float> state_c(s.conv.size());
    state_c.fill_bytes(0);
    std::vector<DeviceBuffer<float>> states;
    for (int r = 0; r < kRuns; r++) {
      states.emplace_back(s.conv.size());
      states.back().fill_bytes(0);
    }
    // The three norm weights one bf16 past a 16-byte boundary.
    std::vector<bf16> off_host(size_t(3 * D + 8));
    for (int w = 0; w < 3; w++) {
      const auto h = to_bf16(p.dev[size_t(3 + w)].host);
      std::copy(h.begin(), h.end(), off_host.begin() + 1 + w * D);
    }
    DeviceBuffer<bf16> off(off_host);
    const bf16* off_w[3] = {off.get() + 1, off.get() + 1 + D, off.get() + 1 + 2 * D};
    auto& cx = ctx();
    uint32_t seed = 70;
    for (int64_t T : {1, 8, 3, 1, 5, 2, 7, 4, 6}) {
      const std::string what = "H=" + std::to_string(H) + " T=" + std::to_string(T);
      ASSERT_TRUE(ple_tail_supported(T, S, H)) << what;
      const auto tokens = tokens_with_eos(T, seed++);
      const auto x = rand_vec(size_t(T * D), -2.0f, 2.0f, seed++);
      std::vector<float> want(size_t(T * D));
      qwen::ple_forward(p.w, p.c, s, x.data(), tokens.data(), T, want.data());
      for (size_t i = 0; i < want.size(); i++) want[i] += x[i];

      auto dt = upload(tokens);
      DeviceBuffer<float> key(size_t(T * D)), value(size_t(T * H)), delta(size_t(T * D));
      ple_front(p, dt.get(), T, dctx.get(), key.get(), value.get());
      auto packed = nan_buffer<float>(size_t(T * (D + H)));
      copy_rows(cx, packed.get(), D + H, key.get(), D, T, D);
      copy_rows(cx, packed.get() + D, D + H, value.get(), H, T, H);
      // Fused first (they read the key projection before the composition normalises it in place).
      std::vector<std::vector<float>> got;
      for (int r = 0; r < kRuns; r++) {
        auto fused = upload(x);
        auto scratch = nan_buffer<float>(size_t(T * D));
        const bool pk = r == 1;
        const bf16* const* w = r == 2 ? off_w : nullptr;
        ple_tail(cx, pk ? packed.get() : key.get(), pk ? D + H : D, pk ? packed.get() + D : value.get(), pk ? D + H : H,
                 fused.get(), T, S, H, w ? w[0] : p.dev[3].d(), w ? w[1] : p.dev[4].d(), w ? w[2] : p.dev[5].d(),
                 p.dev[6].d(), Kc, N, states[size_t(r)].get(), scratch.get(), eps);
        got.push_back(download(fused));
      }
      auto composed = upload(x);
      ple_composed_tail(p, key.get(), value.get(), composed.get(), T, state_c.get(), delta.get());
      add(cx, composed.get(), delta.get(), composed.get(), T * D);
      const auto ref = download(composed);
      for (int r = 0; r < kRuns; r++) {
        for (size_t i = 0; i < ref.size(); i++)
          ASSERT_EQ(std::memcmp(&got[size_t(r)][i], &ref[i], sizeof(float)), 0)
              << what << " run " << r << " element " << i << ": " << got[size_t(r)][i] << " vs " << ref[i];
      }
      expect_close_scaled(got[0], want, 1e-4, "ple_tail " + what);
    }
    const auto hc = download(state_c);
    for (int r = 0; r < kRuns; r++) {
      const auto hr = download(states[size_t(r)]);
      ASSERT_EQ(std::memcmp(hc.data(), hr.data(), hc.size() * sizeof(float)), 0) << "conv history H=" << H << " run " << r;
    }
    expect_close_scaled(hc, s.conv, 1e-4, "ple_tail conv history H=" + std::to_string(H));
    EXPECT_FALSE(ple_tail_supported(9, S, H));
  }
  EXPECT_FALSE(ple_tail_supported(1, 4, 1024));  // the norms' one-warp form: the composition
  EXPECT_FALSE(ple_tail_supported(1, 4, 4104));  // beyond four columns per thread
}

}  // namespace
}  // namespace ds4::cuda::test
