#include "models/qwen_hybrid/weights.h"

#include <cmath>

#include "core/error.h"

namespace ds4::qwen {
namespace {

class Loader {
 public:
  Loader(const TensorStore& s, std::string prefix) : store_(s), prefix_(std::move(prefix)) {}

  // Loads prefix + name as float32 and checks its shape.
  Mat take(const std::string& name, std::vector<int64_t> shape, bool absolute = false) {
    const std::string full = absolute ? name : prefix_ + name;
    const TensorView& t = store_.get(full);
    used_.insert(full);
    if (t.shape != shape) {
      TensorView want;
      want.shape = shape;
      throw Error(ErrorKind::Shape, t.file + ": tensor '" + full + "' has shape " + t.shape_str() + ", expected " +
                                        want.shape_str());
    }
    return Mat{tensor_to_f32(t), shape};
  }
  bool has(const std::string& name) const { return store_.find(prefix_ + name) != nullptr; }
  std::vector<int64_t> take_i64(const std::string& name) {
    const TensorView& t = store_.get(prefix_ + name);
    used_.insert(prefix_ + name);
    return tensor_to_i64(t);
  }
  const TensorView& view(const std::string& name) {
    used_.insert(prefix_ + name);
    return store_.get(prefix_ + name);
  }
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (auto& n : store_.names())
      if (!used_.count(n)) out.push_back(n);
    return out;
  }

 private:
  const TensorStore& store_;
  std::string prefix_;
  std::set<std::string> used_;
};

HyperConnWeights load_hc(Loader& L, const std::string& p, const Config& c, bool inject) {
  const int64_t D = c.hc_count * c.hidden_size;
  HyperConnWeights w;
  w.norm = L.take(p + ".hc_norm.weight", {D});
  w.down = L.take(p + ".input_mix_weight_down.weight", {c.hc_lowrank, D});
  w.up = L.take(p + ".input_mix_weight_up.weight", {D, c.hc_lowrank});
  if (inject) w.inject = L.take(p + ".block_inject_weight.weight", {c.hc_count, D});
  w.has_inject = inject;
  return w;
}

uint64_t splitmix64(uint64_t v) {
  v += 0x9E3779B97F4A7C15ull;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
  return v ^ (v >> 31);
}

bool is_prime(int64_t v) {
  if (v < 2) return false;
  if (v % 2 == 0) return v == 2;
  for (int64_t d = 3; d * d <= v; d += 2)
    if (v % d == 0) return false;
  return true;
}

PleWeights load_ple(Loader& L, const std::string& p, const Config& c, int ple_index) {
  PleWeights w;
  w.ple_index = ple_index;
  const int64_t heads = (c.ngram_size - 1) * c.heads_per_ngram, H = c.hidden_size, D = c.hc_count * H;
  const int64_t head_dim = c.ple_embed_dim / heads;
  w.multipliers = ple_layer_multipliers(c.vocab_size, c.ngram_size, ple_index, c.seed);
  w.head_sizes = ple_head_vocab_sizes(c.ngram_vocab_base, heads, ple_index);
  int64_t total = 0;
  for (auto s : w.head_sizes) {
    w.head_offsets.push_back(total);
    total += s;
  }
  const int64_t padded = (total + c.ngram_divisor - 1) / c.ngram_divisor * c.ngram_divisor;
  // The checkpoint's buffers must agree with the derivation; a mismatch means a different hashing scheme.
  const std::string e = p + ".ple_embedding.";
  auto check = [&](const char* buf, const std::vector<int64_t>& want) {
    if (!L.has(e + buf)) return;
    const auto& t = L.view(e + buf);
    if (tensor_to_i64(t) != want)
      throw Error(ErrorKind::Format, t.file + ": buffer '" + t.name + "' disagrees with the values derived from config");
  };
  check("layer_multipliers", w.multipliers);
  check("ngram_heads_vocab_sizes", w.head_sizes);
  check("ngram_heads_offsets", w.head_offsets);
  // The table: one tensor, or shard_0..shard_{n-1} split along rows as save_pretrained writes it.
  if (L.has(e + "ngram_embedding.weight")) {
    w.table = L.take(e + "ngram_embedding.weight", {padded, head_dim});
  } else {
    w.table.shape = {0, head_dim};
    for (int64_t k = 0;; k++) {
      const std::string n = e + "ngram_embedding.shard_" + std::to_string(k) + ".weight";
      if (!L.has(n)) {
        if (k == 0) L.view(e + "ngram_embedding.weight");  // throws the missing-tensor error
        break;
      }
      const TensorView& t = L.view(n);
      if (t.shape.size() != 2 || t.shape[1] != head_dim)
        throw Error(ErrorKind::Shape, t.file + ": tensor '" + t.name + "' has shape " + t.shape_str() +
                                          ", expected [rows, " + std::to_string(head_dim) + "]");
      auto part = tensor_to_f32(t);
      w.table.v.insert(w.table.v.end(), part.begin(), part.end());
      w.table.shape[0] += t.shape[0];
    }
    if (w.table.shape[0] != padded)
      throw Error(ErrorKind::Shape, "PLE table '" + e + "ngram_embedding' has " + std::to_string(w.table.shape[0]) +
                                        " rows across its shards, expected " + std::to_string(padded));
  }
  w.key = L.take(p + ".key_proj.weight", {D, c.ple_embed_dim});
  w.value = L.take(p + ".value_proj.weight", {H, c.ple_embed_dim});
  w.norm_key = L.take(p + ".norm_key.weight", {D});
  w.norm_query = L.take(p + ".norm_query.weight", {D});
  w.norm_conv = L.take(p + ".norm_conv.weight", {D});
  w.conv = L.take(p + ".conv1d.weight", {D, 1, c.ple_conv_kernel});
  return w;
}

}  // namespace

