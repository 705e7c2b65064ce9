// The whole qwen4_exp model on the GPU against the CPU reference backend, on the engine's fixtures (whose CPU
// logits match transformers to 1e-5) and on the shipped default model.
//
// Both backends get the same weights: the checkpoint's, rounded to bfloat16 (what the GPU stores), so what
// differs is the GPU's arithmetic alone: bfloat16 KV cache, prefill GEMMs on bfloat16-rounded activations,
// summation order. Those differences are continuous, but the model has discrete choices downstream of them
// (top-k experts out of a softmax, top-k QSA blocks out of scores): where two candidates are nearly tied a
// perturbation swaps them, and that row's logits then move by O(0.1) on these small random models. So the
// bounds are on the distribution of per-row errors (|gpu - cpu| relative to the row's largest |logit|):
// - chunks of at most 4 tokens keep every activation in float32 (GEMV path, recurrent delta rule): median row
//   within 2e-3 and 80 % of rows within 5e-3 (measured on the H200: medians 3e-4 to 5e-4);
// - prefill chunks round activations to bfloat16 for the tensor-core GEMMs (2^-9 relative), which the random
//   fixtures amplify: median within 5e-2, 80 % within 0.15 (measured: medians 3e-3 to 3e-2, the f16 fixture
//   highest); a wrong block, position, cache row or expert moves every row by O(1);
// - greedy tokens identical while the CPU's top-2 margin exceeds 0.1 of the row's scale.
// Decode and verification graphs, eager steps and cloned states must agree bit for bit: they run the same kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <cstdio>
#include <random>
#include <sstream>

#include "backend/cuda/bf16.h"
#include "backend/cuda/qwen_model.h"
#include "core/error.h"
#include "engine/generator.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/qwen_hybrid/model.h"

