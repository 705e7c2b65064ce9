// The qwen4_exp family's configuration (transformers Qwen4ExpTextConfig), parsed and validated once at load.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace ds4::qwen {

enum class LayerType { LinearAttention, SparseAttention };

struct Config {
  std::string model_type;     // qwen4_exp_text or qwen4_exp
  std::string weight_prefix;  // "model." (text layout) or "model.language_model." (VL layout)
  bool tie_word_embeddings = false;

  int64_t vocab_size = 0, hidden_size = 0, num_layers = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 0, lin_v_dim = 0, conv_kernel = 0;
  int64_t num_experts = 0, top_k = 0, moe_inter = 0, shared_inter = 0;
  bool norm_topk_prob = true;
  int64_t hc_count = 0, hc_lowrank = 0;

  std::vector<int64_t> ple_layer_ids;  // one-indexed, sorted
  int64_t ple_embed_dim = 0, ple_conv_kernel = 0, ngram_size = 0, heads_per_ngram = 0;
  int64_t ngram_vocab_base = 0, ngram_divisor = 0;
  int64_t seed = 0;

  int64_t idx_heads = 0, idx_head_dim = 0, idx_budget = 0, idx_ratio = 0;

  std::string gdn_gate_act;  // activation of the GDN output gate: "sigmoid" or "silu"
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t rotary_dim = 0;              // head_dim * partial_rotary_factor
  std::array<int64_t, 3> mrope_section{0, 0, 0};
  int64_t max_position_embeddings = 0;

  std::vector<LayerType> layer_types;
  std::vector<int64_t> eos_ids;  // first one is the PLE segment separator

  int64_t eos_for_ple() const { return eos_ids.front(); }
  int ple_index(int layer) const;  // index into ple_layer_ids of (layer + 1), or -1
};

// path names config.json in messages. Throws Error(Format|Unsupported|Shape).
Config parse_config(const nlohmann::json& j, const std::string& path);

// The checks every backend's forward makes before any compute: at least one token, every id inside the
// vocabulary, the sequence within max_position_embeddings. Throws Error(InvalidArgument).
void check_forward_input(const Config& c, int64_t pos, std::span<const int32_t> tokens);

}  // namespace ds4::qwen
