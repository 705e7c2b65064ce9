// The CUDA backend's ops: one function per semantic op, each with the contract of its CPU reference
// (src/backend/cpu/*.h and the qwen_hybrid blocks) so that model code can be written once against either.
//
// Conventions, for every op below:
// - Every pointer is device memory (the PLE table may also be mapped host memory, see gather_rows), row-major,
//   densely packed unless a stride is given. Activations, recurrent state and outputs are float32; weights are
//   bfloat16; every sum accumulates in float32 (the norms' sums of squares in float64, as the CPU does).
// - Ops enqueue on ctx.stream() and return without waiting; temporaries come from ctx.scratch(). No op
//   allocates device memory or reads device data back to the host, so op sequences can be graph-captured.
// - Shapes are validated on the host; a shape an op cannot handle throws ds4::Error (InvalidArgument or
//   Unsupported) before anything is enqueued. CUDA failures throw ds4::Error(Internal) (check.h).
// - Outputs never alias inputs unless the op says so.
//
// How the qwen4_exp blocks compose from these ops (the GPU tests compose HC, PLE, QSA and MoE exactly this way):
// - hc_mix:  rms_norm_offset(x, norm, group H) -> linear(down) -> activate(Silu, /hc) -> linear(up) -> hc_collapse;
//            inject: linear(normed, inject) -> activate(Sigmoid, /hc, x2); after the block: hc_inject. Up to
//            kHcFusedMaxT tokens (decode, verification) the model runs all of it as hc_mix_fused (two kernels);
//            the GPU tests check both against the CPU.
// - GDN:     linear(qkv | z | b | a) -> causal_conv1d(Silu) -> gdn_prepare -> gated_delta_chunked (T > 1) or
//            gated_delta_recurrent (T = 1) -> rms_norm_gated(z) -> linear(out).
// - QSA:     linear(idx_qk) -> copy_rows(q part) -> rms_norm_offset(q_norm) -> apply_rope; copy_rows(k part) into the
//            index-key cache -> qsa_pool_blocks(new complete blocks) -> qsa_select -> attention(KeySelection::lists).
// - Attention: linear(q|gate, k, v) -> copy_rows (split q/gate) -> rms_norm_offset(q_norm, k_norm) -> apply_rope ->
//            store_rows_bf16 into the KV cache -> attention(gate) -> linear(o).
// - PLE:     ple_ngram_rows -> gather_rows -> linear(key) -> rms_norm_offset; linear(value); rms_norm_offset(query)
//            -> ple_gate -> rms_norm_offset(norm_conv) -> causal_conv1d(dilation N, Silu) -> add.
// - MoE:     linear(router | shared gate logit | shared gate | shared up) -> moe_route -> moe_experts(SharedExpert
//            over the projection's columns); or without the shared expert in moe_experts: swiglu -> linear(down)
//            -> add_gated_rows.
// - After each block: hc_inject(x, out, inject); the model passes RowsOut{streams, inject} to the block's last
//   projection (linear, moe_experts) instead, which does the same addition.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/norms.h"
#include "backend/cpu/rope.h"
#include "backend/cuda/bf16.h"
#include "backend/cuda/context.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/ple_hash.h"