namespace ds4::cuda::test {
namespace {

struct Loaded {
  qwen::Config config;
  qwen::Weights weights;
};

// The checkpoint's config (text_config for the VL layout) and weights, every weight rounded to bfloat16.
Loaded load_rounded(const std::string& dir) {
  const auto j = read_json_file(dir + "/config.json");
  Loaded l{qwen::parse_config(j, dir + "/config.json"), {}};
  l.weights = qwen::load_weights(l.config, TensorStore::open_dir(dir));
  auto round = [](qwen::Mat& m) {
    for (auto& v : m.v) v = bf16_round(v);
  };
  round(l.weights.embed);
  round(l.weights.lm_head);
  auto hc = [&](qwen::HyperConnWeights& h) { round(h.norm), round(h.down), round(h.up), round(h.inject); };
  auto moe = [&](qwen::MoeWeights& m) {
    round(m.router), round(m.sh_gate), round(m.sh_up), round(m.sh_down), round(m.sh_gate_w);
    for (auto* v : {&m.gate, &m.up, &m.down})
      for (auto& e : *v) round(e);
  };
  for (auto& layer : l.weights.layers) {
    hc(layer.attn_hc), hc(layer.mlp_hc), moe(layer.moe);
    for (auto* m : {&layer.gdn.in_qkv, &layer.gdn.in_z, &layer.gdn.in_b, &layer.gdn.in_a, &layer.gdn.conv,
                    &layer.gdn.norm, &layer.gdn.out, &layer.attn.q, &layer.attn.k, &layer.attn.v, &layer.attn.o,
                    &layer.attn.q_norm, &layer.attn.k_norm, &layer.attn.idx_qk, &layer.attn.idx_q_norm,
                    &layer.attn.idx_k_norm})
      round(*m);
    if (layer.ple)
      for (auto* m : {&layer.ple->table, &layer.ple->key, &layer.ple->value, &layer.ple->norm_key,
                      &layer.ple->norm_query, &layer.ple->norm_conv, &layer.ple->conv})
        round(*m);
  }
  hc(l.weights.final_mixer);
  if (l.weights.mtp) {
    auto& m = *l.weights.mtp;
    for (auto* t : {&m.pre_norm_embed, &m.pre_norm_hidden, &m.fc, &m.input_norm, &m.post_norm, &m.norm, &m.attn.q,
                    &m.attn.k, &m.attn.v, &m.attn.o, &m.attn.q_norm, &m.attn.k_norm})
      round(*t);
    moe(m.moe);
  }
  return l;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(rng() % uint32_t(vocab));
  return t;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

// Per row of V logits: max |gpu - cpu| / max |cpu row|, sorted ascending; a non-finite GPU value is infinite.
std::vector<double> row_errors(const std::vector<float>& gpu, const std::vector<float>& cpu, int64_t V) {
  EXPECT_EQ(gpu.size(), cpu.size());
  std::vector<double> out;
  for (size_t r = 0; (r + 1) * size_t(V) <= std::min(gpu.size(), cpu.size()); r++) {
    double worst = 0, scale = 1e-30;
    for (size_t i = r * size_t(V); i < (r + 1) * size_t(V); i++) {
      worst = std::isfinite(gpu[i]) ? std::max(worst, double(std::fabs(gpu[i] - cpu[i]))) : INFINITY;
      scale = std::max(scale, double(std::fabs(cpu[i])));
    }
    out.push_back(worst / scale);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The distribution bounds above, with the numbers in the message.
void expect_rows_close(const std::vector<float>& gpu, const std::vector<float>& cpu, int64_t V, const std::string& what,
                       double median_bound, double p80_bound) {
  const auto e = row_errors(gpu, cpu, V);
  ASSERT_FALSE(e.empty()) << what;
  const double median = e[e.size() / 2], p80 = e[std::min(e.size() - 1, e.size() * 8 / 10)];
  std::printf("  %s: %zu rows, row error median %.2e, 80th percentile %.2e, worst %.2e\n", what.c_str(), e.size(),
              median, p80, e.back());
  EXPECT_LE(median, median_bound) << what << ": median row error (worst " << e.back() << ", " << e.size() << " rows)";
  EXPECT_LE(p80, p80_bound) << what << ": 80th-percentile row error (worst " << e.back() << ")";
  EXPECT_TRUE(std::isfinite(e.back())) << what << ": a logit is not finite";
}

// f(at, n) over [0, total) in chunks of 1, 2, 3, 4, 1, 2, ... tokens: every chunk short enough for the GEMV
// path and the recurrent delta rule.
template <class F>
void for_short_chunks(int64_t total, F f) {
  for (int64_t at = 0, n = 1; at < total; at += n, n = n % 4 + 1) {
    n = std::min(n, total - at);
    f(at, n);
  }
}

int32_t argmax(const float* p, int64_t n) { return int32_t(std::max_element(p, p + n) - p); }

struct ModelCase {
  std::string dir;
  int64_t prompt;
};
std::ostream& operator<<(std::ostream& o, const ModelCase& c) { return o << c.dir << " prompt " << c.prompt; }

class CudaModel : public ::testing::TestWithParam<ModelCase> {};

// The start of most tests below: the case's fixture (load_rounded), its vocabulary, the CUDA model on it and n
// random tokens from seed.
struct CaseSetup {
  Loaded l;
  int64_t V;
  std::unique_ptr<Model> gpu;
  std::vector<int32_t> tokens;
};
CaseSetup set_up(const ModelCase& p, int64_t n, uint32_t seed) {
  CaseSetup s{load_rounded(std::string(DS4_SOURCE_DIR) + "/" + p.dir), 0, nullptr, {}};
  s.V = s.l.config.vocab_size;
  s.gpu = make_cuda_qwen_model(s.l.config, s.l.weights);
  s.tokens = random_tokens(n, s.V, seed);
  return s;
}

TEST_P(CudaModel, LogitsMatchTheCpuBackend) {
  const auto p = GetParam();
  auto [l, V, gpu, tokens] = set_up(p, p.prompt, 7);
  qwen::QwenHybridModel cpu(l.config, l.weights);
  // Chunks: a prefill, single tokens (decode graphs), a short verification-sized chunk, a longer chunk.
  auto gs = gpu->new_state(), cs = cpu.new_state();
  std::vector<float> g, c;
  int64_t at = 0;
  for (int64_t n : {p.prompt / 2, int64_t(1), int64_t(1), int64_t(3), p.prompt / 2 - 5}) {
    const std::span<const int32_t> chunk(tokens.data() + at, size_t(n));
    gpu->forward(*gs, chunk, g, true);
    cpu.forward(*cs, chunk, c, true);
    std::ostringstream what;
    what << p << ": chunk of " << n << " at " << at;
    // Every chunk here follows the first (bfloat16) prefill: the prefill bounds.
    expect_rows_close(g, c, V, what.str(), 5e-2, 0.15);
    at += n;
  }
  EXPECT_EQ(gs->position(), cs->position());

  // Greedy continuation: identical tokens while the CPU's margin is clear; the decode rows' errors pooled.
  std::vector<float> dg, dc;
  for (int step = 0; step < 16; step++) {
    const int32_t gt = argmax(g.data() + g.size() - V, V), ct = argmax(c.data() + c.size() - V, V);
    std::vector<float> row(c.end() - V, c.end());
    std::nth_element(row.begin(), row.begin() + 1, row.end(), std::greater<float>());
    const double margin = row[0] - row[1];
    if (margin > 0.1 * max_abs(row)) {
      ASSERT_EQ(gt, ct) << p << ": greedy step " << step << " (margin " << margin << ")";
    }
    gpu->forward(*gs, std::vector<int32_t>{ct}, g, false);
    cpu.forward(*cs, std::vector<int32_t>{ct}, c, false);
    dg.insert(dg.end(), g.begin(), g.end());
    dc.insert(dc.end(), c.begin(), c.end());
  }
  std::ostringstream what;
  what << p << ": 16 decode steps";
  // Decode rows read the cache the bfloat16 prefill wrote: the prefill bounds.
  expect_rows_close(dg, dc, V, what.str(), 5e-2, 0.15);
}

// Chunks of at most 4 tokens keep every activation in float32 on the GPU (GEMV path, recurrent delta rule, as
// on the CPU): only the bfloat16 KV cache and summation order differ, so the rows must stay close throughout.
TEST_P(CudaModel, ShortChunksMatchTheCpuBackend) {
  const auto p = GetParam();
  auto [l, V, gpu, tokens] = set_up(p, p.prompt, 5);
  qwen::QwenHybridModel cpu(l.config, l.weights);
  auto gs = gpu->new_state(), cs = cpu.new_state();
  std::vector<float> g, c, all_g, all_c;
  for_short_chunks(p.prompt, [&](int64_t at, int64_t n) {
    const std::span<const int32_t> chunk(tokens.data() + at, size_t(n));
    gpu->forward(*gs, chunk, g, true);
    cpu.forward(*cs, chunk, c, true);
    all_g.insert(all_g.end(), g.begin(), g.end());
    all_c.insert(all_c.end(), c.begin(), c.end());
  });
  std::ostringstream what;
  what << p << ": chunks of 1 to 4 tokens";
  expect_rows_close(all_g, all_c, V, what.str(), 2e-3, 5e-3);
}

// The MTP draft head on the GPU against the CPU's, teacher-forced: after a prefill (bfloat16 GEMM bounds), and
// pair by pair after chunks of at most 4 tokens (float32 bounds).
TEST_P(CudaModel, DraftHeadMatchesTheCpuBackend) {
  const auto p = GetParam();
  auto l = load_rounded(std::string(DS4_SOURCE_DIR) + "/" + p.dir);
  if (!l.weights.mtp) GTEST_SKIP() << p << " has no MTP head";
  const int64_t V = l.config.vocab_size;
  auto gpu = make_cuda_qwen_model(l.config, l.weights);
  qwen::QwenHybridModel cpu(l.config, l.weights);
  ASSERT_TRUE(gpu->has_draft_head());
  const auto tokens = random_tokens(p.prompt + 1, V, 13);
  {
    auto gs = gpu->new_state(), cs = cpu.new_state();
    const std::span<const int32_t> prompt(tokens.data(), size_t(p.prompt)), pairs(tokens.data() + 1, size_t(p.prompt));
    std::vector<float> g, c;
    gpu->forward(*gs, prompt, g, false);
    cpu.forward(*cs, prompt, c, false);
    gpu->draft(*gs, pairs, g, true);
    cpu.draft(*cs, pairs, c, true);
    std::ostringstream what;
    what << p << ": draft after one prefill";
    expect_rows_close(g, c, V, what.str(), 5e-2, 0.15);
  }
  auto gs = gpu->new_state(), cs = cpu.new_state();
  std::vector<float> g, c, dg, dc, all_g, all_c;
  for_short_chunks(p.prompt, [&](int64_t at, int64_t n) {
    gpu->forward(*gs, std::span<const int32_t>(tokens.data() + at, size_t(n)), g, false);
    cpu.forward(*cs, std::span<const int32_t>(tokens.data() + at, size_t(n)), c, false);
    const std::span<const int32_t> next(tokens.data() + at + 1, size_t(n));
    gpu->draft(*gs, next, dg, true);
    cpu.draft(*cs, next, dc, true);
    all_g.insert(all_g.end(), dg.begin(), dg.end());
    all_c.insert(all_c.end(), dc.begin(), dc.end());
  });
  std::ostringstream what;
  what << p << ": draft after chunks of 1 to 4 tokens";
  expect_rows_close(all_g, all_c, V, what.str(), 2e-3, 5e-3);
}

TEST_P(CudaModel, GraphsEagerAndClonesAgreeBitForBit) {
  const auto p = GetParam();
  auto l = load_rounded(std::string(DS4_SOURCE_DIR) + "/" + p.dir);
  const int64_t V = l.config.vocab_size;
  CudaModelOptions eager;
  eager.graphs = false;
  auto with_graphs = make_cuda_qwen_model(l.config, l.weights);
  auto without = make_cuda_qwen_model(l.config, l.weights, eager);
  const auto tokens = random_tokens(p.prompt + 30, V, 11);
  const std::span<const int32_t> prompt(tokens.data(), size_t(p.prompt));
  auto a = with_graphs->new_state(), b = without->new_state();
  std::vector<float> la, lb, lc;
  with_graphs->forward(*a, prompt, la, false);
  without->forward(*b, prompt, lb, false);
  ASSERT_EQ(la, lb);
  std::unique_ptr<SequenceState> c;
  for (int64_t i = 0; i < 12; i++) {
    const std::vector<int32_t> t{tokens[size_t(p.prompt + i)]};
    if (i == 5) c = a->clone();  // a clone continues exactly as its origin
    with_graphs->forward(*a, t, la, false);
    without->forward(*b, t, lb, false);
    ASSERT_EQ(la, lb) << p << ": decode step " << i;
    if (with_graphs->has_draft_head()) {  // the graph also keeps the hidden row the draft head reads
      std::vector<float> da, db;
      const std::vector<int32_t> next{tokens[size_t(p.prompt + i + 1) % tokens.size()]};
      with_graphs->draft(*a, next, da, false);
      without->draft(*b, next, db, false);
      ASSERT_EQ(da, db) << p << ": draft at decode step " << i;
    }
    if (c) {
      with_graphs->forward(*c, t, lc, false);
      ASSERT_EQ(lc, la) << p << ": clone at decode step " << i;
    }
  }
  // Verification chunks (every row) replay graphs of their own, twice each length.
  int64_t at = p.prompt + 12;
  for (int64_t n : {2, 4, 3, 2, 4, 3}) {
    const std::span<const int32_t> chunk(tokens.data() + at, size_t(n));
    with_graphs->forward(*a, chunk, la, true);
    without->forward(*b, chunk, lb, true);
    ASSERT_EQ(la, lb) << p << ": verification chunk of " << n << " at " << at;
    at += n;
  }
}

// A released sequence's buffers and decode graph go to the next new_state() (CudaQwenModel::recycle_state): that
// sequence starts with the old caches and graphs (so its bytes() exceed a fresh state's) and must run exactly as a
// fresh one, prompt and decode steps bit for bit; a state made while it lives is a fresh one.
TEST_P(CudaModel, ReleasedStatesAreReusedBitForBit) {
  const auto p = GetParam();
  [[maybe_unused]] auto [l, V, model, tokens] = set_up(p, p.prompt + 8, 13);
  const std::span<const int32_t> prompt(tokens.data(), size_t(p.prompt));
  auto run = [&](SequenceState& st) {
    std::vector<float> all, row;
    model->forward(st, prompt, row, false);
    all = row;
    for (int64_t i = 0; i < 8; i++) {
      model->forward(st, std::vector<int32_t>{tokens[size_t(p.prompt + i)]}, row, false);
      all.insert(all.end(), row.begin(), row.end());
    }
    return all;
  };
  auto a = model->new_state();
  const auto want = run(*a);
  a.reset();
  auto b = model->new_state();  // a's buffers and graphs
  auto c = model->new_state();  // nothing spare: a fresh state
  const bool caches = model->has_draft_head() ||
                      std::count(l.config.layer_types.begin(), l.config.layer_types.end(), qwen::LayerType::SparseAttention);
  if (caches) {
    EXPECT_GT(b->bytes(), c->bytes()) << p << ": the released state's caches were not reused";
  }
  EXPECT_EQ(run(*b), want) << p << ": a reused state";
  EXPECT_EQ(run(*c), want) << p << ": a fresh state";
}

// mark() / rewind(), speculative decoding's way back without a clone: after a rewind the state continues exactly as
// a clone taken at the mark (logits and draft logits bit for bit, the rewound state through its decode graph),
// whatever ran in between: verification chunks of 1 to 17 tokens (crossing pooled-block boundaries), the draft
// head's pairs, a chunk long enough to grow the caches; mark after mark, as the generator takes them.
TEST_P(CudaModel, RewindContinuesAsAClone) {
  const auto p = GetParam();
  [[maybe_unused]] auto [l, V, gpu, tokens] = set_up(p, p.prompt + 40, 19);
  const auto junk = random_tokens(200, V, 23);
  auto st = gpu->new_state();
  std::vector<float> a, b;
  gpu->forward(*st, std::span<const int32_t>(tokens.data(), size_t(p.prompt)), a, false);
  size_t next = size_t(p.prompt), j = 0;
  const bool draft = gpu->has_draft_head();
  for (int64_t n : {2, 5, 1, 9, 2, 17, 3, 2, 130}) {
    ASSERT_TRUE(st->mark());
    auto clone = st->clone();
    gpu->forward(*st, std::span<const int32_t>(junk.data() + j % 60, size_t(n)), a, true);
    if (draft) gpu->draft(*st, std::span<const int32_t>(junk.data() + j % 60 + 1, size_t(std::min<int64_t>(n, 8))), a, true);
    j += size_t(n);
    st->rewind();
    ASSERT_EQ(st->position(), clone->position()) << p;
    for (int k = 0; k < 2; k++) {  // the second step replays the decode graph
      const std::span<const int32_t> one(tokens.data() + next, 1);
      gpu->forward(*st, one, a, false);
      gpu->forward(*clone, one, b, false);
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << p << ": after a chunk of " << n;
      if (draft) {
        const std::span<const int32_t> pair(tokens.data() + next + 1, 1);
        gpu->draft(*st, pair, a, false);
        gpu->draft(*clone, pair, b, false);
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << p << ": draft after " << n;
      }
      next++;
    }
  }
}

// Speculative decoding verifies a draft as one chunk; its rows must have the bits of the same tokens decoded one
// at a time (then sampling with a seed gives the same tokens with or without a draft), and the state it leaves
// must continue as the decoded one does.
TEST_P(CudaModel, VerificationRowsEqualDecodeRows) {
  const auto p = GetParam();
  [[maybe_unused]] auto [l, V, gpu, tokens] = set_up(p, p.prompt + 20, 13);
  auto base = gpu->new_state();
  std::vector<float> ignored;
  gpu->forward(*base, std::span<const int32_t>(tokens.data(), size_t(p.prompt)), ignored, false);
  int64_t at = p.prompt;
  for (const int64_t n : {2, 3, 4, 1, 4, 2}) {
    auto dec = base->clone();
    std::vector<float> rows, one, chunk;
    for (int64_t i = 0; i < n; i++) {
      gpu->forward(*dec, std::vector<int32_t>{tokens[size_t(at + i)]}, one, false);
      rows.insert(rows.end(), one.begin(), one.end());
    }
    gpu->forward(*base, std::span<const int32_t>(tokens.data() + at, size_t(n)), chunk, true);
    ASSERT_EQ(chunk.size(), rows.size());
    for (int64_t i = 0; i < n; i++)
      ASSERT_EQ(0, std::memcmp(chunk.data() + i * V, rows.data() + i * V, size_t(V) * sizeof(float)))
          << p << ": row " << i << " of a chunk of " << n << " at position " << at;
    at += n;
    // Both states continue alike.
    auto cont = base->clone();
    std::vector<float> a, b;
    gpu->forward(*dec, std::vector<int32_t>{tokens[size_t(at)]}, a, false);
    gpu->forward(*cont, std::vector<int32_t>{tokens[size_t(at)]}, b, false);
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), size_t(V) * sizeof(float))) << p << ": after a chunk of " << n;
  }
}

// forward_greedy picks on the device what the host picks from forward()'s row (the first index of the maximum),
// step after step, and leaves the state as forward() does: greedy decoding either way gives the same tokens and
// the same logits after.
TEST_P(CudaModel, GreedyPickOnTheDeviceEqualsTheHostPick) {
  const auto p = GetParam();
  [[maybe_unused]] auto [l, V, gpu, prompt] = set_up(p, p.prompt, 17);
  auto a = gpu->new_state(), b = gpu->new_state();
  std::vector<float> row;
  GreedyPick pick;
  auto device_pick = [&](std::span<const int32_t> in) {
    EXPECT_TRUE(gpu->forward_greedy(*a, in, pick));
    EXPECT_EQ(pick.row, GreedyPick::Row::Ok);
    return int32_t(pick.index);
  };
  int32_t ta = device_pick(prompt);
  gpu->forward(*b, prompt, row, false);
  int32_t tb = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
  for (int step = 0; step < 12; step++) {
    ASSERT_EQ(ta, tb) << p << ": step " << step;
    const std::vector<int32_t> next{ta};
    ta = device_pick(next);
    gpu->forward(*b, next, row, false);
    tb = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
  }
  std::vector<float> ra, rb;
  gpu->forward(*a, std::vector<int32_t>{1}, ra, false);
  gpu->forward(*b, std::vector<int32_t>{1}, rb, false);
  ASSERT_EQ(0, std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float))) << p << ": states differ after";
}

