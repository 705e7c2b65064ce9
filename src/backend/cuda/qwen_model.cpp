#include "backend/cuda/qwen_model.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <mutex>

#include "backend/cpu/rope.h"
#include "backend/cuda/block_profiler.h"
#include "backend/cuda/step_clock.h"
#include "backend/cuda/trace.h"
#include "backend/cuda/check.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/qwen_weights.h"
#include "backend/cuda/switches.h"
#include "models/qwen_hybrid/decode_bytes.h"
#include "models/qwen_hybrid/gated_deltanet.h"

namespace ds4::cuda {
namespace {

using qwen::Config;
using qwen::LayerType;

// Page-locked host memory: asynchronous copies of tokens in and logits out.
template <class T>
class Pinned {
 public:
  explicit Pinned(size_t n) : n_(n) {
    if (!n) return;
    DS4_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p_), n * sizeof(T)));
    DS4_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_), p_, 0));
  }
  ~Pinned() {
    if (p_) cudaFreeHost(p_);
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  T* get() const { return p_; }
  T* dev() const { return dev_; }  // the same bytes for kernels (zero-copy: a graph reads or writes them in place)
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  T* dev_ = nullptr;
  size_t n_ = 0;
};

// DS4_CUDA_DUP (measurement only): a comma-separated list of ops that every step runs twice, the second time on
// the same inputs into the same outputs (hc: both mixers; in: the token mixer's input projection; router; route;
// the attention layer's prep, pool (QSA block pooling), select (QSA selection) and attention) or into scratch
// (out: the token mixer's output projection; experts), so that no result changes. The drop in decode tokens/s
// (tools/gpu/ab.sh, layer_cost.sh) is what one more of that op costs inside the replayed graph, where programmatic
// dependent launch overlaps kernels: Nsight Compute's serialised kernel times cannot show it.
enum DupOp : unsigned {
  kDupHc = 1,
  kDupIn = 2,
  kDupOut = 4,
  kDupRouter = 8,
  kDupRoute = 16,
  kDupExperts = 32,
  kDupPrep = 64,
  kDupPool = 128,
  kDupSelect = 256,
  kDupAttention = 512
};
// DS4_CUDA_PLE_TAIL=0 composes the PLE block's tail from the single ops instead of ple_tail (the same bits).
bool ple_tail_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_PLE_TAIL");
  return on;
}
// DS4_CUDA_PLE_EMBED=0: a decode step's n-gram rows, context and embeddings by ple_ngram_rows and gather_rows
// (three launches) instead of ple_embed (one); the same values.
bool ple_embed_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_PLE_EMBED");
  return on;
}
// DS4_CUDA_PLE_KV=0: the fused tail's key and value projections as two passes instead of one (to measure the
// merge; the value rows may take another GEMV kernel's summation order then).
bool ple_kv_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_PLE_KV");
  return on;
}

// DS4_CUDA_STEP_INPUTS=0: a step's positions, embedding streams and PLE n-gram embeddings by fill_positions,
// embed_streams and (in the PLE layer) ple_embed instead of step_inputs' one kernel; the same values.
bool step_inputs_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_STEP_INPUTS");
  return on;
}
// DS4_CUDA_ZERO_COPY=0: a replayed decode step's token is copied to the device before the graph and its greedy pick
// back after it, instead of the graph reading the token from the pinned host buffer and the lm_head writing the
// pick into one (two copies, each a copy engine's round trip while the GPU waits between steps). Needs step_inputs.
bool zero_copy_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_ZERO_COPY") && step_inputs_enabled();
  return on;
}

// DS4_CUDA_GDN_CONV_FUSED=0 runs the decode step's GDN conv as its own kernel instead of in the fused step (the same
// bits).
bool gdn_conv_fused_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_GDN_CONV_FUSED");
  return on;
}

// How many times a step runs `op`: 2 when DS4_CUDA_DUP lists it, else 1 (the list is parsed once).
int dup_count(DupOp op) {
  static const unsigned listed = [] {
    const char* v = std::getenv("DS4_CUDA_DUP");
    std::string list = ",";
    list += v ? v : "";
    list += ',';
    const std::pair<const char*, DupOp> names[] = {
        {"hc", kDupHc},          {"in", kDupIn},           {"out", kDupOut},         {"router", kDupRouter},
        {"route", kDupRoute},    {"experts", kDupExperts}, {"prep", kDupPrep},       {"pool", kDupPool},
        {"select", kDupSelect},  {"attention", kDupAttention}};
    unsigned m = 0;
    for (const auto& [name, bit] : names) {
      std::string key = ",";
      key += name;
      key += ',';
      if (list.find(key) != std::string::npos) m |= bit;
    }
    return m;
  }();
  return listed & op ? 2 : 1;
}

// The attention kernels support head dims 64, 128 and 256; other head dims (the tiny test models) are
// zero-padded to the next of these: zeros add nothing to q·k, and the padded output columns are dropped.
int64_t padded_head_dim(int64_t hd) { return hd <= 64 ? 64 : hd <= 128 ? 128 : hd <= 256 ? 256 : hd; }

void copy_async(Context& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes) DS4_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
}

// dst becomes a buffer of src's size holding src's first `used` elements.
template <class T>
void dup(Context& ctx, DeviceBuffer<T>& dst, const DeviceBuffer<T>& src, size_t used) {
  if (!src.size()) return;
  dst = DeviceBuffer<T>(src.size());
  copy_async(ctx, dst.get(), src.get(), used * sizeof(T));
}

// dst (allocated once to src's size, then reused) takes src's first `used` elements.
template <class T>
void keep(Context& ctx, DeviceBuffer<T>& dst, const DeviceBuffer<T>& src, size_t used) {
  if (dst.size() != src.size()) dst = DeviceBuffer<T>(src.size());
  copy_async(ctx, dst.get(), src.get(), used * sizeof(T));
}

struct LayerState {
  DeviceBuffer<float> conv, recurrent;         // GDN: [(K-1)][conv_dim], [VH][dk][dv]
  DeviceBuffer<bf16> keys, values;             // attention: [capacity][KVH * padded head dim]
  DeviceBuffer<float> index_keys, block_keys;  // QSA: [capacity][D] raw, [capacity / R + 1][D] pooled
  DeviceBuffer<float> ple_conv;                // PLE: [(K-1) * N][hc * H]
  DeviceBuffer<int64_t> ple_context;           // PLE: the last N-1 token ids
};

// f(a's buffer, b's buffer) for each buffer a forward() changes in place (the rest are caches, written only at and
// past the position): what CudaQwenState::mark() keeps and rewind() restores.
template <class A, class B, class F>
void each_in_place(A& a, B& b, F f) {
  f(a.conv, b.conv);
  f(a.recurrent, b.recurrent);
  f(a.ple_conv, b.ple_conv);
  f(a.ple_context, b.ple_context);
}

class CudaQwenModel;

// What a released sequence leaves for the next one (CudaQwenModel::recycle_state): its device buffers and the
// graphs captured over them. A new sequence that takes them replays the decode graph at once: capturing and
// instantiating a 48-layer step's ~590 kernels took about 4 ms on the H200, a step's time, on every sequence's
// first decode step.
struct SpareState {
  static constexpr int64_t kGraphs = 5;  // CudaQwenState::kGraphMaxT + 1
  int64_t capacity = 0;
  LayerState mtp;
  DeviceBuffer<float> last_hidden;
  DeviceBuffer<int64_t> pos_dev;
  std::vector<LayerState> layers;
  cudaGraphExec_t graphs[kGraphs] = {};
  SpareState() = default;
  SpareState(const SpareState&) = delete;
  SpareState& operator=(const SpareState&) = delete;
  ~SpareState() {
    for (auto& g : graphs)
      if (g) cudaGraphExecDestroy(g);
  }
};

class CudaQwenState;
void swap_buffers(SpareState& spare, CudaQwenState& st) noexcept;

class CudaQwenState : public SequenceState {
 public:
  explicit CudaQwenState(const CudaQwenModel& m) : model(m), pos_dev(1) {}
  ~CudaQwenState() override;
  int64_t position() const override { return pos; }
  std::unique_ptr<SequenceState> clone() const override;
  bool mark() override;
  void rewind() override;
  size_t bytes() const override {
    size_t n = pos_dev.bytes() + mtp.keys.bytes() + mtp.values.bytes() + last_hidden.bytes();
    for (auto& l : layers)
      n += l.conv.bytes() + l.recurrent.bytes() + l.keys.bytes() + l.values.bytes() + l.index_keys.bytes() +
           l.block_keys.bytes() + l.ple_conv.bytes() + l.ple_context.bytes();
    n += marked.last_hidden.bytes() + marked.pos_dev.bytes();
    for (auto& l : marked.layers) each_in_place(l, l, [&](const auto& b, const auto&) { n += b.bytes(); });
    return n;
  }
  void drop_graph() {
    for (auto& g : graphs) {
      if (g) cudaGraphExecDestroy(g);
      g = nullptr;
    }
  }

