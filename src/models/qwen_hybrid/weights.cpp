#include "models/qwen_hybrid/weights.h"

#include <cmath>

#include "core/error.h"

namespace ds4::qwen {
namespace {

// Where tensors come from: a checkpoint, or random values of the right shapes (benchmarks). The loader
// below names and shapes every tensor once, for both.
class Loader {
 public:
  virtual ~Loader() = default;
  // Loads prefix + name (or name when absolute) as float32, shape-checked.
  virtual Mat take(const std::string& name, std::vector<int64_t> shape, bool absolute) = 0;
  Mat take(const std::string& name, std::vector<int64_t> shape) { return take(name, std::move(shape), false); }
  virtual bool has(const std::string& name) const = 0;
  virtual bool has_absolute(const std::string& name) const = 0;
  // Integer buffers the checkpoint may carry, to check against derived values; null when absent.
  virtual const TensorView* buffer(const std::string& name) = 0;
  // The row count of a float tensor split into shards along rows (the PLE table), concatenated.
  virtual Mat take_row_shards(const std::string& base, int64_t rows, int64_t cols) = 0;
  virtual std::vector<std::string> unused() const { return {}; }
};

class CheckpointLoader : public Loader {
 public:
  CheckpointLoader(const TensorStore& s, std::string prefix) : store_(s), prefix_(std::move(prefix)) {}

