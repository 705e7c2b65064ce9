#include "models/qwen_hybrid/model.h"

#include <algorithm>
#include <filesystem>

#include "backend/cpu/linear.h"
#include "core/error.h"
#include "io/json_file.h"
#include "models/backends.h"
#include "models/qwen_hybrid/decode_bytes.h"
#include "models/qwen_hybrid/gated_deltanet.h"
#include "models/qwen_hybrid/hyper_connection.h"
#include "models/qwen_hybrid/moe.h"
#include "models/qwen_hybrid/mtp.h"
#include "models/qwen_hybrid/ple.h"
#include "models/qwen_hybrid/sparse_attention.h"

namespace ds4::qwen {

size_t QwenState::bytes() const {
  size_t n = 0;
  for (auto& l : layers)
    n += 4 * (l.attn.keys.size() + l.attn.values.size() + l.attn.index_keys.size() + l.attn.block_keys.size() +
              l.gdn.conv.size() + l.gdn.recurrent.size() + l.ple.conv.size()) +
         8 * l.ple.context.size();
  for (size_t i = 0; i < mark_.gdn.size(); i++)
    n += 4 * (mark_.gdn[i].conv.size() + mark_.gdn[i].recurrent.size() + mark_.ple[i].conv.size()) +
         8 * mark_.ple[i].context.size();
  return n;
}

bool QwenState::mark() {
  Mark& m = mark_;
  m.set = true, m.pos = pos, m.mtp_pos = mtp_pos;
  m.lengths.clear();
  m.gdn.resize(layers.size()), m.ple.resize(layers.size());
  auto lengths = [&](const AttnState& a) {
    for (size_t n : {a.keys.size(), a.values.size(), a.index_keys.size(), a.block_keys.size()}) m.lengths.push_back(n);
  };
  for (size_t i = 0; i < layers.size(); i++) {
    lengths(layers[i].attn);
    m.gdn[i] = layers[i].gdn, m.ple[i] = layers[i].ple;  // assignment reuses the mark's storage
  }
  lengths(mtp);
  m.last_hidden = last_hidden;
  return true;
}

void QwenState::rewind() {
  const Mark& m = mark_;
  if (!m.set || m.gdn.size() != layers.size()) throw Error(ErrorKind::Internal, "rewind without a mark");
  size_t k = 0;
  auto cut = [&](AttnState& a) {
    for (std::vector<float>* v : {&a.keys, &a.values, &a.index_keys, &a.block_keys}) v->resize(m.lengths[k++]);
  };
  for (size_t i = 0; i < layers.size(); i++) {
    cut(layers[i].attn);
    layers[i].gdn = m.gdn[i], layers[i].ple = m.ple[i];
  }
  cut(mtp);
  last_hidden = m.last_hidden;
  pos = m.pos, mtp_pos = m.mtp_pos;
}

QwenHybridModel::QwenHybridModel(Config c, Weights w)
    : cfg_(std::move(c)), w_(std::move(w)), rope_(cfg_.rotary_dim, cfg_.rope_theta, cfg_.mrope_section) {
  info_.family = "qwen_hybrid";
  info_.model_type = cfg_.model_type;
  info_.vocab_size = cfg_.vocab_size;
  info_.max_positions = cfg_.max_position_embeddings;
  info_.eos_ids = cfg_.eos_ids;
  // Parameter counts from the loaded weights; a decoded token reads top_k of the routed experts.
  auto count = [](const Mat& m) { return int64_t(m.v.size()); };
  auto hc = [&](const HyperConnWeights& h) { return count(h.norm) + count(h.down) + count(h.up) + count(h.inject); };
  int64_t total = count(w_.embed) + count(w_.lm_head) + hc(w_.final_mixer), active = total;
  if (cfg_.tie_word_embeddings) active += count(w_.embed);  // the embedding is read again as the head
  active -= count(w_.embed) - cfg_.hidden_size;            // one embedding row per token
  for (auto& l : w_.layers) {
    int64_t dense = hc(l.attn_hc) + hc(l.mlp_hc);
    for (const Mat* m : {&l.gdn.in_qkv, &l.gdn.in_z, &l.gdn.in_b, &l.gdn.in_a, &l.gdn.conv, &l.gdn.a_log,
                         &l.gdn.dt_bias, &l.gdn.norm, &l.gdn.out, &l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o,
                         &l.attn.q_norm, &l.attn.k_norm, &l.attn.idx_qk, &l.attn.idx_q_norm, &l.attn.idx_k_norm,
                         &l.moe.router, &l.moe.sh_gate, &l.moe.sh_up, &l.moe.sh_down, &l.moe.sh_gate_w})
      dense += count(*m);
    int64_t experts = 0;
    for (size_t e = 0; e < l.moe.gate.size(); e++) experts += count(l.moe.gate[e]) + count(l.moe.up[e]) + count(l.moe.down[e]);
    int64_t ple_total = 0, ple_active = 0;
    if (l.ple) {
      for (const Mat* m : {&l.ple->key, &l.ple->value, &l.ple->norm_key, &l.ple->norm_query, &l.ple->norm_conv, &l.ple->conv})
        ple_total += count(*m);
      ple_active = ple_total + cfg_.ple_embed_dim;  // one table row per n-gram head
      ple_total += count(l.ple->table);
    }
    total += dense + experts + ple_total;
    active += dense + experts / cfg_.num_experts * cfg_.top_k + ple_active;
  }
  info_.total_params = total;
  info_.active_params = active;
  info_.decode_state_bytes = [c = cfg_](int64_t p) { return decode_state_bytes(c, p, StateElementBytes{4, 4}); };
}

std::unique_ptr<SequenceState> QwenHybridModel::new_state() const {
  auto s = std::make_unique<QwenState>();
  s->layers.resize(static_cast<size_t>(cfg_.num_layers));
  for (int64_t i = 0; i < cfg_.num_layers; i++) {
    auto& l = s->layers[size_t(i)];
    if (cfg_.layer_types[size_t(i)] == LayerType::LinearAttention) init_gdn_state(l.gdn, cfg_);
    if (w_.layers[size_t(i)].ple) init_ple_state(l.ple, cfg_);
  }
  return s;
}

void QwenHybridModel::forward(SequenceState& state, std::span<const int32_t> tokens, std::vector<float>& logits,
                              bool all_positions) const {
  auto& st = dynamic_cast<QwenState&>(state);
  const int64_t T = int64_t(tokens.size()), H = cfg_.hidden_size, S = cfg_.hc_count, D = S * H, V = cfg_.vocab_size;
  check_forward_input(cfg_, st.pos, tokens);
  // The stream starts as hc_count copies of the token embedding.
  std::vector<float> x(static_cast<size_t>(T * D));
  for (int64_t t = 0; t < T; t++)
    for (int64_t s = 0; s < S; s++)
      std::copy(w_.embed.p() + tokens[size_t(t)] * H, w_.embed.p() + (tokens[size_t(t)] + 1) * H, x.begin() + (t * S + s) * H);
  std::vector<float> mixed(static_cast<size_t>(T * H)), inject(static_cast<size_t>(T * S)), out(static_cast<size_t>(T * H)), ple(static_cast<size_t>(T * D));
  for (int64_t i = 0; i < cfg_.num_layers; i++) {
    const auto& lw = w_.layers[size_t(i)];
    auto& ls = st.layers[size_t(i)];
    if (lw.ple) {
      ple_forward(*lw.ple, cfg_, ls.ple, x.data(), tokens.data(), T, ple.data());
      for (size_t j = 0; j < x.size(); j++) x[j] += ple[j];
    }
    hc_mix(lw.attn_hc, cfg_, x.data(), T, mixed.data(), inject.data());
    if (lw.type == LayerType::LinearAttention)
      gdn_forward(lw.gdn, cfg_, ls.gdn, mixed.data(), T, out.data());
    else
      attention_forward(lw.attn, cfg_, rope_, ls.attn, mixed.data(), T, st.pos, out.data());
    hc_inject(x.data(), out.data(), inject.data(), T, cfg_);
    hc_mix(lw.mlp_hc, cfg_, x.data(), T, mixed.data(), inject.data());
    moe_forward(lw.moe, cfg_, mixed.data(), T, out.data());
    hc_inject(x.data(), out.data(), inject.data(), T, cfg_);
  }
  st.pos += T;
  // The draft head needs every position's final hidden state; otherwise only the rows asked for.
  const int64_t first = all_positions || w_.mtp ? 0 : T - 1, rows = T - first;
  hc_mix(w_.final_mixer, cfg_, x.data() + first * D, rows, mixed.data(), nullptr);
  if (w_.mtp) st.last_hidden.assign(mixed.begin(), mixed.begin() + T * H);
  const int64_t out_first = all_positions ? 0 : T - 1 - first;
  logits.resize(static_cast<size_t>((rows - out_first) * V));
  cpu::linear(mixed.data() + out_first * H, rows - out_first, H, head().p(), V, logits.data());
}

void QwenHybridModel::draft(SequenceState& state, std::span<const int32_t> next_tokens, std::vector<float>& logits,
                            bool all_positions) const {
  if (!w_.mtp) throw Error(ErrorKind::Unsupported, "this model has no MTP draft head");
  auto& st = dynamic_cast<QwenState&>(state);
  const int64_t H = cfg_.hidden_size, V = cfg_.vocab_size, T = int64_t(next_tokens.size());
  if (T == 0 || T * H > int64_t(st.last_hidden.size()))
    throw Error(ErrorKind::InvalidArgument, "draft: needs 1 to " + std::to_string(st.last_hidden.size() / size_t(H)) +
                                                " tokens (the positions of the last forward call)");
  for (auto t : next_tokens)
    if (t < 0 || t >= V) throw Error(ErrorKind::InvalidArgument, "draft: token id " + std::to_string(t) + " out of range");
  std::vector<float> m(static_cast<size_t>(T * H));
  mtp_forward(*w_.mtp, cfg_, rope_, w_.embed, st.mtp, st.last_hidden.data(), next_tokens.data(), T, st.mtp_pos, m.data());
  st.mtp_pos += T;
  const int64_t first = all_positions ? 0 : T - 1;
  logits.resize(static_cast<size_t>((T - first) * V));
  cpu::linear(m.data() + first * H, T - first, H, head().p(), V, logits.data());
}

std::unique_ptr<Model> load_qwen_hybrid(const std::string& dir, const nlohmann::json& j, const LogFn& log,
                                        const std::string& backend_name) {
  const std::string cfg_path = dir + "/config.json";
  Config c = parse_config(j, cfg_path);
  // generation_config.json may list more end-of-sequence ids (e.g. <|im_end|> for chat); the config's own
  // first id stays first, since PLE uses it as the n-gram segment separator.
  const std::string gen_path = dir + "/generation_config.json";
  if (std::filesystem::exists(gen_path)) {
    const nlohmann::json g = read_json_file(gen_path);
    std::vector<int64_t> ids;
    if (g.contains("eos_token_id") && g["eos_token_id"].is_number_integer()) ids.push_back(g["eos_token_id"].get<int64_t>());
    if (g.contains("eos_token_id") && g["eos_token_id"].is_array())
      for (auto& x : g["eos_token_id"])
        if (x.is_number_integer()) ids.push_back(x.get<int64_t>());
    for (auto id : ids)
      if (std::find(c.eos_ids.begin(), c.eos_ids.end(), id) == c.eos_ids.end()) c.eos_ids.push_back(id);
  }
  TensorStore store = TensorStore::open_dir(dir);
  Weights w = load_weights(c, store);
  size_t mtp = 0, vision = 0;
  std::vector<std::string> other;
  for (auto& n : w.unused) {
    if (n.rfind("mtp.", 0) == 0) mtp++;
    else if (n.rfind("model.visual.", 0) == 0 || n.rfind("visual.", 0) == 0) vision++;
    else other.push_back(n);
  }
  if (log) {
    log("loaded " + c.model_type + " from " + dir + ": " + std::to_string(c.num_layers) + " layers, hidden " +
        std::to_string(c.hidden_size) + ", " + std::to_string(c.num_experts) + " experts, vocab " +
        std::to_string(c.vocab_size) + ", " + std::to_string(store.size()) + " tensors");
    if (vision) log("vision weights present but not used yet (" + std::to_string(vision) + " tensors)");
    if (w.mtp) log("MTP draft head loaded");
    else if (mtp || !w.mtp_note.empty())
      log("mtp weights present but not used" + (w.mtp_note.empty() ? std::string() : ": " + w.mtp_note));
    for (auto& n : other) log("warning: unused tensor '" + n + "'");
  }
  if (backend_name != "cpu") {
    if (log) log("backend " + backend_name + ": copying the weights to the device");
    return backend(backend_name).qwen_load(c, w);
  }
  return std::make_unique<QwenHybridModel>(std::move(c), std::move(w));
}

std::unique_ptr<Model> random_qwen_hybrid(const nlohmann::json& j, uint64_t seed, const LogFn& log,
                                          const std::string& backend_name) {
  Config c = parse_config(j, "config");
  if (backend_name != "cpu") {
    if (log)
      log("random " + c.model_type + " weights generated on " + backend_name + " (seed " + std::to_string(seed) +
          "): " + std::to_string(c.num_layers) + " layers, hidden " + std::to_string(c.hidden_size) + ", " +
          std::to_string(c.num_experts) + " experts");
    return backend(backend_name).qwen_random(c, seed);
  }
  Weights w = random_weights(c, seed);
  if (log)
    log("random " + c.model_type + " weights (seed " + std::to_string(seed) + "): " + std::to_string(c.num_layers) +
        " layers, hidden " + std::to_string(c.hidden_size) + ", " + std::to_string(c.num_experts) + " experts");
  return std::make_unique<QwenHybridModel>(std::move(c), std::move(w));
}

}  // namespace ds4::qwen