namespace ds4::cuda {

using cpu::Act;         // None, Silu, Sigmoid: the same activations as the CPU backend
using cpu::AttnShape;   // heads, kv_heads, head_dim
using cpu::DeltaShape;  // T, H, dk, dv

// ---------------------------------------------------------------------------------------------------------
// Sequence positions read on the device
// ---------------------------------------------------------------------------------------------------------

// A chunk's first position. Decode steps are replayed from CUDA graphs, whose kernel arguments are fixed at
// capture, so the ops that depend on the position can read it from device memory: `dev` points at it and
// `bound` is an upper bound of it known on the host, which sizes grids and scratch. Without `dev`, `bound` is
// the position itself.
struct SeqPos {
  const int64_t* dev = nullptr;
  int64_t bound = 0;
  static SeqPos host(int64_t p) { return {nullptr, p}; }
};

// pos3[t] = (p + t, p + t, p + t) for t < T, p = pos0 (text positions for apply_rope's Positions::pos3).
void fill_positions(Context& ctx, SeqPos pos0, int64_t T, int32_t* pos3);
// *pos += T on the device (the end of a forward step, inside the captured graph).
void advance_position(Context& ctx, int64_t* pos, int64_t T);

// ---------------------------------------------------------------------------------------------------------
// Dense projections
// ---------------------------------------------------------------------------------------------------------

// y[T,N] = x[T,K] · W[N,K]^T (cpu::linear). T <= 8 runs a bandwidth-bound GEMV that reads W once with
// 128-bit loads and keeps x in float32, summing each token's rows in an order that does not depend on T (a
// verified token gets its decode step's bits); larger T rounds x to bfloat16 and runs cuBLASLt (float32
// accumulate, float32 output).
void linear(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y);
// y[i] = bf16(x[i]), round to nearest even: the prefill GEMMs' operands (linear above, the experts' grouped GEMM).
void round_to_bf16(Context& ctx, const float* x, int64_t n, bf16* y);

// Where a block's output rows go: y [T][N] (streams null), or added into the hyper-connection streams as
// hc_inject does, streams[t][s][n] += y[t][n] * inject[t][s] for s < S (streams [T][S][N], inject [T][S]). The
// one-token GEMVs apply the second form in their epilogue, so the row and the hc_inject launch disappear; other
// shapes compute y in scratch and call hc_inject. Bit-identical either way.
struct RowsOut {
  float* y = nullptr;
  float* streams = nullptr;
  const float* inject = nullptr;
  int64_t S = 0;
};
void linear(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, const RowsOut& out);

// ---------------------------------------------------------------------------------------------------------
// Norms (cpu/norms.h)
// ---------------------------------------------------------------------------------------------------------

// y = x / rms(x over each group of `group` elements) * (1 + w); w has `dim` entries or is null (then 1).
// dim must be a multiple of group. y may equal x.
void rms_norm_offset(Context& ctx, const float* x, const bf16* w, float* y, int64_t rows, int64_t dim, int64_t group,
                     float eps);
// y = w * (x / rms(x)) * act(z) per row of `dim`. y may equal x.
void rms_norm_gated(Context& ctx, const float* x, const float* z, const bf16* w, float* y, int64_t rows, int64_t dim,
                    float eps, Act act);
// In place: x = x / sqrt(sum(x^2) + eps) * scale per row. scale = 1 is cpu::l2_norm; the GDN query passes
// 1/sqrt(dk) (the CPU multiplies after normalising: the same two roundings).
void l2_norm(Context& ctx, float* x, int64_t rows, int64_t dim, float eps, float scale = 1.0f);

// ---------------------------------------------------------------------------------------------------------
// Elementwise and data movement
// ---------------------------------------------------------------------------------------------------------

// y = out_scale * act(x / in_div) over n elements (HC mixer: silu(v / hc); inject: 2 sigmoid(v / hc)), divided
// rather than multiplied by a reciprocal as the CPU does. y may equal x.
void activate(Context& ctx, const float* x, float* y, int64_t n, Act act, float in_div = 1.0f, float out_scale = 1.0f);
// y = silu(gate) * up over n elements (SwiGLU). y may equal gate or up.
void swiglu(Context& ctx, const float* gate, const float* up, float* y, int64_t n);
// y = a + b over n elements. y may equal a or b.
void add(Context& ctx, const float* a, const float* b, float* y, int64_t n);
// y[t][h] = a[t][h] + sigmoid(logit[t]) * b[t][h]: the MoE output with its gated shared expert. y may equal a.
void add_gated_rows(Context& ctx, const float* a, const float* b, const float* logit, float* y, int64_t T, int64_t H);
// x *= sigmoid(gate) over n elements (the attention output gate when it is not fused into attention).
void mul_sigmoid(Context& ctx, float* x, const float* gate, int64_t n);
// dst[0..n) = src[0..n) by a kernel: inside a captured step a copy node would end the programmatic chain (the
// kernel after it could not be resident and load its weights before the copy finished).
void copy_floats(Context& ctx, float* dst, const float* src, int64_t n);
// dst[r][0..cols) = src[r][0..cols) with row strides in elements (splits q/gate, copies key rows into caches).
void copy_rows(Context& ctx, float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t rows,
               int64_t cols);
// The same into rows row0 .. row0 + rows - 1 of dst (appends a chunk's rows to a float32 cache).
void copy_rows_at(Context& ctx, float* dst, int64_t dst_stride, SeqPos row0, const float* src, int64_t src_stride,
                  int64_t rows, int64_t cols);

// x[t][s][:] = table[tokens[t]][:] for every stream s < streams (the hyper-connection stream starts as copies
// of the token embedding). table [vocab][H]; x [T][streams][H]. Token ids must be in range.
void embed_streams(Context& ctx, const bf16* table, int64_t H, const int32_t* tokens, int64_t T, int64_t streams,
                   float* x);
// A forward step's inputs in one launch: fill_positions (pos3), embed_streams (x [T][streams][H] from table) and,
// with `ple` set (1 <= T <= kPleTailMaxT, ple_embed_supported), that PLE layer's ple_embed (rows, emb, context
// carried): the same values as those ops. tokens [T] may be host-mapped pinned memory (a replayed decode step
// reads its token where the host wrote it, no copy before the step); tokens_copy, when set, receives them on the
// device for the step's later readers. The position p = *pos0.dev (or pos0.bound) is also written to pos_copy
// when set (the step's own copy, for its later readers) and p + T to advance when set (advance_position's work,
// even where advance is pos0.dev: p is read before).
struct StepPle {
  const PleHash* hash;
  int64_t* context;
  const bf16* table;
  int64_t cols;
  int64_t* rows;
  float* emb;
};
struct StepPos {
  SeqPos pos0;
  int32_t* pos3;
  int64_t* pos_copy;
  int64_t* advance;
};
void step_inputs(Context& ctx, const int32_t* tokens, int64_t T, int32_t* tokens_copy, const StepPos& pos,
                 const bf16* table, int64_t H, int64_t streams, float* x, const StepPle* ple);
// out[i][:] = table[rows[i]][:] for i < n; table [?][cols]. The table may live in mapped, pinned host memory
// (cudaHostAlloc with cudaHostAllocMapped): the PLE n-gram table is far larger than the rows one chunk reads.
void gather_rows(Context& ctx, const bf16* table, int64_t cols, const int64_t* rows, int64_t n, float* out);

// ---------------------------------------------------------------------------------------------------------
// RoPE (cpu/rope.h): rotate-half pairing over the first rotary_dim dims, interleaved M-RoPE frequencies
// ---------------------------------------------------------------------------------------------------------

struct RopeParams {
  const float* inv_freq = nullptr;  // rotary_dim / 2 entries on the device, computed by cpu::RopeTable
  int32_t rotary_dim = 0;
  int32_t section[3] = {0, 0, 0};
};

// The device copy of a RopeTable's frequencies (one per model).
class DeviceRope {
 public:
  explicit DeviceRope(const cpu::RopeTable& table);
  RopeParams params() const { return p_; }