  const CudaQwenModel& model;
  int64_t pos = 0, capacity = 0;  // capacity: positions the caches hold
  // The MTP draft head: its own KV cache (in mtp.keys/values, capacity positions), the pairs it has consumed,
  // and the final hidden states of the last forward call [last_rows][H] (every row: the head reads them all).
  LayerState mtp;
  int64_t mtp_pos = 0, last_rows = 0;
  DeviceBuffer<float> last_hidden;
  DeviceBuffer<int64_t> pos_dev;  // the same position, read by decode graphs
  std::vector<LayerState> layers;
  // The captured steps, valid while the caches keep their addresses: [1] the decode step, [T] (2 <= T <=
  // kGraphMaxT) a verification chunk of T tokens (speculative decoding's draft check: every row's hidden state).
  static constexpr int64_t kGraphMaxT = 4;
  static_assert(kGraphMaxT + 1 == SpareState::kGraphs, "a spare holds every graph");
  cudaGraphExec_t graphs[kGraphMaxT + 1] = {};

  // mark() / rewind() (speculative decoding's way back, without clone()'s allocations and cache copies): the caches
  // (keys, values, index keys, pooled blocks; the draft head's keys and values) are written only at and past the
  // position, and read only below it (a pooled block once it is complete), so a rewind keeps them and resets the
  // positions; what a forward() changes in place (each_in_place: the GDN conv and recurrent states, the PLE conv
  // history and n-gram context; and the last hidden rows) is copied on the device into buffers kept from mark to
  // mark. The decode graph stays valid: it reads the position from pos_dev.
  struct Mark {
    bool set = false;
    int64_t pos = 0, mtp_pos = 0, last_rows = 0;
    std::vector<LayerState> layers;  // the buffers of each_in_place only
    DeviceBuffer<float> last_hidden;
    DeviceBuffer<int64_t> pos_dev;
  } marked;
};

class CudaQwenModel : public Model {
 public:
  CudaQwenModel(Config c, const qwen::Weights* host, uint64_t seed, const CudaModelOptions& o)
      : cfg_(std::move(c)),
        opts_(o),
        ctx_(o.device, scratch_bytes(cfg_, o.prefill_chunk)),
        w_(host ? upload_qwen_weights(ctx_, cfg_, *host) : random_qwen_weights(ctx_, cfg_, seed)),
        rope_table_(cfg_.rotary_dim, cfg_.rope_theta, cfg_.mrope_section),
        rope_(rope_table_),
        tok_dev_(size_t(o.prefill_chunk)),
        tok_host_(size_t(o.prefill_chunk)),
        hidden_(size_t(o.prefill_chunk * cfg_.hidden_size)),
        logits_dev_(size_t(kHeadRows * cfg_.vocab_size)),
        logits_host_(size_t(kHeadRows * cfg_.vocab_size)),
        pick_dev_(size_t(2 * kPickRows)),
        pick_host_(size_t(2 * kPickRows)),
        profiler_(std::getenv("DS4_CUDA_PROFILE") && std::string(std::getenv("DS4_CUDA_PROFILE")) == "1") {
    if (opts_.prefill_chunk < 1) throw Error(ErrorKind::InvalidArgument, "CUDA model: prefill_chunk must be positive");
    // DS4_CUDA_GRAPHS=0 runs decode steps eagerly, so that a kernel profiler sees every launch.
    if (const char* g = std::getenv("DS4_CUDA_GRAPHS"); g && std::string(g) == "0") opts_.graphs = false;
    info_.family = "qwen_hybrid";
    info_.model_type = cfg_.model_type;
    info_.vocab_size = cfg_.vocab_size;
    info_.max_positions = cfg_.max_position_embeddings;
    info_.eos_ids = cfg_.eos_ids;
    count_params();
  }

  const ModelInfo& info() const override { return info_; }
  bool has_draft_head() const override { return w_.mtp.has_value(); }
  const Config& config() const { return cfg_; }
  Context& ctx() const { return ctx_; }
  std::mutex& mutex() const { return mu_; }