// forward_greedy_rows and draft_greedy pick on the device what the host picks from forward()'s rows and from
// draft()'s row (the first index of the maximum), chunk after chunk of verification-sized calls, and leave the
// state as those calls do (the rows after them are bit for bit the same).
TEST_P(CudaModel, RowAndDraftPicksOnTheDeviceEqualTheHostPicks) {
  const auto p = GetParam();
  [[maybe_unused]] auto [l, V, gpu, prompt] = set_up(p, p.prompt, 23);
  const bool draft = gpu->has_draft_head();
  auto a = gpu->new_state(), b = gpu->new_state();
  std::vector<float> rows, dl;
  gpu->forward(*a, prompt, rows, false);
  gpu->forward(*b, prompt, rows, false);
  int32_t last = argmax(rows.data(), V);
  auto check_draft = [&](std::span<const int32_t> pairs, const std::string& what) {
    if (!draft) return;
    GreedyPick dp;
    ASSERT_TRUE(gpu->draft_greedy(*a, pairs, dp)) << what;
    gpu->draft(*b, pairs, dl, false);
    EXPECT_EQ(dp.row, GreedyPick::Row::Ok) << what;
    EXPECT_EQ(dp.index, argmax(dl.data(), V)) << what << ": draft pick";
  };
  std::vector<int32_t> pairs(prompt.begin() + 1, prompt.end());
  pairs.push_back(last);
  check_draft(pairs, p.dir + " prompt");
  const auto chunks = random_tokens(16, V, 29);
  int64_t at = 0;
  for (int64_t n : {2, 3, 1, 4, 2}) {
    const std::span<const int32_t> chunk(chunks.data() + at, size_t(n));
    at += n;
    const std::string what = p.dir + " chunk of " + std::to_string(n) + " at " + std::to_string(at);
    GreedyPick picks[4];
    ASSERT_TRUE(gpu->forward_greedy_rows(*a, chunk, std::span<GreedyPick>(picks, size_t(n)))) << what;
    gpu->forward(*b, chunk, rows, true);
    for (int64_t r = 0; r < n; r++) {
      EXPECT_EQ(picks[r].row, GreedyPick::Row::Ok) << what;
      EXPECT_EQ(picks[r].index, argmax(rows.data() + r * V, V)) << what << ": row " << r;
    }
    std::vector<int32_t> next(chunk.begin() + 1, chunk.end());
    next.push_back(int32_t(picks[n - 1].index));
    check_draft(next, what);
  }
  std::vector<float> ra, rb;
  gpu->forward(*a, std::vector<int32_t>{1}, ra, false);
  gpu->forward(*b, std::vector<int32_t>{1}, rb, false);
  ASSERT_EQ(0, std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float))) << p << ": states differ after";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaModel,
                         ::testing::Values(ModelCase{"tests/fixtures/qwen4/text_f32", 100},
                                           ModelCase{"tests/fixtures/qwen4/vl_bf16", 90},
                                           ModelCase{"tests/fixtures/qwen4/text_f16_sharded", 80},
                                           ModelCase{"models/tiny-flash-next", 300}));

