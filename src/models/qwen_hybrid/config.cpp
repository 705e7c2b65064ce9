#include "models/qwen_hybrid/config.h"

#include <algorithm>

#include "core/error.h"

namespace ds4::qwen {
using nlohmann::json;

int Config::ple_index(int layer) const {
  for (size_t i = 0; i < ple_layer_ids.size(); i++)
    if (ple_layer_ids[i] == layer + 1) return int(i);
  return -1;
}

namespace {

struct Reader {
  const json& j;
  const std::string& path;
  [[noreturn]] void fail(ErrorKind k, const std::string& what) const { throw Error(k, path + ": " + what); }
  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int64_t integer(const char* key) const {
    if (!has(key)) fail(ErrorKind::Format, std::string("missing '") + key + "'");
    if (!j[key].is_number_integer()) fail(ErrorKind::Format, std::string("'") + key + "' must be an integer");
    return j[key].get<int64_t>();
  }
  int64_t integer(const char* key, int64_t dflt) const { return has(key) ? integer(key) : dflt; }
  double number(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    if (!j[key].is_number()) fail(ErrorKind::Format, std::string("'") + key + "' must be a number");
    return j[key].get<double>();
  }
  bool boolean(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    if (!j[key].is_boolean()) fail(ErrorKind::Format, std::string("'") + key + "' must be true or false");
    return j[key].get<bool>();
  }
  std::string string(const char* key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    if (!j[key].is_string()) fail(ErrorKind::Format, std::string("'") + key + "' must be a string");
    return j[key].get<std::string>();
  }
  int64_t positive(const char* key) const {
    int64_t v = integer(key);
    if (v <= 0) fail(ErrorKind::Format, std::string("'") + key + "' must be positive, got " + std::to_string(v));
    return v;
  }
};

}  // namespace

Config parse_config(const json& root, const std::string& path) {
  if (!root.is_object()) throw Error(ErrorKind::Format, path + ": config is not a JSON object");
  Config c;
  c.model_type = root.value("model_type", "");
  const json* text = &root;
  if (c.model_type == "qwen4_exp") {
    if (!root.contains("text_config") || !root["text_config"].is_object())
      throw Error(ErrorKind::Format, path + ": qwen4_exp config needs a text_config object");
    text = &root["text_config"];
    c.weight_prefix = "model.language_model.";
  } else if (c.model_type == "qwen4_exp_text") {
    c.weight_prefix = "model.";
  } else {
    throw Error(ErrorKind::Unsupported, path + ": model_type '" + c.model_type + "' is not a qwen4_exp model");
  }
  Reader r{*text, path};
  Reader top{root, path};
  // tie_word_embeddings lives at the top level of VL configs and in the text config of text checkpoints.
  c.tie_word_embeddings = top.boolean("tie_word_embeddings", r.boolean("tie_word_embeddings", false));

  c.vocab_size = r.positive("vocab_size");
  c.hidden_size = r.positive("hidden_size");
  c.num_layers = r.positive("num_hidden_layers");
  c.num_heads = r.positive("num_attention_heads");
  c.num_kv_heads = r.positive("num_key_value_heads");
  c.head_dim = r.has("head_dim") ? r.positive("head_dim") : c.hidden_size / c.num_heads;
  c.lin_k_heads = r.positive("linear_num_key_heads");
  c.lin_v_heads = r.positive("linear_num_value_heads");
  c.lin_k_dim = r.positive("linear_key_head_dim");
  c.lin_v_dim = r.positive("linear_value_head_dim");
  c.conv_kernel = r.positive("linear_conv_kernel_dim");
  c.num_experts = r.positive("num_experts");
  c.top_k = r.positive("num_experts_per_tok");
  c.moe_inter = r.positive("moe_intermediate_size");
  c.shared_inter = r.positive("shared_expert_intermediate_size");
  c.norm_topk_prob = r.boolean("norm_topk_prob", true);
  c.hc_count = r.integer("hc_count", 4);
  c.hc_lowrank = r.integer("hc_lowrank", 320);
  c.rms_eps = r.number("rms_norm_eps", 1e-6);
  c.max_position_embeddings = r.integer("max_position_embeddings", 32768);

  const std::string act = r.string("hidden_act", "silu");
  if (act != "silu") r.fail(ErrorKind::Unsupported, "hidden_act '" + act + "' is not supported (silu only)");
  c.gdn_gate_act = r.string("output_gate_type", act);
  if (c.gdn_gate_act != "sigmoid" && c.gdn_gate_act != "silu")
    r.fail(ErrorKind::Unsupported, "output_gate_type '" + c.gdn_gate_act + "' must be sigmoid or silu");
  if (c.hc_count <= 1) r.fail(ErrorKind::Format, "hc_count must be > 1");
  if (c.hc_lowrank <= 0) r.fail(ErrorKind::Format, "hc_lowrank must be positive");
  if (c.top_k > c.num_experts) r.fail(ErrorKind::Format, "num_experts_per_tok exceeds num_experts");
  if (c.num_heads % c.num_kv_heads) r.fail(ErrorKind::Shape, "num_attention_heads must be a multiple of num_key_value_heads");
  if (c.lin_v_heads % c.lin_k_heads)
    r.fail(ErrorKind::Shape, "linear_num_value_heads must be a multiple of linear_num_key_heads");

  // Layer types: explicit, or GDN with every full_attention_interval-th layer sparse attention.
  if (r.has("layer_types")) {
    if (!(*text)["layer_types"].is_array()) r.fail(ErrorKind::Format, "'layer_types' must be a list");
    for (auto& t : (*text)["layer_types"]) {
      std::string s = t.is_string() ? t.get<std::string>() : "";
      if (s == "linear_attention") c.layer_types.push_back(LayerType::LinearAttention);
      else if (s == "qwen_sparse_attention" || s == "full_attention") c.layer_types.push_back(LayerType::SparseAttention);
      else r.fail(ErrorKind::Unsupported, "unsupported layer type '" + s + "'");
    }
    if (int64_t(c.layer_types.size()) != c.num_layers)
      r.fail(ErrorKind::Shape, "layer_types has " + std::to_string(c.layer_types.size()) + " entries for " +
                                   std::to_string(c.num_layers) + " layers");
  } else {
    int64_t interval = r.integer("full_attention_interval", 4);
    for (int64_t i = 0; i < c.num_layers; i++)
      c.layer_types.push_back((i + 1) % interval ? LayerType::LinearAttention : LayerType::SparseAttention);
  }

  // RoPE: only the default kind; M-RoPE sections only matter for vision positions but are validated.
  const json& rope = r.has("rope_parameters") ? (*text)["rope_parameters"] : json::object();
  Reader rr{rope, path};
  std::string rope_type = rr.string("rope_type", "default");
  if (rope_type != "default") r.fail(ErrorKind::Unsupported, "rope_type '" + rope_type + "' is not supported");
  c.rope_theta = rr.number("rope_theta", r.number("rope_theta", 10000.0));
  double partial = rr.number("partial_rotary_factor", r.number("partial_rotary_factor", 1.0));
  c.rotary_dim = int64_t(double(c.head_dim) * partial);
  if (c.rotary_dim <= 0 || c.rotary_dim % 2) r.fail(ErrorKind::Shape, "rotary dimension must be positive and even");
  if (rr.has("mrope_section")) {
    auto& ms = rope["mrope_section"];
    if (!ms.is_array() || ms.size() != 3) r.fail(ErrorKind::Format, "mrope_section must have three entries");
    for (int i = 0; i < 3; i++) c.mrope_section[i] = ms[i].get<int64_t>();
  } else {
    c.mrope_section = {11, 11, 10};
  }
  for (int i = 1; i < 3; i++)
    if (c.mrope_section[i] * 3 > c.rotary_dim / 2 + 2)
      r.fail(ErrorKind::Shape, "mrope_section does not fit the rotary dimension");

  // QSA indexer: required, since every attention layer of the family carries one.
  bool any_attn = std::count(c.layer_types.begin(), c.layer_types.end(), LayerType::SparseAttention) > 0;
  if (any_attn || r.has("indexer_n_heads")) {
    c.idx_heads = r.positive("indexer_n_heads");
    if (r.integer("indexer_kv_heads") != 1) r.fail(ErrorKind::Unsupported, "QSA requires indexer_kv_heads = 1");
    c.idx_head_dim = r.positive("indexer_head_dim");
    c.idx_budget = r.positive("indexer_budget");
    c.idx_ratio = r.positive("indexer_compress_ratio");
    if (c.idx_budget % c.idx_ratio) r.fail(ErrorKind::Format, "indexer_budget must be divisible by indexer_compress_ratio");
    if (c.rotary_dim > c.idx_head_dim) r.fail(ErrorKind::Shape, "the rotary dimension must fit the QSA index head");
  }

  // EOS ids: an int or a list; the first separates PLE n-gram segments.
  if (r.has("eos_token_id")) {
    auto& e = (*text)["eos_token_id"];
    if (e.is_number_integer()) c.eos_ids.push_back(e.get<int64_t>());
    else if (e.is_array())
      for (auto& x : e) c.eos_ids.push_back(x.get<int64_t>());
  } else if (top.has("eos_token_id") && root["eos_token_id"].is_number_integer()) {
    c.eos_ids.push_back(root["eos_token_id"].get<int64_t>());
  }

  if (r.has("ple_layer_ids")) {
    for (auto& x : (*text)["ple_layer_ids"]) c.ple_layer_ids.push_back(x.get<int64_t>());
    std::sort(c.ple_layer_ids.begin(), c.ple_layer_ids.end());
    c.ple_layer_ids.erase(std::unique(c.ple_layer_ids.begin(), c.ple_layer_ids.end()), c.ple_layer_ids.end());
  }
  c.ple_embed_dim = r.has("ple_embed_dim") ? r.positive("ple_embed_dim") : c.hidden_size;
  c.ple_conv_kernel = r.integer("ple_conv_kernel_size", 4);
  c.ngram_size = r.integer("ngram_size", 3);
  c.heads_per_ngram = r.integer("heads_per_ngram", 8);
  c.ngram_vocab_base = r.integer("ngram_vocab_size_base", 20000000);
  c.ngram_divisor = r.integer("make_ngram_vocab_size_divisible_by", 128);
  c.seed = r.integer("seed", 1234);
  if (!c.ple_layer_ids.empty()) {
    int64_t heads = (c.ngram_size - 1) * c.heads_per_ngram;
    if (heads <= 0 || c.ple_embed_dim % heads)
      r.fail(ErrorKind::Shape, "ple_embed_dim must be divisible by (ngram_size - 1) * heads_per_ngram");
    for (auto id : c.ple_layer_ids) {
      if (id < 1 || id > c.num_layers) r.fail(ErrorKind::Format, "ple_layer_ids are one-indexed layer ids");
      if (c.layer_types[size_t(id - 1)] != LayerType::LinearAttention)
        r.fail(ErrorKind::Unsupported, "PLE is only supported on linear_attention layers");
    }
    if (c.eos_ids.empty()) r.fail(ErrorKind::Format, "eos_token_id must be set when PLE layers are enabled");
    if (c.ple_conv_kernel <= 0 || c.ngram_divisor <= 0 || c.ngram_vocab_base <= 1)
      r.fail(ErrorKind::Format, "PLE sizes must be positive");
  }
  return c;
}

void check_forward_input(const Config& c, int64_t pos, std::span<const int32_t> tokens) {
  const int64_t T = int64_t(tokens.size()), V = c.vocab_size;
  if (T == 0) throw Error(ErrorKind::InvalidArgument, "forward needs at least one token");
  for (auto t : tokens)
    if (t < 0 || t >= V)
      throw Error(ErrorKind::InvalidArgument, "token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                                                  std::to_string(V) + ")");
  if (pos + T > c.max_position_embeddings)
    throw Error(ErrorKind::InvalidArgument, "sequence of " + std::to_string(pos + T) +
                                                " tokens exceeds max_position_embeddings " +
                                                std::to_string(c.max_position_embeddings));
}

}  // namespace ds4::qwen