  // A fresh sequence: zero recurrent state, position 0. It takes the last released sequence's buffers and graphs
  // when there are some (recycle_state), reset to what fresh ones hold; the caches keep their stale rows, which
  // nothing reads (they are written at and past the position and read below it).
  std::unique_ptr<SequenceState> new_state() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<SpareState> spare;
    {
      std::lock_guard<std::mutex> sl(spare_mu_);
      spare = std::move(spare_);
    }
    auto s = std::make_unique<CudaQwenState>(*this);
    if (spare) swap_buffers(*spare, *s);
    DS4_CUDA_CHECK(cudaMemsetAsync(s->pos_dev.get(), 0, sizeof(int64_t), ctx_.stream()));
    const Config& c = cfg_;
    const int64_t conv_dim = 2 * c.lin_k_heads * c.lin_k_dim + c.lin_v_heads * c.lin_v_dim, D = c.hc_count * c.hidden_size;
    s->layers.resize(size_t(c.num_layers));
    // The buffer of n elements, zeroed: b's own when it has them (a recycled sequence's), else a new one.
    auto zeroed = [&](DeviceBuffer<float>& b, size_t n) {
      if (b.size() != n) b = DeviceBuffer<float>(n);
      if (n) DS4_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, n * sizeof(float), ctx_.stream()));
    };
    for (int64_t i = 0; i < c.num_layers; i++) {
      auto& l = s->layers[size_t(i)];
      if (c.layer_types[size_t(i)] == LayerType::LinearAttention) {
        zeroed(l.conv, size_t((c.conv_kernel - 1) * conv_dim));
        zeroed(l.recurrent, size_t(c.lin_v_heads * c.lin_k_dim * c.lin_v_dim));
      }
      if (w_.layers[size_t(i)].ple) {
        zeroed(l.ple_conv, size_t((c.ple_conv_kernel - 1) * c.ngram_size * D));
        std::vector<int64_t> context(size_t(c.ngram_size - 1), c.eos_for_ple());
        if (l.ple_context.size() != context.size()) l.ple_context = DeviceBuffer<int64_t>(context.size());
        l.ple_context.upload(context);
      }
    }
    ctx_.synchronize();
    return s;
  }

  // A sequence released: its buffers and graphs wait for the next new_state() (one sequence's worth, and only up
  // to kSpareMaxBytes, so a long sequence's caches are freed). Never throws (a destructor calls it): moves only.
  static constexpr size_t kSpareMaxBytes = size_t(512) << 20;
  void recycle_state(CudaQwenState& st) const noexcept {
    try {
      if (st.bytes() > kSpareMaxBytes) return;
      auto spare = std::make_unique<SpareState>();
      swap_buffers(*spare, st);
      std::lock_guard<std::mutex> sl(spare_mu_);
      spare_ = std::move(spare);  // an older spare is freed
    } catch (...) {
      // No spare: the state's buffers are freed as before.
    }
  }

  void forward(SequenceState& state, std::span<const int32_t> tokens, std::vector<float>& logits,
               bool all_positions) const override {
    auto& st = dynamic_cast<CudaQwenState&>(state);
    const int64_t T = int64_t(tokens.size()), V = cfg_.vocab_size;
    qwen::check_forward_input(cfg_, st.pos, tokens);
    std::lock_guard<std::mutex> lock(mu_);
    logits.resize(size_t((all_positions ? T : 1) * V));
    run_chunks(st, tokens, logits.data(), all_positions, false);
  }

  // A forward call in chunks of at most prefill_chunk tokens. out: the host logits of every row (all_positions)
  // or of the last row; pick: the last row's greedy pick instead (run_chunk).
  void run_chunks(CudaQwenState& st, std::span<const int32_t> tokens, float* out, bool all_positions,
                  bool pick) const {
    const int64_t T = int64_t(tokens.size()), V = cfg_.vocab_size;
    reserve(st, st.pos + T);
    if (w_.mtp && st.last_hidden.size() < size_t(T * cfg_.hidden_size)) {
      st.last_hidden = DeviceBuffer<float>(size_t(T * cfg_.hidden_size));
      st.drop_graph();  // the decode graph writes the hidden row into the old buffer
    }
    for (int64_t c0 = 0; c0 < T; c0 += opts_.prefill_chunk) {
      const int64_t n = std::min(opts_.prefill_chunk, T - c0);
      const bool last = c0 + n == T;
      float* rows = out && all_positions ? out + c0 * V : out && last ? out : nullptr;
      run_chunk(st, tokens.subspan(size_t(c0), size_t(n)), c0, rows, all_positions, pick && last);
    }
    st.last_rows = T;
  }

  bool forward_greedy(SequenceState& state, std::span<const int32_t> tokens, GreedyPick& pick) const override {
    auto& st = dynamic_cast<CudaQwenState&>(state);
    qwen::check_forward_input(cfg_, st.pos, tokens);
    std::lock_guard<std::mutex> lock(mu_);
    run_chunks(st, tokens, nullptr, false, true);
    pick = picked(0);
    return true;
  }

  // Verification chunks of up to kPickRows tokens: every row's lm_head as forward() computes it (the same
  // multi-token GEMV, so the same bits), then its pick on the device; 8 bytes a row to the host instead of the row.
  bool forward_greedy_rows(SequenceState& state, std::span<const int32_t> tokens,
                           std::span<GreedyPick> picks) const override {
    const int64_t T = int64_t(tokens.size());
    if (T < 1 || T > kPickRows || T > opts_.prefill_chunk || int64_t(picks.size()) != T) return false;
    auto& st = dynamic_cast<CudaQwenState&>(state);
    qwen::check_forward_input(cfg_, st.pos, tokens);
    std::lock_guard<std::mutex> lock(mu_);
    run_chunks(st, tokens, nullptr, true, true);
    for (int64_t r = 0; r < T; r++) picks[size_t(r)] = picked(r);
    return true;
  }

  // The MTP head over the pairs (h_s, x_{s+1}) of the last forward call (models/qwen_hybrid/mtp.cpp).
  void draft(SequenceState& state, std::span<const int32_t> next_tokens, std::vector<float>& logits,
             bool all_positions) const override {
    auto& st = draft_state(state, next_tokens);
    const int64_t T = int64_t(next_tokens.size());
    std::lock_guard<std::mutex> lock(mu_);
    logits.resize(size_t((all_positions ? T : 1) * cfg_.vocab_size));
    run_draft(st, next_tokens, logits.data(), all_positions, false);
  }

  // The head's guess for the last pair, picked on the device (8 bytes to the host instead of the row).
  bool draft_greedy(SequenceState& state, std::span<const int32_t> next_tokens, GreedyPick& pick) const override {
    if (!w_.mtp) return false;
    auto& st = draft_state(state, next_tokens);
    std::lock_guard<std::mutex> lock(mu_);
    run_draft(st, next_tokens, nullptr, false, true);
    pick = picked(0);
    return true;
  }

  // The state of a draft call, after the checks every draft call makes.
  CudaQwenState& draft_state(SequenceState& state, std::span<const int32_t> next_tokens) const {
    if (!w_.mtp) throw Error(ErrorKind::Unsupported, "this model has no MTP draft head");
    auto& st = dynamic_cast<CudaQwenState&>(state);
    const int64_t V = cfg_.vocab_size, T = int64_t(next_tokens.size());
    if (T == 0 || T > st.last_rows)
      throw Error(ErrorKind::InvalidArgument, "draft: needs 1 to " + std::to_string(st.last_rows) +
                                                  " tokens (the positions of the last forward call)");
    for (auto t : next_tokens)
      if (t < 0 || t >= V) throw Error(ErrorKind::InvalidArgument, "draft: token id " + std::to_string(t) + " out of range");
    return st;
  }

  // The draft head in chunks of at most prefill_chunk pairs: the logits of every pair (all_positions) or of the
  // last into out, or (pick) the last pair's greedy pick into pick_host_.
  void run_draft(CudaQwenState& st, std::span<const int32_t> next_tokens, float* out, bool all_positions,
                 bool pick) const {
    const int64_t V = cfg_.vocab_size, T = int64_t(next_tokens.size());
    reserve(st, st.mtp_pos + T);
    for (int64_t c0 = 0; c0 < T; c0 += opts_.prefill_chunk) {
      const int64_t n = std::min(opts_.prefill_chunk, T - c0);
      const bool last = c0 + n == T;
      float* rows = out && all_positions ? out + c0 * V : out && last ? out : nullptr;
      run_draft_chunk(st, next_tokens.subspan(size_t(c0), size_t(n)), st.last_hidden.get() + c0 * cfg_.hidden_size,
                      rows, all_positions, pick && last);
    }
  }

  // Row r's pick as greedy_pick left it in pick_host_ ({index, status}).
  GreedyPick picked(int64_t r) const {
    const int32_t index = pick_host_.get()[2 * r], status = pick_host_.get()[2 * r + 1];
    GreedyPick pick;
    pick.index = index;
    pick.row = status == kGreedyNan      ? GreedyPick::Row::NaN
               : status == kGreedyPosInf ? GreedyPick::Row::PosInf
               : status == kGreedyAllNegInf ? GreedyPick::Row::AllNegInf
                                            : GreedyPick::Row::Ok;
    return pick;
  }

  // Each of the first `rows` logits rows in logits_dev_ picked on the device, {index, status} a row copied into
  // pick_host_ (one copy, queued: the caller synchronises before it reads picked()).
  void pick_rows(int64_t rows) const {
    const int64_t V = cfg_.vocab_size;
    for (int64_t r = 0; r < rows; r++) greedy_pick(ctx_, logits_dev_.get() + r * V, V, pick_dev_.get() + 2 * r);
    copy_picks(rows);
  }
  // The first `rows` picks already in pick_dev_ (a linear_pick's) into pick_host_, queued.
  void copy_picks(int64_t rows) const {
    DS4_CUDA_CHECK(cudaMemcpyAsync(pick_host_.get(), pick_dev_.get(), size_t(2 * rows) * sizeof(int32_t),
                                   cudaMemcpyDeviceToHost, ctx_.stream()));
  }

  // Grows the caches of the attention layers to hold `need` positions (powers of two from 1024), keeping
  // what they hold. The captured decode graph names the old addresses, so it is dropped.
  void reserve(CudaQwenState& st, int64_t need) const {
    if (need <= st.capacity) return;
    int64_t cap = 1024;
    while (cap < need) cap *= 2;
    cap = std::max(need, std::min(cap, cfg_.max_position_embeddings));
    const Config& c = cfg_;
    const int64_t kv = c.num_kv_heads * padded_head_dim(c.head_dim), D = c.idx_head_dim;
    for (int64_t i = 0; i < c.num_layers; i++) {
      if (c.layer_types[size_t(i)] != LayerType::SparseAttention) continue;
      auto& l = st.layers[size_t(i)];
      DeviceBuffer<bf16> keys(size_t(cap * kv)), values(size_t(cap * kv));
      DeviceBuffer<float> index_keys(size_t(cap * D)), block_keys(size_t((cap / c.idx_ratio + 1) * D));
      copy_async(ctx_, keys.get(), l.keys.get(), size_t(st.pos * kv) * sizeof(bf16));
      copy_async(ctx_, values.get(), l.values.get(), size_t(st.pos * kv) * sizeof(bf16));
      copy_async(ctx_, index_keys.get(), l.index_keys.get(), size_t(st.pos * D) * sizeof(float));
      copy_async(ctx_, block_keys.get(), l.block_keys.get(), size_t(st.pos / c.idx_ratio * D) * sizeof(float));
      ctx_.synchronize();
      l.keys = std::move(keys), l.values = std::move(values);
      l.index_keys = std::move(index_keys), l.block_keys = std::move(block_keys);
    }
    if (w_.mtp) {
      auto& l = st.mtp;
      DeviceBuffer<bf16> keys(size_t(cap * kv)), values(size_t(cap * kv));
      copy_async(ctx_, keys.get(), l.keys.get(), size_t(st.mtp_pos * kv) * sizeof(bf16));
      copy_async(ctx_, values.get(), l.values.get(), size_t(st.mtp_pos * kv) * sizeof(bf16));
      ctx_.synchronize();
      l.keys = std::move(keys), l.values = std::move(values);
    }
    st.capacity = cap;
    st.drop_graph();
  }

  void mark_state(CudaQwenState& s) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = s.marked;
    m.set = true, m.pos = s.pos, m.mtp_pos = s.mtp_pos, m.last_rows = s.last_rows;
    m.layers.resize(s.layers.size());
    for (size_t i = 0; i < s.layers.size(); i++)
      each_in_place(m.layers[i], s.layers[i], [&](auto& dst, const auto& src) { keep(ctx_, dst, src, src.size()); });
    // (last_hidden is allocated only with a draft head; last_rows is counted either way.)
    keep(ctx_, m.last_hidden, s.last_hidden, std::min(s.last_hidden.size(), size_t(s.last_rows * cfg_.hidden_size)));
    keep(ctx_, m.pos_dev, s.pos_dev, 1);
  }

  void rewind_state(CudaQwenState& s) const {
    std::lock_guard<std::mutex> lock(mu_);
    const auto& m = s.marked;
    if (!m.set || m.layers.size() != s.layers.size()) throw Error(ErrorKind::Internal, "rewind without a mark");
    for (size_t i = 0; i < s.layers.size(); i++)
      each_in_place(s.layers[i], m.layers[i],
                    [&](auto& dst, const auto& src) { copy_async(ctx_, dst.get(), src.get(), src.bytes()); });
    // last_hidden may have grown since the mark (a longer chunk): the marked rows go to its start.
    copy_async(ctx_, s.last_hidden.get(), m.last_hidden.get(),
               std::min(m.last_hidden.size(), size_t(m.last_rows * cfg_.hidden_size)) * sizeof(float));
    copy_async(ctx_, s.pos_dev.get(), m.pos_dev.get(), sizeof(int64_t));
    s.pos = m.pos, s.mtp_pos = m.mtp_pos, s.last_rows = m.last_rows;
  }

  std::unique_ptr<SequenceState> clone_state(const CudaQwenState& s) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto n = std::make_unique<CudaQwenState>(*this);
    n->pos = s.pos;
    n->capacity = s.capacity;
    copy_async(ctx_, n->pos_dev.get(), s.pos_dev.get(), sizeof(int64_t));
    const Config& c = cfg_;
    const int64_t kv = c.num_kv_heads * padded_head_dim(c.head_dim), D = c.idx_head_dim;
    n->mtp_pos = s.mtp_pos;
    n->last_rows = s.last_rows;
    dup(ctx_, n->mtp.keys, s.mtp.keys, size_t(s.mtp_pos * kv));
    dup(ctx_, n->mtp.values, s.mtp.values, size_t(s.mtp_pos * kv));
    dup(ctx_, n->last_hidden, s.last_hidden, size_t(s.last_rows * c.hidden_size));
    n->layers.resize(s.layers.size());
    for (size_t i = 0; i < s.layers.size(); i++) {
      const auto& a = s.layers[i];
      auto& b = n->layers[i];
      dup(ctx_, b.conv, a.conv, a.conv.size());
      dup(ctx_, b.recurrent, a.recurrent, a.recurrent.size());
      dup(ctx_, b.keys, a.keys, size_t(s.pos * kv));
      dup(ctx_, b.values, a.values, size_t(s.pos * kv));
      dup(ctx_, b.index_keys, a.index_keys, size_t(s.pos * D));
      dup(ctx_, b.block_keys, a.block_keys, c.idx_ratio ? size_t(s.pos / c.idx_ratio * D) : 0);
      dup(ctx_, b.ple_conv, a.ple_conv, a.ple_conv.size());
      dup(ctx_, b.ple_context, a.ple_context, a.ple_context.size());
    }
    ctx_.synchronize();
    return n;
  }

 private:
  static constexpr int64_t kHeadRows = 256;  // logits rows computed per lm_head launch when all positions are asked
  static constexpr int64_t kPickRows = 8;    // rows forward_greedy_rows picks on the device

  template <class T>
  DeviceBuffer<T> zeros(size_t n) const {
    DeviceBuffer<T> b(n);
    if (n) DS4_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, n * sizeof(T), ctx_.stream()));
    return b;
  }

  // Scratch for one chunk: the largest set of temporaries alive at once, per token, plus the ops' own.
  static size_t scratch_bytes(const Config& c, int64_t chunk) {
    const int64_t H = c.hidden_size, S = c.hc_count, D = S * H, R = c.hc_lowrank;
    const int64_t kd = c.lin_k_heads * c.lin_k_dim, vd = c.lin_v_heads * c.lin_v_dim, conv = 2 * kd + vd;
    // ... and the chunked delta rule's W, U, B and cum (gated_delta_chunked: 32-token chunks).
    const int64_t gdn = 2 * (conv + vd + 2 * c.lin_v_heads) + conv + 2 * c.lin_v_heads * c.lin_k_dim + 3 * vd +
                        4 * c.lin_v_heads + c.lin_v_heads * (c.lin_k_dim + c.lin_v_dim + 33);
    const int64_t HDp = padded_head_dim(c.head_dim), idx = (c.idx_heads + 1) * c.idx_head_dim;
    const int64_t stride = c.idx_ratio ? qsa_list_stride(c.idx_budget / c.idx_ratio, c.idx_ratio) : 0;
    const int64_t attn = 2 * (c.num_heads * 2 * c.head_dim + 2 * c.num_kv_heads * c.head_dim + idx) +
                         c.idx_heads * c.idx_head_dim + 2 * stride + 8 * c.num_heads * HDp;
    const int64_t moe = 2 * (c.num_experts + 1 + 2 * c.shared_inter) + 4 * c.top_k + 2 * H +
                        c.top_k * (3 * c.moe_inter + H) + 4 * c.num_experts;
    const int64_t ple = 8 * D + 2 * c.ple_embed_dim + 16;
    const int64_t hc = 2 * D + R + S;
    const int64_t nb = c.idx_ratio ? std::min<int64_t>(c.max_position_embeddings / c.idx_ratio + 1, 16384) : 0;
    const int64_t per_token = 2 * D + 2 * H + S + 3 + std::max({gdn, attn, moe, ple}) + hc + 3 * nb;
    return size_t(double(per_token) * 4.0 * 1.25 * double(chunk)) + (size_t(64) << 20);
  }

  void count_params() {
    // Parameter counts from the device matrices; a decoded token reads top_k of the routed experts, one row
    // of the embedding and one row of the PLE table per n-gram head.
    auto n = [](const DMat& m) { return m.rows * m.cols; };
    auto hc = [&](const DHyperConn& h) { return n(h.norm) + n(h.down_inject) + n(h.up); };
    int64_t total = n(w_.embed) + n(w_.lm_head) + hc(w_.final_mixer);
    int64_t active = total - n(w_.embed) + cfg_.hidden_size + (cfg_.tie_word_embeddings ? n(w_.embed) : 0);
    for (auto& l : w_.layers) {
      int64_t dense = hc(l.attn_hc) + hc(l.mlp_hc) + n(l.moe.proj) + n(l.moe.sh_down);
      if (l.type == LayerType::LinearAttention)
        dense += n(l.gdn.proj) + n(l.gdn.conv) + n(l.gdn.norm) + n(l.gdn.out) + 2 * cfg_.lin_v_heads;
      else
        dense += n(l.attn.proj) + n(l.attn.o) + n(l.attn.q_norm) + n(l.attn.k_norm) + n(l.attn.idx_q_norm) +
                 n(l.attn.idx_k_norm);
      const int64_t experts = n(l.moe.gate) + n(l.moe.up) + n(l.moe.down);
      int64_t ple_total = 0, ple_active = 0;
      if (l.ple) {
        const auto& p = *l.ple;
        ple_active = n(p.kv) + n(p.norm_key) + n(p.norm_query) + n(p.norm_conv) + n(p.conv);
        ple_total = ple_active + n(p.table);
        ple_active += cfg_.ple_embed_dim;
      }
      total += dense + experts + ple_total;
      active += dense + experts / cfg_.num_experts * cfg_.top_k + ple_active;
    }
    info_.total_params = total;
    info_.active_params = active;
    // float32 state, bfloat16 key-value cache (the indexer's keys float32).
    info_.decode_state_bytes = [c = cfg_](int64_t p) { return qwen::decode_state_bytes(c, p, qwen::StateElementBytes{4, 2}); };
  }

  // One chunk (at most prefill_chunk tokens) from the state's position. out: the host logits of every row
  // (all_positions) or of the last row, or null when this is not the last chunk.
  // pick: instead of copying logits out, leave the greedy pick of the last row (or, all_positions, of every row:
  // at most kPickRows) in pick_host_ (greedy_pick).
  void run_chunk(CudaQwenState& st, std::span<const int32_t> tokens, int64_t row0, float* out,
                 bool all_positions, bool pick = false) const {
    const int64_t T = int64_t(tokens.size()), V = cfg_.vocab_size, H = cfg_.hidden_size;
    std::memcpy(tok_host_.get(), tokens.data(), tokens.size_bytes());
    const bool timed = T == 1 && pick;
    if (timed) step_clock_.begin(ctx_.stream());
#ifdef DS4_CUDA_TRACE
    if (timed && tracer_) tracer_->reset(ctx_.stream()), trace::clear_launches();
#endif
    const bool rows_all = all_positions && T > 1;
    // Graphs: the decode step (T = 1: the last row's logits) and verification chunks (every row's hidden state).
    const bool graphed = opts_.graphs && !profiler_.on() && row0 == 0 &&
                         (T == 1 || (rows_all && T <= CudaQwenState::kGraphMaxT && graph_chunks()));
    // A replayed decode step reads its token from tok_host_ and leaves its pick in pick_host_ (capture_step).
    const bool zero_copy = graphed && T == 1 && zero_copy_enabled();
    if (!zero_copy)
      DS4_CUDA_CHECK(cudaMemcpyAsync(tok_dev_.get(), tok_host_.get(), tokens.size_bytes(), cudaMemcpyHostToDevice,
                                     ctx_.stream()));
    if (graphed) {
      cudaGraphExec_t& g = st.graphs[T];
      if (!g) capture_step(st, T, rows_all, zero_copy, g);
      DS4_CUDA_CHECK(cudaGraphLaunch(g, ctx_.stream()));
    } else {
      step(st, T, SeqPos::host(st.pos), rows_all, row0);
    }
    st.pos += T;
    if (profiler_.on()) {
      ctx_.synchronize();
      profiler_.collect();
    }
    if (pick) {
      // Every row: its lm_head row as the out path below computes it (the same GEMV call, the same bits); one
      // row: the step's lm_head left it picked (head_picks), or it is picked here.
      if (rows_all) {
        linear(ctx_, hidden_.get(), T, H, w_.head().p(), V, logits_dev_.get());
        pick_rows(T);
      } else if (head_picks(head_row(T, rows_all))) {
        if (!zero_copy) copy_picks(1);
      } else {
        pick_rows(1);
      }
      if (timed) step_clock_.end(ctx_.stream());
      ctx_.synchronize();
      if (timed) step_clock_.collect();
#ifdef DS4_CUDA_TRACE
      if (timed && tracer_) {
        // The graph's kernels (when the step replayed one: nothing was launched from the host but the pick),
        // then the host's launches of this step.
        std::vector<std::string> names = opts_.graphs && !profiler_.on() ? graph_kernels_ : std::vector<std::string>{};
        for (auto& n : trace::launches()) names.push_back(n);
        tracer_->step_done(std::move(names));
      }
#endif
      return;
    }
    if (!out) {
      ctx_.synchronize();
      return;
    }
    if (!rows_all) {
      DS4_CUDA_CHECK(cudaMemcpyAsync(logits_host_.get(), logits_dev_.get(), size_t(V) * sizeof(float),
                                     cudaMemcpyDeviceToHost, ctx_.stream()));
      ctx_.synchronize();
      std::memcpy(out, logits_host_.get(), size_t(V) * sizeof(float));
      return;
    }
    for (int64_t r0 = 0; r0 < T; r0 += kHeadRows) {
      const int64_t rows = std::min(kHeadRows, T - r0);
      linear(ctx_, hidden_.get() + r0 * H, rows, H, w_.head().p(), V, logits_dev_.get());
      DS4_CUDA_CHECK(cudaMemcpyAsync(logits_host_.get(), logits_dev_.get(), size_t(rows * V) * sizeof(float),
                                     cudaMemcpyDeviceToHost, ctx_.stream()));
      ctx_.synchronize();
      std::memcpy(out + r0 * V, logits_host_.get(), size_t(rows * V) * sizeof(float));
    }
  }

  // models/qwen_hybrid/mtp.cpp: mtp_forward over one chunk of pairs, then the shared lm_head.
  void run_draft_chunk(CudaQwenState& st, std::span<const int32_t> tokens, const float* hid, float* out,
                       bool all_positions, bool pick) const {
    const Config& c = cfg_;
    const DMtp& m = *w_.mtp;
    const int64_t T = int64_t(tokens.size()), H = c.hidden_size, V = c.vocab_size, N = m.attn.proj.rows;
    const float eps = float(c.rms_eps);
    std::memcpy(tok_host_.get(), tokens.data(), tokens.size_bytes());
    DS4_CUDA_CHECK(cudaMemcpyAsync(tok_dev_.get(), tok_host_.get(), tokens.size_bytes(), cudaMemcpyHostToDevice,
                                   ctx_.stream()));
    ScratchScope scope(ctx_.scratch());
    float* emb = take<float>(T * H);
    float* en = take<float>(T * H);
    float* hn = take<float>(T * H);
    float* cat = take<float>(T * 2 * H);
    float* u = take<float>(T * H);
    float* a = take<float>(T * H);
    float* o = take<float>(T * H);
    float* pr = take<float>(T * N);
    int32_t* pos3 = take<int32_t>(3 * T);
    // [normed embedding of x_{s+1} ; normed h_s], the embedding first (fc's input columns 0..H-1).
    embed_streams(ctx_, w_.embed.p(), H, tok_dev_.get(), T, 1, emb);
    rms_norm_offset(ctx_, emb, m.pre_norm_embed.p(), en, T, H, H, eps);
    rms_norm_offset(ctx_, hid, m.pre_norm_hidden.p(), hn, T, H, H, eps);
    copy_rows(ctx_, cat, 2 * H, en, H, T, H);
    copy_rows(ctx_, cat + H, 2 * H, hn, H, T, H);
    linear(ctx_, cat, T, 2 * H, m.fc.p(), H, u);
    // Pre-norm causal attention with a residual, then the pre-norm MoE with a residual, then the final norm.
    const SeqPos sp = SeqPos::host(st.mtp_pos);
    rms_norm_offset(ctx_, u, m.input_norm.p(), a, T, H, H, eps);
    fill_positions(ctx_, sp, T, pos3);
    linear(ctx_, a, T, H, m.attn.proj.p(), N, pr);
    gated_attention(m.attn, st.mtp.keys.get(), st.mtp.values.get(), pr, N, T, sp, pos3, KeySelection::causal(sp, T),
                    RowsOut{o});
    add(ctx_, u, o, u, T * H);
    rms_norm_offset(ctx_, u, m.post_norm.p(), a, T, H, H, eps);
    moe_block(m.moe, a, T, RowsOut{o});
    add(ctx_, u, o, u, T * H);
    rms_norm_offset(ctx_, u, m.norm.p(), a, T, H, H, eps);
    st.mtp_pos += T;
    if (pick) {  // the last pair's row, as the out path computes it (one row: the same GEMV's sums)
      head_pick(a + (T - 1) * H, true);
      copy_picks(1);
      ctx_.synchronize();
      return;
    }
    if (!out) {
      ctx_.synchronize();
      return;
    }
    const int64_t first = all_positions ? 0 : T - 1;
    for (int64_t r0 = first; r0 < T; r0 += kHeadRows) {
      const int64_t rows = std::min(kHeadRows, T - r0);
      linear(ctx_, a + r0 * H, rows, H, w_.head().p(), V, logits_dev_.get());
      DS4_CUDA_CHECK(cudaMemcpyAsync(logits_host_.get(), logits_dev_.get(), size_t(rows * V) * sizeof(float),
                                     cudaMemcpyDeviceToHost, ctx_.stream()));
      ctx_.synchronize();
      std::memcpy(out + (r0 - first) * V, logits_host_.get(), size_t(rows * V) * sizeof(float));
    }
  }

  // Records one step of T tokens of this state into exec, reading the position from pos_dev (valid while the T
  // positions fit the capacity); zero_copy: the step's token and pick in the pinned host buffers (step()).
  void capture_step(CudaQwenState& st, int64_t T, bool rows_all, bool zero_copy, cudaGraphExec_t& exec) const {
    cudaGraph_t g = nullptr;
#ifdef DS4_CUDA_TRACE
    if (T == 1) trace::clear_launches();
#endif
    DS4_CUDA_CHECK(cudaStreamBeginCapture(ctx_.stream(), cudaStreamCaptureModeThreadLocal));
    try {
      step(st, T, SeqPos{st.pos_dev.get(), st.capacity - T}, rows_all, 0, zero_copy);
    } catch (...) {
      cudaStreamEndCapture(ctx_.stream(), &g);
      if (g) cudaGraphDestroy(g);
      throw;
    }
    DS4_CUDA_CHECK(cudaStreamEndCapture(ctx_.stream(), &g));
    const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    DS4_CUDA_CHECK(e);
#ifdef DS4_CUDA_TRACE
    if (T == 1) graph_kernels_ = trace::launches();
#endif
  }

  // DS4_CUDA_GRAPH_CHUNKS=0 runs verification chunks eagerly (the same bits), to measure what their graphs save.
  static bool graph_chunks() {
    static const bool on = detail::switch_on("DS4_CUDA_GRAPH_CHUNKS");
    return on;
  }

  // The forward pass of T tokens at position sp (tokens already in tok_dev_). Leaves the final hidden states
  // of every row (rows_all) or of the last row in hidden_, and the last row's logits in logits_dev_.
  // zero_copy (a captured decode step, zero_copy_enabled): the token is read from tok_host_ in place and the
  // greedy pick written into pick_host_.
  void step(CudaQwenState& st, int64_t T, SeqPos sp, bool rows_all, int64_t row0, bool zero_copy = false) const {
    const Config& c = cfg_;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    DS4_CUDA_CHECK(cudaStreamIsCapturing(ctx_.stream(), &capture));
    // Only decode steps are profiled (prefill chunks would blur the per-call figures).
    profiling_ = profiler_.on() && capture == cudaStreamCaptureStatusNone && T == 1;
    auto span = [&](const char* name) { return prof(name); };
    const int64_t H = c.hidden_size, S = c.hc_count, D = S * H;
    ScratchScope scope(ctx_.scratch());
    float* x = take<float>(T * D);
    int32_t* pos3 = take<int32_t>(3 * T);
    float* mixed = take<float>(T * H);
    float* inject = take<float>(T * S);
    // Each block's output goes straight into the residual streams, x[t][s] += out[t] * inject[t][s] (hc_inject,
    // done by the block's last projection: RowsOut).
    const RowsOut to_streams{nullptr, x, inject, S};
    // The first PLE layer's n-gram embeddings depend on the tokens only: they come with the step's inputs.
    const int64_t ple_early = step_inputs_enabled() ? early_ple_layer(T) : -1;
    float* ple_emb = nullptr;
    if (step_inputs_enabled()) {
      StepPle early{};
      if (ple_early >= 0) {
        const DPle& p = *w_.layers[size_t(ple_early)].ple;
        ple_emb = take<float>(T * c.ple_embed_dim);
        early = StepPle{&p.hash, st.layers[size_t(ple_early)].ple_context.get(), p.table.p(), p.head_dim,
                        take<int64_t>(T * p.heads), ple_emb};
      }
      // The position moves on here: a replayed step reads it from pos_dev, so its kernels read the step's copy.
      int64_t* step_pos = sp.dev ? take<int64_t>(1) : nullptr;
      step_inputs(ctx_, zero_copy ? tok_host_.dev() : tok_dev_.get(), T, zero_copy ? tok_dev_.get() : nullptr,
                  StepPos{sp, pos3, step_pos, st.pos_dev.get()}, w_.embed.p(), H, S, x,
                  ple_early >= 0 ? &early : nullptr);
      if (step_pos) sp.dev = step_pos;
    } else {
      fill_positions(ctx_, sp, T, pos3);
      embed_streams(ctx_, w_.embed.p(), H, tok_dev_.get(), T, S, x);
    }
    for (int64_t i = 0; i < c.num_layers; i++) {
      const DLayer& l = w_.layers[size_t(i)];
      LayerState& ls = st.layers[size_t(i)];
      if (l.ple) {
        auto s = span("ple");
        ple_block(*l.ple, ls, x, T, i == ple_early ? ple_emb : nullptr);
      }
      {
        auto s = span("hyper-connection mix");
        for (int d = 0; d < dup_count(kDupHc); d++) hc_mix(l.attn_hc, x, T, mixed, inject);
      }
      if (l.type == LayerType::LinearAttention) {
        auto s = span("gated deltanet");
        gdn_block(l.gdn, ls, mixed, T, to_streams);
      } else {
        auto s = span("sparse attention");
        attn_block(l.attn, ls, mixed, T, sp, pos3, to_streams);
      }
      {
        auto s = span("hyper-connection mix");
        for (int d = 0; d < dup_count(kDupHc); d++) hc_mix(l.mlp_hc, x, T, mixed, inject);
      }
      {
        auto s = span("moe");
        moe_block(l.moe, mixed, T, to_streams);
      }
    }
    // Without step_inputs the position moves on as soon as no layer reads it any more: its one-thread kernel
    // follows a short mixer pass instead of waiting behind the lm_head (its chain 4.5 -> 2.5 us in the trace).
    if (!step_inputs_enabled()) advance_position(ctx_, st.pos_dev.get(), T);
    const int64_t first = mixed_first(T, rows_all);
    auto head_span = span("final mix and lm_head");
    hc_mix(w_.final_mixer, x + first * D, T - first, hidden_.get(), nullptr);
    if (w_.mtp) copy_floats(ctx_, st.last_hidden.get() + row0 * H, hidden_.get(), T * H);  // a kernel: see ops.h
    auto lm_span = span("lm_head linear");
    // The last row's logits, and where the GEMV picks as it writes them, its greedy pick (pick_dev_), which a
    // greedy caller copies and another ignores (head_pick).
    if (!rows_all) head_pick(head_row(T, rows_all), false, zero_copy ? pick_host_.dev() : pick_dev_.get());
  }

  // The first PLE layer when its embedding can run in the step's first kernel (ple_embed's chunks), else -1.
  int64_t early_ple_layer(int64_t T) const {
    if (!ple_embed_enabled()) return -1;
    for (int64_t i = 0; i < cfg_.num_layers; i++) {
      const auto& ple = w_.layers[size_t(i)].ple;
      if (ple) return ple_embed_supported(ple->hash, T) ? i : -1;
    }
    return -1;
  }

  // The first of a step's T rows that the final mix writes into hidden_: the draft head reads every row's final
  // hidden state; otherwise only the rows asked for are mixed.
  int64_t mixed_first(int64_t T, bool rows_all) const { return rows_all || w_.mtp ? 0 : T - 1; }
  // The lm_head row of hidden_ that step() computes alone (!rows_all).
  const float* head_row(int64_t T, bool rows_all) const {
    return hidden_.get() + (T - 1 - mixed_first(T, rows_all)) * cfg_.hidden_size;
  }
  // Whether the lm_head of row x leaves its greedy pick in pick_dev_ (linear_pick_fused).
  bool head_picks(const float* x) const {
    return linear_pick_fused(ctx_, x, cfg_.hidden_size, w_.head().p(), cfg_.vocab_size);
  }
  // Row x's logits into logits_dev_ with, where the GEMV picks as it writes (head_picks) or when `pick` asks for it,
  // its greedy pick in dest (default pick_dev_): no greedy kernel for a caller that samples.
  void head_pick(const float* x, bool pick, int32_t* dest = nullptr) const {
    const int64_t H = cfg_.hidden_size, V = cfg_.vocab_size;
    if (head_picks(x) || pick)
      linear_pick(ctx_, x, H, w_.head().p(), V, logits_dev_.get(), dest ? dest : pick_dev_.get());
    else linear(ctx_, x, 1, H, w_.head().p(), V, logits_dev_.get());
  }

  BlockProfiler::Span prof(const char* name) const { return profiler_.span(ctx_.stream(), name, !profiling_); }

  template <class T>
  T* take(int64_t n) const {
    return ctx_.scratch().take<T>(size_t(n));
  }

  // Columns [col0, col0 + width) of src [T][N] as a dense [T][width] array: the row itself when T == 1.
  float* cols(float* src, int64_t T, int64_t N, int64_t col0, int64_t width) const {
    if (T == 1 || (col0 == 0 && width == N)) return src + col0;
    float* dst = take<float>(T * width);
    copy_rows(ctx_, dst, width, src + col0, N, T, width);
    return dst;
  }

  // models/qwen_hybrid/hyper_connection.cpp: hc_mix.
  void hc_mix(const DHyperConn& w, const float* x, int64_t T, float* mixed, float* inject) const {
    const Config& c = cfg_;
    const int64_t H = c.hidden_size, S = c.hc_count, D = S * H, R = c.hc_lowrank, NI = w.down_inject.rows;
    // Decode and verification chunks: two kernels instead of seven, each weight matrix read once.
    if (T <= kHcFusedMaxT && hc_mix_fused_supported(T, S, H, R, NI)) {
      auto p = prof("hc.fused");
      hc_mix_fused(ctx_, x, T, S, H, R, w.norm.p(), w.down_inject.p(), NI, w.up.p(), float(c.rms_eps), mixed,
                   inject && w.has_inject ? inject : nullptr);
      return;
    }
    ScratchScope scope(ctx_.scratch());
    float* normed = take<float>(T * D);
    float* li = take<float>(T * NI);
    float* mix = take<float>(T * D);
    {
      auto p1 = prof("hc.norm");
      rms_norm_offset(ctx_, x, w.norm.p(), normed, T, D, H, float(c.rms_eps));
    }
    {
      auto p2 = prof("hc.down+inject linear");
      linear(ctx_, normed, T, D, w.down_inject.p(), NI, li);
    }
    float* low = cols(li, T, NI, 0, R);
    activate(ctx_, low, low, T * R, Act::Silu, float(S));
    {
      auto p3 = prof("hc.up linear");
      linear(ctx_, low, T, R, w.up.p(), D, mix);
    }
    hc_collapse(ctx_, mix, normed, T, S, H, mixed);
    if (inject && w.has_inject)
      activate(ctx_, cols(li, T, NI, R, S), inject, T * S, Act::Sigmoid, float(S), 2.0f);
  }

  // models/qwen_hybrid/gated_deltanet.cpp: gdn_forward.
  void gdn_block(const DGdn& g, LayerState& ls, const float* x, int64_t T, const RowsOut& out) const {
    const Config& c = cfg_;
    const int64_t H = c.hidden_size, KH = c.lin_k_heads, VH = c.lin_v_heads, dk = c.lin_k_dim, dv = c.lin_v_dim;
    const int64_t vd = VH * dv, conv = 2 * KH * dk + vd, N = g.proj.rows;
    ScratchScope scope(ctx_.scratch());
    float* pr = take<float>(T * N);
    {
      auto p1 = prof("gdn.proj linear");
      for (int d = 0; d < dup_count(kDupIn); d++) linear(ctx_, x, T, H, g.proj.p(), N, pr);
    }
    float* qkv = cols(pr, T, N, 0, conv);
    const GdnHeads heads{KH, VH, dk, dv};
    // As on the CPU: short chunks (decode, speculative verification) take the recurrent form, here one kernel
    // from the conv output to the gated norm, reading z, b and a in place; in decode that kernel also runs the
    // conv (the same bits), whose own launch would be one more latency-bound kernel on the chain.
    const bool fused = T <= qwen::kRecurrentMaxTokens && gdn_recurrent_fused_supported(T, heads);
    const bool conv_fused = fused && gdn_conv_fused_enabled() && gdn_conv_fused_supported(T, heads, c.conv_kernel);
    float* co = nullptr;
    if (!conv_fused) {
      co = take<float>(T * conv);
      causal_conv1d(ctx_, qkv, T, conv, g.conv.p(), c.conv_kernel, 1, ls.conv.get(), co, Act::Silu);
    }
    const Act gate_act = c.gdn_gate_act == "sigmoid" ? Act::Sigmoid : Act::Silu;
    float* normed = take<float>(T * vd);
    if (fused) {
      auto p2 = prof("gdn.prepare+delta+norm");
      const GdnGates gates{pr + conv, pr + conv + vd, pr + conv + vd + VH, N, g.a_log.get(), g.dt_bias.get(),
                           g.norm.p(), float(c.rms_eps), gate_act};
      const GdnConv cv{qkv, g.conv.p(), c.conv_kernel, ls.conv.get(), Act::Silu};
      gdn_recurrent_fused(ctx_, co, gates, T, heads, ls.recurrent.get(), normed, conv_fused ? &cv : nullptr);
    } else {
      float* z = cols(pr, T, N, conv, vd);
      float* b = cols(pr, T, N, conv + vd, VH);
      float* a = cols(pr, T, N, conv + vd + VH, VH);
      float* q = take<float>(T * VH * dk);
      float* k = take<float>(T * VH * dk);
      float* v = take<float>(T * vd);
      float* gg = take<float>(T * VH);
      float* beta = take<float>(T * VH);
      gdn_prepare(ctx_, co, a, b, g.a_log.get(), g.dt_bias.get(), T, heads, q, k, v, gg, beta);
      float* core = take<float>(T * vd);
      const DeltaShape shape{T, VH, dk, dv};
      {
        auto p2 = prof("gdn.delta rule");
        if (T <= qwen::kRecurrentMaxTokens)
          gated_delta_recurrent(ctx_, q, k, v, gg, beta, shape, ls.recurrent.get(), core);
        else
          gated_delta_chunked(ctx_, q, k, v, gg, beta, shape, ls.recurrent.get(), core);
      }
      rms_norm_gated(ctx_, core, z, g.norm.p(), normed, T * VH, dv, float(c.rms_eps), gate_act);
    }
    auto p3 = prof("gdn.out linear");
    if (dup_count(kDupOut) > 1) linear(ctx_, normed, T, vd, g.out.p(), H, take<float>(T * H));
    linear(ctx_, normed, T, vd, g.out.p(), H, out);
  }

  // models/qwen_hybrid/sparse_attention.cpp: qsa_select, then gated_attention over the selection.
  void attn_block(const DAttn& w, LayerState& ls, const float* x, int64_t T, SeqPos sp, const int32_t* pos3,
                  const RowsOut& out) const {
    const Config& c = cfg_;
    const int64_t H = c.hidden_size, IH = c.idx_heads, D = c.idx_head_dim, R = c.idx_ratio;
    const int64_t topk = c.idx_budget / c.idx_ratio, stride = qsa_list_stride(topk, R), N = w.proj.rows;
    const float eps = float(c.rms_eps);
    ScratchScope scope(ctx_.scratch());
    float* pr = take<float>(T * N);
    {
      auto p1 = prof("attn.proj linear");
      for (int d = 0; d < dup_count(kDupIn); d++) linear(ctx_, x, T, H, w.proj.p(), N, pr);
    }

    // One kernel prepares the indexer's queries (normed, rotated) and appends its raw keys, and the attention's
    // queries, gates, keys and values (attn_prep); then complete blocks are pooled and selected. A decode step
    // pools (and below the budget lists) in the same kernel (attn_prep_qsa) unless DS4_CUDA_QSA_FUSED=0 or a dup
    // switch asks for the separate ops.
    float* qi = take<float>(T * IH * D);
    int32_t* sel = take<int32_t>(T * stride);
    int32_t* count = take<int32_t>(T);
    static const bool fusable = detail::switch_on("DS4_CUDA_QSA_FUSED");
    const bool fused = T == 1 && fusable && dup_count(kDupPrep) == 1 && dup_count(kDupPool) == 1 &&
                       dup_count(kDupSelect) == 1;
    const QsaDecode qsa{ls.block_keys.get(), w.idx_k_norm.p(), R, topk, stride, sel, count};
    QsaFused done = QsaFused::Pooled;
    const Prepared p = prepare_attention(w, ls.keys.get(), ls.values.get(), pr, N, T, sp, pos3, qi,
                                         ls.index_keys.get(), fused ? &qsa : nullptr, &done);
    if (!fused)
      for (int d = 0; d < dup_count(kDupPool); d++)
        qsa_pool_chunk(ctx_, ls.index_keys.get(), sp, T, R, D, w.idx_k_norm.p(), rope_.params(), eps, ls.block_keys.get());
    // Past the budget a decode step's attention kernel chooses the blocks itself from the scores (no select
    // kernel, no list through memory; the same keys in the same order) unless DS4_CUDA_SELECT_IN_ATTENTION=0, a
    // dup switch, or more blocks than its scratch holds.
    static const bool in_attention = detail::switch_on("DS4_CUDA_SELECT_IN_ATTENTION");
    const int64_t nb_max = qsa_score_stride(sp.bound, T, R);
    if (done != QsaFused::Listed && T == 1 && in_attention && dup_count(kDupSelect) == 1 &&
        nb_max <= kQsaInKernelMaxBlocks) {
      float* scores = nb_max > topk ? take<float>(T * nb_max) : nullptr;
      {
        auto p2 = prof("attn.qsa select");
        qsa_score(ctx_, qi, ls.block_keys.get(), T, sp, IH, D, R, topk, scores);
      }
      attend(w, ls.keys.get(), ls.values.get(), p, T, KeySelection::blocks(scores, nb_max, sp, R, topk), out);
      return;
    }
    if (done != QsaFused::Listed) {
      auto p2 = prof("attn.qsa select");
      for (int d = 0; d < dup_count(kDupSelect); d++)
        qsa_select(ctx_, qi, ls.block_keys.get(), T, sp, IH, D, R, topk, sel, count, stride);
    }
    attend(w, ls.keys.get(), ls.values.get(), p, T, KeySelection::lists(sel, count, stride), out);
  }

  // The attention's inputs after attn_prep: q [T][NH][HDp] and gate [T][NH * HD] in scratch; keys and values
  // stored in the caches.
  struct Prepared {
    float *q, *gate;
  };

  // models/qwen_hybrid/sparse_attention.cpp: pr [T][N] holds the projections (q and gate interleaved per head,
  // k, v, then the indexer's queries and key when idx_q is given); the keys and values are appended to the caches
  // at sp (and the indexer key to idx_keys). With qsa (one token), the same kernel pools and may list
  // (attn_prep_qsa), which it reports in *done.
  Prepared prepare_attention(const DAttn& w, bf16* keys, bf16* values, const float* pr, int64_t N, int64_t T, SeqPos sp,
                             const int32_t* pos3, float* idx_q, float* idx_keys, const QsaDecode* qsa = nullptr,
                             QsaFused* done = nullptr) const {
    const Config& c = cfg_;
    const int64_t NH = c.num_heads, HD = c.head_dim, HDp = padded_head_dim(HD);
    Prepared p{take<float>(T * NH * HDp), take<float>(T * NH * HD)};
    const AttnPrepShape shape{NH, c.num_kv_heads, HD, HDp, idx_q ? c.idx_heads : 0, idx_q ? c.idx_head_dim : 0};
    const AttnPrepNorms norms{w.q_norm.p(), w.k_norm.p(), idx_q ? w.idx_q_norm.p() : nullptr, float(c.rms_eps)};
    const AttnPrepOut out{p.q, p.gate, keys, values, idx_q, idx_keys};
    auto s = prof("attn.prep");
    if (qsa) {
      *done = attn_prep_qsa(ctx_, pr, N, shape, norms, rope_.params(), Positions{pos3, 0}, sp, out, *qsa);
      return p;
    }
    for (int d = 0; d < dup_count(kDupPrep); d++)
      attn_prep(ctx_, pr, N, T, shape, norms, rope_.params(), Positions{pos3, 0}, sp, out);
    return p;
  }

  // Attention of the prepared queries over `selection`, times sigmoid(gate), then the o projection into out.
  void attend(const DAttn& w, const bf16* keys, const bf16* values, const Prepared& p, int64_t T,
              const KeySelection& selection, const RowsOut& out) const {
    const Config& c = cfg_;
    const int64_t H = c.hidden_size, NH = c.num_heads, KVH = c.num_kv_heads, HD = c.head_dim, HDp = padded_head_dim(HD);
    const float scale = 1.0f / std::sqrt(float(HD));
    float* att = take<float>(T * NH * HD);
    {
      auto p3 = prof("attn.attention");
      if (HDp == HD) {
        for (int d = 0; d < dup_count(kDupAttention); d++)
          attention(ctx_, p.q, keys, values, AttnShape{NH, KVH, HD}, T, selection, scale, p.gate, att);
      } else {
        float* attp = take<float>(T * NH * HDp);
        attention(ctx_, p.q, keys, values, AttnShape{NH, KVH, HDp}, T, selection, scale, nullptr, attp);
        copy_rows(ctx_, att, HD, attp, HDp, T * NH, HD);
        mul_sigmoid(ctx_, att, p.gate, T * NH * HD);
      }
    }
    auto p4 = prof("attn.o linear");
    if (dup_count(kDupOut) > 1) linear(ctx_, att, T, NH * HD, w.o.p(), H, take<float>(T * H));
    linear(ctx_, att, T, NH * HD, w.o.p(), H, out);
  }

  // The MTP head's causal attention (no indexer).
  void gated_attention(const DAttn& w, bf16* keys, bf16* values, float* pr, int64_t N, int64_t T, SeqPos sp,
                       const int32_t* pos3, const KeySelection& selection, const RowsOut& out) const {
    const Prepared p = prepare_attention(w, keys, values, pr, N, T, sp, pos3, nullptr, nullptr);
    attend(w, keys, values, p, T, selection, out);
  }

  // models/qwen_hybrid/moe.cpp: routed experts plus the gated shared expert, whose gate logit, gate and up
  // projections are columns of the router projection (moe_experts reads them in place, row stride N).
  void moe_block(const DMoe& m, const float* x, int64_t T, const RowsOut& out) const {
    const Config& c = cfg_;
    const int64_t H = c.hidden_size, E = c.num_experts, K = c.top_k, SI = c.shared_inter, N = m.proj.rows;
    ScratchScope scope(ctx_.scratch());
    float* pr = take<float>(T * N);
    {
      auto p1 = prof("moe.router+shared linear");
      for (int d = 0; d < dup_count(kDupRouter); d++) linear(ctx_, x, T, H, m.proj.p(), N, pr);
    }
    float* router = cols(pr, T, N, 0, E);
    int32_t* idx = take<int32_t>(T * K);
    float* weight = take<float>(T * K);
    {
      auto p2 = prof("moe.route");
      for (int d = 0; d < dup_count(kDupRoute); d++) moe_route(ctx_, router, T, E, K, c.norm_topk_prob, idx, weight);
    }
    auto p3 = prof("moe.experts+shared");
    SharedExpert shared;
    shared.down = m.sh_down.p();
    shared.logit = pr + E;
    shared.gate = pr + E + 1;
    shared.up = pr + E + 1 + SI;
    shared.ld = N;
    shared.inter = SI;
    const ExpertWeights experts{m.gate.p(), m.up.p(), m.down.p(), E, H, c.moe_inter};
    if (dup_count(kDupExperts) > 1) moe_experts(ctx_, experts, x, T, idx, weight, K, take<float>(T * H), &shared);
    moe_experts(ctx_, experts, x, T, idx, weight, K, out, &shared);
  }

  // models/qwen_hybrid/ple.cpp: ple_forward, added to the residual streams.
  // early_emb: the layer's n-gram embeddings when step_inputs computed them (the step's first kernel), else null.
  void ple_block(const DPle& p, LayerState& ls, float* x, int64_t T, const float* early_emb) const {
    const Config& c = cfg_;
    const int64_t H = c.hidden_size, S = c.hc_count, D = S * H, E = c.ple_embed_dim;
    const float eps = float(c.rms_eps);
    const bf16 *key_w = p.kv.p(), *value_w = p.kv.p() + D * E;
    ScratchScope scope(ctx_.scratch());
    const float* emb = early_emb;
    if (!emb) {
      int64_t* rows = take<int64_t>(T * p.heads);
      float* e = take<float>(T * E);
      emb = e;
      auto p1 = prof("ple.hash+gather");
      if (ple_embed_enabled() && ple_embed_supported(p.hash, T)) {
        ple_embed(ctx_, p.hash, tok_dev_.get(), T, ls.ple_context.get(), p.table.p(), p.head_dim, rows, e);
      } else {
        ple_ngram_rows(ctx_, p.hash, tok_dev_.get(), T, ls.ple_context.get(), rows);
        gather_rows(ctx_, p.table.p(), p.head_dim, rows, T * p.heads, e);
      }
    }
    auto p2 = prof("ple.rest");
    float* normed = take<float>(T * D);
    if (ple_tail_enabled() && ple_tail_supported(T, S, H)) {  // the same bits as the composition below
      if (ple_kv_enabled()) {  // one pass over both projections: token t's key row, then its value row
        float* kv = take<float>(T * (D + H));
        linear(ctx_, emb, T, E, p.kv.p(), D + H, kv);
        ple_tail(ctx_, kv, D + H, kv + D, D + H, x, T, S, H, p.norm_key.p(), p.norm_query.p(), p.norm_conv.p(),
                 p.conv.p(), c.ple_conv_kernel, c.ngram_size, ls.ple_conv.get(), normed, eps);
      } else {
        float* key = take<float>(T * D);
        float* value = take<float>(T * H);
        linear(ctx_, emb, T, E, key_w, D, key);
        linear(ctx_, emb, T, E, value_w, H, value);
        ple_tail(ctx_, key, D, value, H, x, T, S, H, p.norm_key.p(), p.norm_query.p(), p.norm_conv.p(), p.conv.p(),
                 c.ple_conv_kernel, c.ngram_size, ls.ple_conv.get(), normed, eps);
      }
      return;
    }
    float* key = take<float>(T * D);
    float* value = take<float>(T * H);
    float* query = take<float>(T * D);
    float* gated = take<float>(T * D);
    float* conv = take<float>(T * D);
    linear(ctx_, emb, T, E, key_w, D, key);
    rms_norm_offset(ctx_, key, p.norm_key.p(), key, T, D, H, eps);
    linear(ctx_, emb, T, E, value_w, H, value);
    rms_norm_offset(ctx_, x, p.norm_query.p(), query, T, D, H, eps);
    ple_gate(ctx_, key, query, value, T, S, H, gated);
    rms_norm_offset(ctx_, gated, p.norm_conv.p(), normed, T, D, H, eps);
    causal_conv1d(ctx_, normed, T, D, p.conv.p(), c.ple_conv_kernel, c.ngram_size, ls.ple_conv.get(), conv, Act::Silu);
    add(ctx_, gated, conv, conv, T * D);
    add(ctx_, x, conv, x, T * D);
  }

  Config cfg_;
  CudaModelOptions opts_;
  mutable Context ctx_;
  QwenDeviceWeights w_;
  cpu::RopeTable rope_table_;
  DeviceRope rope_;
  ModelInfo info_;
  DeviceBuffer<int32_t> tok_dev_;
  Pinned<int32_t> tok_host_;
  DeviceBuffer<float> hidden_;      // final hidden states [chunk][H]
  DeviceBuffer<float> logits_dev_;  // [kHeadRows][V]
  Pinned<float> logits_host_;
  DeviceBuffer<int32_t> pick_dev_;  // greedy_pick's {token, status}
  Pinned<int32_t> pick_host_;
  mutable BlockProfiler profiler_;
  mutable StepClock step_clock_;