  Mat take(const std::string& name, std::vector<int64_t> shape, bool absolute) override {
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
  bool has(const std::string& name) const override { return store_.find(prefix_ + name) != nullptr; }
  bool has_absolute(const std::string& name) const override { return store_.find(name) != nullptr; }
  const TensorView* buffer(const std::string& name) override {
    const TensorView* t = store_.find(prefix_ + name);
    if (t) used_.insert(prefix_ + name);
    return t;
  }
  Mat take_row_shards(const std::string& base, int64_t rows, int64_t cols) override {
    // One tensor, or shard_0..shard_{n-1} split along rows as save_pretrained writes it.
    if (has(base + ".weight")) return take(base + ".weight", {rows, cols}, false);
    Mat m;
    m.shape = {0, cols};
    for (int64_t k = 0; has(base + ".shard_" + std::to_string(k) + ".weight"); k++) {
      const std::string n = prefix_ + base + ".shard_" + std::to_string(k) + ".weight";
      const TensorView& t = store_.get(n);
      used_.insert(n);
      if (t.shape.size() != 2 || t.shape[1] != cols)
        throw Error(ErrorKind::Shape, t.file + ": tensor '" + n + "' has shape " + t.shape_str() + ", expected [rows, " +
                                          std::to_string(cols) + "]");
      auto part = tensor_to_f32(t);
      m.v.insert(m.v.end(), part.begin(), part.end());
      m.shape[0] += t.shape[0];
    }
    if (m.shape[0] == 0) store_.get(prefix_ + base + ".weight");  // throws the missing-tensor error
    if (m.shape[0] != rows)
      throw Error(ErrorKind::Shape, "'" + prefix_ + base + "' has " + std::to_string(m.shape[0]) +
                                        " rows across its shards, expected " + std::to_string(rows));
    return m;
  }
  std::vector<std::string> unused() const override {
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

// Uniform values scaled by 1/sqrt(fan-in), from a counter-based generator so weights depend only on seed
// and name; RMSNorm weights (1 + w form) and decay parameters stay small.
class RandomLoader : public Loader {
 public:
  explicit RandomLoader(uint64_t seed) : seed_(seed) {}
  Mat take(const std::string& name, std::vector<int64_t> shape, bool) override {
    Mat m;
    m.shape = shape;
    int64_t n = 1;
    for (auto d : shape) n *= d;
    m.v.resize(static_cast<size_t>(n));
    uint64_t h = seed_;
    for (char ch : name) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
    const bool small = name.find("norm") != std::string::npos || name.find("A_log") != std::string::npos ||
                       name.find("dt_bias") != std::string::npos;
    const float scale = small ? 0.1f : 1.7f / std::sqrt(float(shape.back()));
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      uint64_t z = h + 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      m.v[static_cast<size_t>(i)] = scale * (float(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
    }
    return m;
  }
  bool has(const std::string&) const override { return true; }
  bool has_absolute(const std::string&) const override { return false; }
  const TensorView* buffer(const std::string&) override { return nullptr; }
  Mat take_row_shards(const std::string& base, int64_t rows, int64_t cols) override {
    return take(base + ".weight", {rows, cols}, false);
  }

 private:
  uint64_t seed_;
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
    const TensorView* t = L.buffer(e + buf);
    if (t && tensor_to_i64(*t) != want)
      throw Error(ErrorKind::Format, t->file + ": buffer '" + t->name + "' disagrees with the values derived from config");
  };
  check("layer_multipliers", w.multipliers);
  check("ngram_heads_vocab_sizes", w.head_sizes);
  check("ngram_heads_offsets", w.head_offsets);
  w.table = L.take_row_shards(e + "ngram_embedding", padded, head_dim);
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

namespace {

MoeWeights load_moe(Loader& L, const std::string& mp, const Config& c, bool absolute) {
  const int64_t H = c.hidden_size;
  MoeWeights m;
  m.router = L.take(mp + "gate.weight", {c.num_experts, H}, absolute);
  for (int64_t e = 0; e < c.num_experts; e++) {
    const std::string ep = mp + "experts." + std::to_string(e) + ".";
    m.gate.push_back(L.take(ep + "gate_proj.weight", {c.moe_inter, H}, absolute));
    m.up.push_back(L.take(ep + "up_proj.weight", {c.moe_inter, H}, absolute));
    m.down.push_back(L.take(ep + "down_proj.weight", {H, c.moe_inter}, absolute));
  }
  m.sh_gate = L.take(mp + "shared_expert.gate_proj.weight", {c.shared_inter, H}, absolute);
  m.sh_up = L.take(mp + "shared_expert.up_proj.weight", {c.shared_inter, H}, absolute);
  m.sh_down = L.take(mp + "shared_expert.down_proj.weight", {H, c.shared_inter}, absolute);
  m.sh_gate_w = L.take(mp + "shared_expert_gate.weight", {1, H}, absolute);
  return m;
}

// mtp.* names are absolute (outside the text model's prefix in every layout).
MtpWeights load_mtp(Loader& L, const Config& c) {
  const int64_t H = c.hidden_size;
  MtpWeights w;
  w.pre_norm_embed = L.take("mtp.pre_fc_norm_embedding.weight", {H}, true);
  w.pre_norm_hidden = L.take("mtp.pre_fc_norm_hidden.weight", {H}, true);
  w.fc = L.take("mtp.fc.weight", {H, 2 * H}, true);
  const std::string a = "mtp.layers.0.self_attn.";
  w.input_norm = L.take("mtp.layers.0.input_layernorm.weight", {H}, true);
  w.attn.q = L.take(a + "q_proj.weight", {c.num_heads * c.head_dim * 2, H}, true);
  w.attn.k = L.take(a + "k_proj.weight", {c.num_kv_heads * c.head_dim, H}, true);
  w.attn.v = L.take(a + "v_proj.weight", {c.num_kv_heads * c.head_dim, H}, true);
  w.attn.o = L.take(a + "o_proj.weight", {H, c.num_heads * c.head_dim}, true);
  w.attn.q_norm = L.take(a + "q_norm.weight", {c.head_dim}, true);
  w.attn.k_norm = L.take(a + "k_norm.weight", {c.head_dim}, true);
  w.post_norm = L.take("mtp.layers.0.post_attention_layernorm.weight", {H}, true);
  w.moe = load_moe(L, "mtp.layers.0.mlp.", c, true);
  w.norm = L.take("mtp.norm.weight", {H}, true);
  return w;
}

Weights load_all(const Config& c, Loader& L) {
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
    lw.moe = load_moe(L, p + ".mlp.", c, false);
    if (int pi = c.ple_index(int(i)); pi >= 0) lw.ple = load_ple(L, p + ".ple", c, pi);
    w.layers.push_back(std::move(lw));
  }
  w.final_mixer = load_hc(L, "hyper_connection_mixer", c, false);
  if (L.has_absolute("mtp.fc.weight")) {
    // A draft head that does not load is reported and skipped: the main model stays usable.
    try {
      w.mtp = load_mtp(L, c);
    } catch (const Error& e) {
      w.mtp_note = e.what();
    }
  }
  w.unused = L.unused();
  return w;
}

}  // namespace

Weights load_weights(const Config& c, const TensorStore& store) {
  CheckpointLoader L(store, c.weight_prefix);
  return load_all(c, L);
}

Weights random_weights(const Config& c, uint64_t seed) {
  RandomLoader L(seed);
  return load_all(c, L);
}

}  // namespace ds4::qwen