// Speculative decoding on the GPU emits plain decoding's tokens (shared/SAMPLING.md), greedy (the verification
// rows and the draft picked on the device) and sampled (the rows to the host's sampler), with and without a
// stop on eos, on the shipped model, whose checkpoint carries the MTP head.
TEST(CudaSpeculative, EmitsThePlainDecodingStream) {
  auto l = load_rounded(std::string(DS4_SOURCE_DIR) + "/models/tiny-flash-next");
  auto gpu = make_cuda_qwen_model(l.config, l.weights);
  ASSERT_TRUE(gpu->has_draft_head());
  int64_t drafted = 0, accepted = 0;
  for (const double temperature : {0.0, 0.8}) {
    engine::GenerationRequest req;
    req.prompt = random_tokens(40, l.config.vocab_size, 31);
    req.max_tokens = 60;
    req.ignore_eos = true;
    req.sampling.temperature = temperature;
    req.sampling.top_p = temperature > 0 ? 0.95 : 1.0;
    req.seed = 42;
    const auto plain = engine::generate(*gpu, nullptr, req);
    req.speculative = true;
    const auto spec = engine::generate(*gpu, nullptr, req);
    EXPECT_EQ(spec.tokens, plain.tokens) << "temperature " << temperature;
    EXPECT_EQ(spec.finish_reason, plain.finish_reason);
    drafted += spec.drafted;
    accepted += spec.accepted;
  }
  std::printf("  speculative on the GPU: %lld of %lld drafts accepted\n", (long long)accepted, (long long)drafted);
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0) << "the draft head never agreed: is it wired correctly?";
}

TEST(CudaModelErrors, BadTokensAndOverlongSequencesAreTypedErrors) {
  auto l = load_rounded(std::string(DS4_SOURCE_DIR) + "/tests/fixtures/qwen4/text_f32");
  auto gpu = make_cuda_qwen_model(l.config, l.weights);
  auto s = gpu->new_state();
  std::vector<float> out;
  try {
    gpu->forward(*s, std::vector<int32_t>{int32_t(l.config.vocab_size)}, out, false);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
  }
  const std::vector<int32_t> too_long(size_t(l.config.max_position_embeddings + 1), 1);
  EXPECT_THROW(gpu->forward(*s, too_long, out, false), Error);
  gpu->forward(*s, std::vector<int32_t>{1, 2, 3}, out, false);  // the state still works
  EXPECT_EQ(s->position(), 3);
}

}  // namespace
}  // namespace ds4::cuda::test