 private:
  DeviceBuffer<float> inv_freq_;
  RopeParams p_;
};

// Positions of a chunk's tokens: token t is at (pos3[3t], pos3[3t+1], pos3[3t+2]) = (time, height, width)
// when pos3 is set (device [T][3]), else at pos0 + t on all three axes (text).
struct Positions {
  const int32_t* pos3 = nullptr;
  int64_t pos0 = 0;
};

// Rotates the first rotary_dim dims of x[t][h] = x + t * token_stride + h * head_stride for t < T, h < heads,
// in place. cos/sin are computed as RopeTable::cos_sin does (float angle, double cos/sin, rounded to float).
void apply_rope(Context& ctx, float* x, int64_t T, int64_t heads, int64_t token_stride, int64_t head_stride,
                const RopeParams& rope, Positions pos);

// The attention layer's step from its projection rows to the attention's inputs, in one kernel for any T
// (models/qwen_hybrid/sparse_attention.cpp, the same arithmetic as the ops it replaces: rms_norm_offset's
// warp form, apply_rope, the bfloat16 rounding of store_rows_bf16). pr [T][ld] holds per token, from column 0:
// [query, gate] of each of NH heads (HD each), KVH keys, KVH values, IH indexer queries and one indexer key (ID
// each; IH = ID = 0 when there is no indexer, as in the MTP head). Writes q [T][NH][HDp] (normed, rotated, zero
// padded), gate [T][NH * HD], rows sp + t of the key and value caches [.][KVH * HDp] (normed and rotated keys,
// zero padded, bfloat16), idx_q [T][IH][ID] (normed, rotated) and rows sp + t of idx_keys [.][ID] (raw).
struct AttnPrepShape {
  int64_t NH, KVH, HD, HDp, IH, ID;
};
struct AttnPrepNorms {
  const bf16 *q, *k, *idx_q;  // [HD], [HD], [ID]
  float eps;
};
struct AttnPrepOut {
  float *q, *gate;
  bf16 *keys, *values;
  float *idx_q, *idx_keys;
};
void attn_prep(Context& ctx, const float* pr, int64_t ld, int64_t T, const AttnPrepShape& shape,
               const AttnPrepNorms& norms, const RopeParams& rope, Positions pos, SeqPos sp, const AttnPrepOut& out);
// attn_prep of one token (the decode step) with the indexer's steps that need no scores in the same kernel:
// qsa_pool_chunk for T = 1 at sp (the pooling's eps being norms.eps) and, when no position up to sp.bound has more
// complete blocks than block_topk, qsa_select's list (every position: sel [stride], count [1]). The same results
// as those ops, bit for bit (qsa.cuh: the same device code). Listed: the list is written. Pooled: the caller runs
// qsa_select (from idx_q and block_keys, as after qsa_pool_chunk).
struct QsaDecode {
  float* block_keys;   // [blocks][ID] pooled keys
  const bf16* k_norm;  // idx_k_norm [ID] or null
  int64_t R, block_topk, stride;
  int32_t *sel, *count;
};
enum class QsaFused { Pooled, Listed };
QsaFused attn_prep_qsa(Context& ctx, const float* pr, int64_t ld, const AttnPrepShape& shape, const AttnPrepNorms& norms,
                       const RopeParams& rope, Positions pos, SeqPos sp, const AttnPrepOut& out, const QsaDecode& qsa);

// ---------------------------------------------------------------------------------------------------------
// Greedy pick (SAMPLING.md steps 1 and 3, engine/logits_check.h and the sampler's argmax)
// ---------------------------------------------------------------------------------------------------------

// The greedy token of one logits row without copying the row to the host. out[0..1] (device): {token, kGreedyOk}
// with token the first index of the maximum (ties to the lowest id); {i, kGreedyNan} or {i, kGreedyPosInf} when
// logit i is the row's first NaN or +inf (an invalid row, as engine::validate_logits reports it); {0,
// kGreedyAllNegInf} when every logit is -inf. V >= 1.
constexpr int32_t kGreedyOk = 0, kGreedyNan = 1, kGreedyPosInf = 2, kGreedyAllNegInf = 3;
void greedy_pick(Context& ctx, const float* logits, int64_t V, int32_t* out);
// linear of one token (its bits) and greedy_pick of the row it writes, y [N] and out[0..1]: for the lm_head of a
// decode step, whose GEMV then picks as its last block finishes instead of a second launch (where the shape takes
// the tall one-token kernel; otherwise the two calls). 1 <= N < 2^31.
void linear_pick(Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N, float* y, int32_t* out);
// Whether linear_pick of this operand and shape picks inside the GEMV (otherwise it is linear then greedy_pick, and
// a caller that may not want the pick runs linear alone).
bool linear_pick_fused(const Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N);

// ---------------------------------------------------------------------------------------------------------
// Causal depthwise conv1d (cpu/conv1d.h)
// ---------------------------------------------------------------------------------------------------------

// x [T][C]; w [C][K] (torch Conv1d weight [C, 1, K]); state [(K-1)*dilation][C] carried history, updated in
// place; y [T][C] = act(conv).
void causal_conv1d(Context& ctx, const float* x, int64_t T, int64_t C, const bf16* w, int64_t K, int64_t dilation,
                   float* state, float* y, Act act);

// ---------------------------------------------------------------------------------------------------------
// Gated delta rule (cpu/gated_delta.h): q,k [T,H,dk] (L2-normalised, q scaled); v [T,H,dv]; g, beta [T,H];
// state [H,dk,dv] float32, updated in place; out [T,H,dv]. dk <= 256.
// ---------------------------------------------------------------------------------------------------------

// The recurrent form, tokens in order; T = 1 is the fused decode step: each state element is read once,
// decayed, corrected and read out in registers, and written once.
void gated_delta_recurrent(Context& ctx, const float* q, const float* k, const float* v, const float* g,
                           const float* beta, DeltaShape s, float* state, float* out);
// The chunked (UT-transform) form for prefill; the same function up to rounding.
void gated_delta_chunked(Context& ctx, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, DeltaShape s, float* state, float* out);

// The GDN layer's step between the conv and the delta rule (models/qwen_hybrid/gated_deltanet.cpp): splits
// conv_out [T][2*KH*dk + VH*dv] into q, k (key head h / (VH/KH) repeated for value head h), v; L2-normalises
// q and k (eps 1e-6) and scales q by 1/sqrt(dk); beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias).
// a, b [T][VH]; A_log, dt_bias [VH] float32. Outputs q,k [T][VH][dk], v [T][VH][dv], g, beta [T][VH].
struct GdnHeads {
  int64_t key_heads, value_heads, dk, dv;
};
void gdn_prepare(Context& ctx, const float* conv_out, const float* a, const float* b, const float* A_log,
                 const float* dt_bias, int64_t T, GdnHeads heads, float* q, float* k, float* v, float* g, float* beta);

// The recurrent step of short chunks (decode and verification, 1 <= T <= kGdnFusedMaxT) from the conv output
// to the gated norm in one kernel: gdn_prepare, gated_delta_recurrent, rms_norm_gated(z). The core output of
// each column is computed exactly as gated_delta_recurrent computes it; the gated norm's sum of squares is
// reordered (float64). z, b and a are read in place from the projection rows (row stride ld); out [T][VH * dv].
// Supported (gdn_recurrent_fused_supported): dk <= 128, dv <= 256; other shapes compose the three ops.
constexpr int64_t kGdnFusedMaxT = 8;
struct GdnGates {
  const float* z;  // [T][ld]: z of value head h at h * dv
  const float* b;  // [T][ld]: b of head h at h
  const float* a;  // [T][ld]
  int64_t ld;
  const float* A_log;    // [VH]
  const float* dt_bias;  // [VH]
  const bf16* norm;      // [dv]
  float eps;
  Act act;
};
// The decode step's conv folded in (gdn_conv_fused_supported: T == 1, K <= 4): what causal_conv1d(x, 1, conv_dim,
// w, K, 1, state, conv_out, act) would compute, the same bits, without its own kernel; conv_out is then null.
struct GdnConv {
  const float* x;  // [conv_dim = 2*KH*dk + VH*dv]: the conv's input (the projection row's first columns)
  const bf16* w;   // [conv_dim][K]
  int64_t K;
  float* state;    // [K - 1][conv_dim] carried history, updated in place
  Act act;
};
bool gdn_recurrent_fused_supported(int64_t T, GdnHeads heads);
bool gdn_conv_fused_supported(int64_t T, GdnHeads heads, int64_t K);
void gdn_recurrent_fused(Context& ctx, const float* conv_out, const GdnGates& gates, int64_t T, GdnHeads heads,
                         float* state, float* out, const GdnConv* conv = nullptr);

// ---------------------------------------------------------------------------------------------------------
// Attention (cpu/attention.h): softmax attention of each query token over a set of cached positions, GQA
// (query head h reads KV head h / (heads / kv_heads)), optionally times sigmoid(gate).
// ---------------------------------------------------------------------------------------------------------

// The most positions a QSA selection lists for one query: block_topk blocks of R, then the incomplete block.
inline int64_t qsa_list_stride(int64_t block_topk, int64_t R) { return (block_topk + 1) * R; }

// Which cached positions each query t of a chunk reads.
struct KeySelection {
  // Lists: query t reads positions[t * stride + i] for i < count[t], ascending, each < the cache length.
  const int32_t* positions = nullptr;
  const int32_t* count = nullptr;
  int64_t stride = 0;
  // Causal (positions == nullptr): query t reads positions 0 .. causal_pos0 + t.
  int64_t causal_pos0 = 0;
  // An upper bound of any query's key count, known on the host; it sizes the split-K grid.
  int64_t max_keys = 0;
  // Causal with the first position read on the device (then causal_pos0 is only its bound).
  const int64_t* causal_pos0_dev = nullptr;

