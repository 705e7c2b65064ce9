// qwen::decode_state_bytes (what ds4 bench's "+ state" figure adds) against what the CPU reference actually keeps
// and selects: the key counts against qsa_select's lists at every position of a prompt that crosses the budget,
// and the byte total against the buffers of a CPU sequence state after a prompt (the Gated DeltaNet layers'
// recurrent state and conv history, the attention layers' key/value rows and pooled indexer keys).
#include <gtest/gtest.h>

#include <random>

#include "backend/cpu/rope.h"
#include "io/json_file.h"
#include "models/model.h"
#include "models/qwen_hybrid/config.h"
#include "models/qwen_hybrid/decode_bytes.h"
#include "models/qwen_hybrid/sparse_attention.h"
#include "models/qwen_hybrid/state.h"
#include "models/qwen_hybrid/weights.h"
#include "support/paths.h"

namespace ds4::qwen {
namespace {

const std::string kConfig = test::source_dir() + "/models/tiny-flash-next/config.json";

TEST(QwenDecodeBytes, SelectedKeysEqualTheSelectionsLists) {
  const Config c = parse_config(read_json_file(kConfig), kConfig);
  ASSERT_GT(c.idx_ratio, 0);
  int64_t layer = -1;
  for (int64_t i = 0; i < c.num_layers && layer < 0; i++)
    if (c.layer_types[size_t(i)] == LayerType::SparseAttention) layer = i;
  ASSERT_GE(layer, 0);
  const Weights w = random_weights(c, 7);
  const cpu::RopeTable rope(c.rotary_dim, c.rope_theta, c.mrope_section);
  // Past the budget: (T + 1) / R complete blocks against budget / R.
  const int64_t T = 2 * c.idx_budget + 3 * c.idx_ratio + 1;
  std::vector<float> x(size_t(T * c.hidden_size));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : x) v = u(rng);
  AttnState s;
  // In two chunks, so that the second starts mid-block.
  const int64_t first = c.idx_ratio + 1;
  auto sel = qsa_select(w.layers[size_t(layer)].attn, c, rope, s, x.data(), first, 0);
  const auto rest = qsa_select(w.layers[size_t(layer)].attn, c, rope, s, x.data() + first * c.hidden_size, T - first, first);
  sel.insert(sel.end(), rest.begin(), rest.end());
  bool past_budget = false;
  for (int64_t p = 0; p < T; p++) {
    EXPECT_EQ(qsa_selected_keys(c, p), int64_t(sel[size_t(p)].size())) << "position " << p;
    past_budget |= int64_t(sel[size_t(p)].size()) < p + 1;
  }
  EXPECT_TRUE(past_budget);
}

TEST(QwenDecodeBytes, StateBytesEqualTheCpuStatesBuffers) {
  const auto json = read_json_file(kConfig);
  const Config c = parse_config(json, kConfig);
  auto model = random_model(json, 5);
  std::mt19937 rng(9);
  for (int64_t P : {int64_t(37), 2 * c.idx_budget + c.idx_ratio - 1}) {
    std::vector<int32_t> tokens(static_cast<size_t>(P));
    for (auto& t : tokens) t = int32_t(rng() % uint32_t(c.vocab_size));
    auto st = model->new_state();
    std::vector<float> logits;
    model->forward(*st, tokens, logits, false);
    const auto& qs = dynamic_cast<const QwenState&>(*st);
    // The step of the token at position P: what the state holds after the prompt, read; its new rows, written.
    double want = 0;
    for (int64_t i = 0; i < c.num_layers; i++) {
      const auto& l = qs.layers[size_t(i)];
      if (c.layer_types[size_t(i)] == LayerType::LinearAttention) {
        const double conv_row = double(l.gdn.conv.size()) / double(c.conv_kernel - 1);
        want += 4.0 * (2.0 * double(l.gdn.recurrent.size()) + double(l.gdn.conv.size()) + conv_row);
        continue;
      }
      const double kv_row = double(l.attn.keys.size() + l.attn.values.size()) / double(P);
      const double idx_row = double(l.attn.index_keys.size()) / double(P);
      const int64_t blocks = (P + 1) / c.idx_ratio, topk = c.idx_budget / c.idx_ratio;
      // The selection's key count is checked against qsa_select's lists above.
      want += 4.0 * (double(qsa_selected_keys(c, P) + 1) * kv_row + idx_row);
      if (blocks > topk) want += 4.0 * double(blocks) * idx_row;  // the pooled keys, one indexer row each
      if ((P + 1) % c.idx_ratio == 0) want += 4.0 * double(c.idx_ratio + 1) * idx_row;
    }
    EXPECT_DOUBLE_EQ(model->info().decode_state_bytes(P), want) << "prompt " << P;
  }
}

}  // namespace
}  // namespace ds4::qwen