std::vector<int64_t> ple_layer_multipliers(int64_t vocab_size, int64_t ngram_size, int64_t ple_layer_index, int64_t seed) {
  const uint64_t max_long = (uint64_t(1) << 63) - 1;
  const uint64_t multiplier_max = max_long / uint64_t(std::max<int64_t>(vocab_size, 1));
  const uint64_t half_bound = std::max<uint64_t>(1, multiplier_max / 2);
  const uint64_t base_seed = uint64_t(seed) + 10007ull * uint64_t(ple_layer_index);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < ngram_size; i++) {
    uint64_t v = base_seed + 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
    out.push_back(int64_t(2 * (splitmix64(v) % half_bound) + 1));
  }
  return out;
}

std::vector<int64_t> ple_head_vocab_sizes(int64_t base, int64_t heads, int64_t ple_layer_index) {
  // Head g (global index over all PLE layers) gets the (g+1)-th prime >= base.
  std::vector<int64_t> out;
  int64_t prime = base - 1;
  const int64_t first = ple_layer_index * heads;
  for (int64_t g = 0; g < first + heads; g++) {
    prime += 1;
    while (!is_prime(prime)) prime += 1;
    if (g >= first) out.push_back(prime);
  }
  return out;
}

Weights load_weights(const Config& c, const TensorStore& store) {
  Loader L(store, c.weight_prefix);
  Weights w;
  const int64_t H = c.hidden_size, V = c.vocab_size;
  w.embed = L.take("embed_tokens.weight", {V, H});
  if (!c.tie_word_embeddings) w.lm_head = L.take("lm_head.weight", {V, H}, /*absolute=*/true);
  for (int64_t i = 0; i < c.num_layers; i++) {
    const std::string p = "layers." + std::to_string(i);
    LayerWeights lw;
    lw.type = c.layer_types[size_t(i)];
    lw.attn_hc = load_hc(L, p + ".attn_hyper_connection", c, true);
    lw.mlp_hc = load_hc(L, p + ".mlp_hyper_connection", c, true);
    if (lw.type == LayerType::LinearAttention) {
      const int64_t kd = c.lin_k_heads * c.lin_k_dim, vd = c.lin_v_heads * c.lin_v_dim, conv = 2 * kd + vd;
      auto& g = lw.gdn;
      const std::string a = p + ".linear_attn.";
      g.in_qkv = L.take(a + "in_proj_qkv.weight", {conv, H});
      g.in_z = L.take(a + "in_proj_z.weight", {vd, H});
      g.in_b = L.take(a + "in_proj_b.weight", {c.lin_v_heads, H});
      g.in_a = L.take(a + "in_proj_a.weight", {c.lin_v_heads, H});
      g.conv = L.take(a + "conv1d.weight", {conv, 1, c.conv_kernel});
      g.a_log = L.take(a + "A_log", {c.lin_v_heads});
      g.dt_bias = L.take(a + "dt_bias", {c.lin_v_heads});
      g.norm = L.take(a + "norm.weight", {c.lin_v_dim});
      g.out = L.take(a + "out_proj.weight", {H, vd});
    } else {
      auto& t = lw.attn;
      const std::string a = p + ".self_attn.";
      t.q = L.take(a + "q_proj.weight", {c.num_heads * c.head_dim * 2, H});
      t.k = L.take(a + "k_proj.weight", {c.num_kv_heads * c.head_dim, H});
      t.v = L.take(a + "v_proj.weight", {c.num_kv_heads * c.head_dim, H});
      t.o = L.take(a + "o_proj.weight", {H, c.num_heads * c.head_dim});
      t.q_norm = L.take(a + "q_norm.weight", {c.head_dim});
      t.k_norm = L.take(a + "k_norm.weight", {c.head_dim});
      t.idx_qk = L.take(a + "indexer.index_qk_proj.weight", {(c.idx_heads + 1) * c.idx_head_dim, H});
      t.idx_q_norm = L.take(a + "indexer.q_layernorm.weight", {c.idx_head_dim});
      t.idx_k_norm = L.take(a + "indexer.k_layernorm.weight", {c.idx_head_dim});
    }
    auto& m = lw.moe;
    const std::string mp = p + ".mlp.";
    m.router = L.take(mp + "gate.weight", {c.num_experts, H});
    for (int64_t e = 0; e < c.num_experts; e++) {
      const std::string ep = mp + "experts." + std::to_string(e) + ".";
      m.gate.push_back(L.take(ep + "gate_proj.weight", {c.moe_inter, H}));
      m.up.push_back(L.take(ep + "up_proj.weight", {c.moe_inter, H}));
      m.down.push_back(L.take(ep + "down_proj.weight", {H, c.moe_inter}));
    }
    m.sh_gate = L.take(mp + "shared_expert.gate_proj.weight", {c.shared_inter, H});
    m.sh_up = L.take(mp + "shared_expert.up_proj.weight", {c.shared_inter, H});
    m.sh_down = L.take(mp + "shared_expert.down_proj.weight", {H, c.shared_inter});
    m.sh_gate_w = L.take(mp + "shared_expert_gate.weight", {1, H});
    if (int pi = c.ple_index(int(i)); pi >= 0) lw.ple = load_ple(L, p + ".ple", c, pi);
    w.layers.push_back(std::move(lw));
  }
  w.final_mixer = load_hc(L, "hyper_connection_mixer", c, false);
  w.unused = L.unused();
  return w;
}

}  // namespace ds4::qwen