  static KeySelection causal(int64_t pos0, int64_t T) { return {nullptr, nullptr, 0, pos0, pos0 + T}; }
  static KeySelection causal(SeqPos pos0, int64_t T) {
    return {nullptr, nullptr, 0, pos0.bound, pos0.bound + T, pos0.dev};
  }
  static KeySelection lists(const int32_t* positions, const int32_t* count, int64_t stride) {
    return {positions, count, stride, 0, stride};
  }

  // QSA blocks (block_ratio > 0): query t at p = pos0 + t reads the positions qsa_select would list for it, the
  // decode kernel choosing its top block_topk complete blocks itself (no list goes through memory) from
  // block_scores[t * score_stride + b] (qsa_score; null when no query can have more than block_topk blocks).
  // Decode kernel only (bfloat16 cache, at most 8 queries), score_stride <= kQsaInKernelMaxBlocks. The same keys
  // in the same order as the lists, so the same bits. max_keys is qsa_list_stride(block_topk, R).
  const float* block_scores = nullptr;
  int64_t score_stride = 0, block_ratio = 0, block_topk = 0;
  static KeySelection blocks(const float* scores, int64_t score_stride, SeqPos pos0, int64_t R, int64_t block_topk) {
    KeySelection s{nullptr, nullptr, 0, pos0.bound, qsa_list_stride(block_topk, R), pos0.dev};
    s.block_scores = scores, s.score_stride = score_stride, s.block_ratio = R, s.block_topk = block_topk;
    return s;
  }
};
// The most complete blocks (score_stride) of an in-kernel block selection: its scratch (about 21 KB at 1024) shares
// the decode kernel's ring.
constexpr int64_t kQsaInKernelMaxBlocks = 1024;

// q [T][heads][head_dim]; keys, values [cache positions][kv_heads * head_dim] (float32 or bfloat16 caches);
// gate null or [T][heads][head_dim]; out [T][heads][head_dim] = softmax(scale * q·k) v * sigmoid(gate).
// head_dim must be 64, 128 or 256. Few queries (decode) split each query's keys across blocks and merge the
// partial softmaxes (flash-decoding); many queries (prefill) give each (query, head group) one block.
void attention(Context& ctx, const float* q, const float* keys, const float* values, AttnShape s, int64_t T,
               const KeySelection& sel, float scale, const float* gate, float* out);
void attention(Context& ctx, const float* q, const bf16* keys, const bf16* values, AttnShape s, int64_t T,
               const KeySelection& sel, float scale, const float* gate, float* out);

// cache[row0 + t][:] = src[t][:] (rounded to bfloat16) for t < T, width elements per row: appends a chunk's
// keys or values to a bfloat16 cache.
void store_rows_bf16(Context& ctx, const float* src, int64_t T, int64_t width, bf16* cache, int64_t row0);
void store_rows_bf16(Context& ctx, const float* src, int64_t T, int64_t width, bf16* cache, SeqPos row0);

// ---------------------------------------------------------------------------------------------------------
// Top-k (cpu/topk.h)
// ---------------------------------------------------------------------------------------------------------

// For each row r < rows of n values (v + r * stride), the indices of the k largest, the same set that
// cpu::topk_indices (and torch.topk on the CPU) selects, ties included: when equal values straddle the k-th
// place, the row is resolved by replaying libstdc++'s partial_sort / nth_element order (topk_select.h).
// idx [rows][k], ordered by value descending, equal values by ascending index. NaN ranks above everything,
// as the CPU comparator has it. n <= 16384.
void topk(Context& ctx, const float* v, int64_t rows, int64_t n, int64_t stride, int64_t k, int32_t* idx);

// ---------------------------------------------------------------------------------------------------------
// QSA indexer (models/qwen_hybrid/sparse_attention.cpp: qsa_select)
// ---------------------------------------------------------------------------------------------------------

// Pools blocks b0 .. b1-1 of the raw indexer keys index_keys [positions][D]: the mean of block b's R rows,
// zero-centred RMSNorm with k_norm (D entries), RoPE at position b * R (text positions). block_keys [blocks][D].
void qsa_pool_blocks(Context& ctx, const float* index_keys, int64_t b0, int64_t b1, int64_t R, int64_t D,
                     const bf16* k_norm, const RopeParams& rope, float eps, float* block_keys);

// The positions each query of a chunk may attend to. q [T][IH][D] indexer queries after q_layernorm and RoPE;
// block_keys [(pos0 + T) / R][D]. Query t at p = pos0 + t with nb = (p + 1) / R complete blocks reads
// every position 0..p when nb <= block_topk, else the block_topk blocks with the highest
// sum_h relu(q_h · block_key) / sqrt(D) (ascending) expanded to their R positions, then the tail nb*R .. p.
// sel [T][stride] with stride >= qsa_list_stride(block_topk, R); count [T]. Feed both to
// KeySelection::lists.
void qsa_select(Context& ctx, const float* q, const float* block_keys, int64_t T, int64_t pos0, int64_t IH, int64_t D,
                int64_t R, int64_t block_topk, int32_t* sel, int32_t* count, int64_t stride);
void qsa_select(Context& ctx, const float* q, const float* block_keys, int64_t T, SeqPos pos0, int64_t IH, int64_t D,
                int64_t R, int64_t block_topk, int32_t* sel, int32_t* count, int64_t stride);
// The scores alone, for attention's in-kernel selection (KeySelection::blocks): scores [T][qsa_score_stride(pos0.bound,
// T, R)], query t's complete blocks scored as qsa_select scores them when some query up to the bound can have more
// than block_topk (nothing is launched otherwise, and the caller passes null scores on).
inline int64_t qsa_score_stride(int64_t bound, int64_t T, int64_t R) { return (bound + T) / R; }
void qsa_score(Context& ctx, const float* q, const float* block_keys, int64_t T, SeqPos pos0, int64_t IH, int64_t D,
               int64_t R, int64_t block_topk, float* scores);
// Pools the blocks a chunk of T tokens at pos0 completes: [pos0 / R, (pos0 + T) / R).
void qsa_pool_chunk(Context& ctx, const float* index_keys, SeqPos pos0, int64_t T, int64_t R, int64_t D,
                    const bf16* k_norm, const RopeParams& rope, float eps, float* block_keys);

// ---------------------------------------------------------------------------------------------------------
// Hyper-connections (models/qwen_hybrid/hyper_connection.cpp)
// ---------------------------------------------------------------------------------------------------------

// mixed[t][h] = sum_s sigmoid(mix[t][s][h]) * normed[t][s][h] / streams. mix, normed [T][streams][H].
void hc_collapse(Context& ctx, const float* mix, const float* normed, int64_t T, int64_t streams, int64_t H,
                 float* mixed);
// x[t][s][h] += out[t][h] * inject[t][s]. x [T][streams][H], out [T][H], inject [T][streams].
void hc_inject(Context& ctx, float* x, const float* out, const float* inject, int64_t T, int64_t streams, int64_t H);

// The whole hc_mix for decode and short verification chunks (1 <= T <= kHcFusedMaxT) in two kernels, each
// reading its weight matrix once whatever T is; the same results as the composition above to float32 rounding.
// x [T][streams * H]; norm [streams * H] (null: 1 + 0); down_inject [down_rows][streams * H] holds the lowrank
// down rows, then (down_rows = lowrank + streams) the streams inject rows; up [streams * H][lowrank].
// mixed [T][H]; inject [T][streams] = 2 sigmoid(inject_row . normed / streams), or null when not wanted (it
// needs the inject rows). x, down_inject and up must be 16-byte aligned (device allocations and scratch are).
// Supported: 1 <= T <= 8, H and lowrank multiples of 8, lowrank <= 1024, streams <= 64, down_rows = lowrank or
// lowrank + streams; other shapes throw Unsupported (hc_mix_fused_supported says which): compose the ops above.
constexpr int64_t kHcFusedMaxT = 8;
bool hc_mix_fused_supported(int64_t T, int64_t streams, int64_t H, int64_t lowrank, int64_t down_rows);
void hc_mix_fused(Context& ctx, const float* x, int64_t T, int64_t streams, int64_t H, int64_t lowrank,
                  const bf16* norm, const bf16* down_inject, int64_t down_rows, const bf16* up, float eps,
                  float* mixed, float* inject);

// ---------------------------------------------------------------------------------------------------------
// PLE (models/qwen_hybrid/ple.cpp)
// ---------------------------------------------------------------------------------------------------------

// rows [T][(N-1) * heads_per_ngram] n-gram table rows of the chunk's tokens (PleHash: ple_hash.h, built from
// PleWeights' multipliers, head_sizes and head_offsets); context [N-1] the carried last token ids (eos at the
// start of a sequence), updated in place. N-grams never cross an eos. Then gather_rows reads the embeddings.
void ple_ngram_rows(Context& ctx, const PleHash& hash, const int32_t* tokens, int64_t T, int64_t* context,
                    int64_t* rows);
// ple_ngram_rows then gather_rows (table [rows][cols] bf16 -> emb [T][heads * cols]) in one launch, for a decode or
// verification chunk (ple_embed_supported: 1 <= T <= kPleTailMaxT); the same rows, context and embeddings.
bool ple_embed_supported(const PleHash& hash, int64_t T);
void ple_embed(Context& ctx, const PleHash& hash, const int32_t* tokens, int64_t T, int64_t* context,
               const bf16* table, int64_t cols, int64_t* rows, float* emb);
// gated[t][s][h] = sigmoid(ssqrt(key[t][s]·query[t][s] / sqrt(H))) * value[t][h], ssqrt(g) = sign(g)
// sqrt(max(|g|, 1e-6)). key, query [T][streams][H]; value [T][H].
void ple_gate(Context& ctx, const float* key, const float* query, const float* value, int64_t T, int64_t streams,
              int64_t H, float* gated);
// The PLE block after its two projections, fused for decode and verification (T <= kPleTailMaxT, 1024 < H <=
// 4096; ple_tail_supported): x += gated + conv, where key is normalised with norm_key, the query is x normalised
// with norm_query, gated = ple_gate(key, query, value), and conv = causal_conv1d(rms_norm_offset(gated,
// norm_conv), conv [S*H][conv_k], dilation, Silu) with conv_state [(conv_k - 1) * dilation][S*H] carried. The bits
// of that composition (rms_norm_offset, ple_gate, causal_conv1d, add, add). normed: [T][S*H] scratch. Token t's
// key rows start at key + t * ld_key, its value row at value + t * ld_value (apart: S*H and H; the two
// projections as one matrix's output: both that matrix's row count).
constexpr int64_t kPleTailMaxT = 8;
bool ple_tail_supported(int64_t T, int64_t streams, int64_t H);
void ple_tail(Context& ctx, const float* key, int64_t ld_key, const float* value, int64_t ld_value, float* x, int64_t T,
              int64_t streams, int64_t H, const bf16* norm_key, const bf16* norm_query, const bf16* norm_conv,
              const bf16* conv, int64_t conv_k, int64_t dilation, float* conv_state, float* normed, float eps);

// ---------------------------------------------------------------------------------------------------------
// MoE (models/qwen_hybrid/moe.cpp)
// ---------------------------------------------------------------------------------------------------------

// Per token: softmax of the router logits [T][E], the top k (cpu::topk_indices' set), weights renormalised to
// sum 1 when renormalize. idx [T][k] (by probability descending), weight [T][k].
void moe_route(Context& ctx, const float* logits, int64_t T, int64_t E, int64_t k, bool renormalize, int32_t* idx,
               float* weight);

// Routed experts stacked contiguously: gate, up [E][inter][hidden]; down [E][hidden][inter].
struct ExpertWeights {
  const bf16* gate = nullptr;
  const bf16* up = nullptr;
  const bf16* down = nullptr;
  int64_t num_experts = 0, hidden = 0, inter = 0;
};
// The block's shared expert, whose gate and up projections (and gate logit) come out of the block's fused
// router projection: gate, up [T][inter] and logit [T], each row strided by ld (>= inter) elements; down
// [hidden][inter].
struct SharedExpert {
  const bf16* down = nullptr;
  const float* gate = nullptr;
  const float* up = nullptr;
  int64_t ld = 0;
  const float* logit = nullptr;
  int64_t inter = 0;
};
// out[t] = sum_j weight[t][j] * down_e(silu(gate_e x_t) * up_e x_t), e = idx[t][j]: only the selected
// experts' weights are read. T <= 8: per-(token, expert) GEMVs at HBM bandwidth, each token's blocks doing what
// one token's do (the same bits whatever T is); larger T: tokens grouped by expert on the device and tensor-core
// grouped GEMMs (inputs rounded to bfloat16, float32 accumulate). With `shared`, out[t] += sigmoid(logit[t]) *
// shared.down(silu(gate[t]) * up[t]) (the MoE block's output, qwen::moe_forward). T <= 8 (hidden, both inter
// widths multiples of 8, 16-byte aligned weights): the shared expert is one more segment of the routed down
// projection's K, its activations
// sigmoid(logit) * silu(gate) * up (the gate applied before the down projection: float rounding apart, the
// same sum). Otherwise swiglu, linear and add_gated_rows' formulas after the routed experts.
void moe_experts(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                 const float* weight, int64_t k, float* out, const SharedExpert* shared = nullptr);
void moe_experts(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                 const float* weight, int64_t k, const RowsOut& out, const SharedExpert* shared = nullptr);

}  // namespace ds4::cuda