#ifdef DS4_CUDA_TRACE
  std::unique_ptr<trace::Recorder> tracer_ =
      std::getenv("DS4_CUDA_TRACE_OUT") ? std::make_unique<trace::Recorder>(std::getenv("DS4_CUDA_TRACE_OUT"), size_t(1) << 20)
                                        : nullptr;
  mutable std::vector<std::string> graph_kernels_;
#endif
  mutable bool profiling_ = false;
  mutable std::mutex mu_;  // one forward at a time: the scratch arena, token and logits buffers are shared
  // The last released sequence's buffers and graphs (recycle_state); its own lock, as a state may be released
  // while mu_ is held.
  mutable std::mutex spare_mu_;
  mutable std::unique_ptr<SpareState> spare_;
};

// The buffers and graphs a spare holds, exchanged with a state's (both ways: recycle and reuse); moves only.
void swap_buffers(SpareState& spare, CudaQwenState& st) noexcept {
  std::swap(spare.capacity, st.capacity);
  std::swap(spare.mtp, st.mtp);
  std::swap(spare.last_hidden, st.last_hidden);
  std::swap(spare.pos_dev, st.pos_dev);
  std::swap(spare.layers, st.layers);
  for (int64_t t = 0; t < SpareState::kGraphs; t++) std::swap(spare.graphs[t], st.graphs[t]);
}

CudaQwenState::~CudaQwenState() {
  model.recycle_state(*this);
  drop_graph();
}
std::unique_ptr<SequenceState> CudaQwenState::clone() const { return model.clone_state(*this); }
bool CudaQwenState::mark() {
  model.mark_state(*this);
  return true;
}
void CudaQwenState::rewind() { model.rewind_state(*this); }

}  // namespace

std::unique_ptr<Model> make_cuda_qwen_model(const qwen::Config& c, const qwen::Weights& w, const CudaModelOptions& o) {
  return std::make_unique<CudaQwenModel>(c, &w, 0, o);
}

std::unique_ptr<Model> random_cuda_qwen_model(const qwen::Config& c, uint64_t seed, const CudaModelOptions& o) {
  return std::make_unique<CudaQwenModel>(c, nullptr, seed, o);
}

}  // namespace ds4::cuda
