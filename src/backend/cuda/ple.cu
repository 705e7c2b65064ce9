// PLE on the device. N-gram hashing: one thread per token hashes its window (ple_hash.h); a one-thread kernel
// then carries the last N-1 ids into the next chunk. Two kernels because the context must not change while
// hashing threads still read it. A decode or verification chunk (ple_embed) takes one block instead: a thread
// per head, the context carried after a barrier, and the table rows gathered, in one launch instead of three
// (9.5 us of a decode step's chain for the three, 6.2-6.7 for the one on the H200; the hashing thread of a token
// took its heads' 64-bit remainders one after another). The gate (ple_gate) of the composed block.
//
// The fused tail (ple_tail): everything after the key and value projections for up to kPleTailMaxT tokens in one
// kernel instead of seven (three norms, the gate, the conv, two adds: about 29 us of a decode step's critical
// path, nearly all of it launch hand-offs). One block per stream walks the tokens in order; every sum is the
// composed op's, term for term and in the same order (the norms' 1024-thread block sums, the gate's 256-thread
// sum, the conv's per-channel expression from conv1d.cuh), so the output has the composition's bits (the test
// checks it). A channel's conv input rows and history are touched only by its own thread, as in the conv's
// one-thread-per-channel form. Staged (the default where shared memory allows): the stream's conv history, norm
// weights and conv taps are copied into shared memory before the wait, while the projection before still runs
// (no kernel in between writes them: the history was last written by this kernel a step earlier), so after the
// wait the kernel reads only the token's projections from memory; read where they lie, each of those was one
// more memory round trip on the path (the tail ran 15-18 us in 4 blocks, staged 8.5-9.5).
#include "backend/cuda/common.cuh"
#include "backend/cuda/conv1d.cuh"
#include "backend/cuda/norm_math.cuh"
#include "backend/cuda/ple_embed.cuh"

namespace ds4::cuda {
namespace {

using detail::carry_context;
using History = detail::PleHistory;

__global__ void ple_rows_kernel(PleHash p, const int32_t* tokens, int64_t T, const int64_t* context, int64_t* rows) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t ctx = p.ngram - 1, heads = p.heads();
  const History hist{context, tokens, ctx};
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < T; t += int64_t(gridDim.x) * blockDim.x)
    ple_token_rows(p, hist, ctx + t, rows + t * heads);
}

__global__ void ple_context_kernel(const int32_t* tokens, int64_t T, int64_t ctx, int64_t* context) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  carry_context(tokens, T, ctx, context);
}

// ple_ngram_rows + gather_rows for a chunk of T <= kPleTailMaxT tokens in one block (see the top).
__global__ void __launch_bounds__(detail::kPleEmbedThreads)
    ple_embed_kernel(PleHash p, const int32_t* tokens, int T, int64_t* context, const bf16* table, int64_t cols,
                     int64_t* rows, float* emb) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  detail::ple_embed_block(p, tokens, T, context, table, cols, rows, emb, pdl);
}

// ple_gate: one block of kGateThreads per (token, stream) row. The gate from the row's float64 dot of key and
// query: sigmoid of the signed square root of dot / sqrt(H), which keeps the gate's sign while compressing its
// range (ple.cpp). The fused tail takes the same expression.
constexpr int kGateThreads = 256;
__device__ __forceinline__ float ple_gate_of(double dot, int64_t H) {
  float g = float(dot) * (1.0f / sqrtf(float(H)));
  const float sgn = g > 0.0f ? 1.0f : g < 0.0f ? -1.0f : 0.0f;
  g = sqrtf(fmaxf(fabsf(g), 1e-6f)) * sgn;
  return detail::sigmoid(g);
}

__global__ void ple_gate_kernel(const float* key, const float* query, const float* value, int64_t S, int64_t H,
                                float* gated) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  __shared__ double red[32];
  const int64_t ts = blockIdx.x, t = ts / S;
  const float* kr = key + ts * H;
  const float* qr = query + ts * H;
  double d = 0.0;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) d += double(kr[h]) * double(qr[h]);
  const float sg = ple_gate_of(detail::block_sum(d, red), H);
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) gated[ts * H + h] = sg * value[t * H + h];
}

constexpr int kTailThreads = 1024;  // norm_block_kernel's block: the norms' sums in its order
constexpr int kPer = 4;             // columns per thread
constexpr int64_t kTailMaxH = int64_t(kPer) * kTailThreads;

struct TailArgs {
  const float* key;    // [T][S][H], token rows ld_key apart: the key projection, not yet normalised
  const float* value;  // [T][H], token rows ld_value apart
  int64_t ld_key, ld_value;
  float* x;            // [T][S][H]: residual streams, += the block's output
  const bf16 *norm_key, *norm_query, *norm_conv;  // [S][H]
  const bf16* conv;    // [S * H][K]
  float* state;        // [(K - 1) * dil][S * H]
  float* normed;       // [T][S * H] scratch: the conv's input rows
  int T, S, H, K, dil;
  float eps;
};

// Dynamic shared memory of ple_tail_kernel: a token's normalised key and query rows (floats); staged, then the
// stream's padded conv input, its history rows and the chunk's T new rows after them [(K - 1) * dil + T][H]
// (floats), its three norm weights [3][H] and conv taps [H][K] (bf16). Every part starts on a 16-byte boundary when
// H % 8 == 0 (which staging needs).
struct TailSmem {
  int64_t rows_at, w_at, taps_at, bytes;  // byte offsets
};
__host__ __device__ inline TailSmem tail_smem(int64_t H, int64_t K, int64_t dil, int64_t T, bool staged) {
  TailSmem m{};
  m.rows_at = 2 * H * int64_t(sizeof(float));
  m.w_at = m.rows_at + (staged ? ((K - 1) * dil + T) * H * int64_t(sizeof(float)) : 0);
  m.taps_at = m.w_at + (staged ? 3 * H * int64_t(sizeof(bf16)) : 0);
  m.bytes = m.taps_at + (staged ? H * K * int64_t(sizeof(bf16)) : 0);
  return m;
}

// rms_norm_offset's norm_block_kernel for one row (norm_math.cuh): v / rms * (1 + w[h]).
__device__ __forceinline__ float tail_norm(float v, float inv, const bf16* w, int h) {
  return detail::offset_norm(v, inv, __bfloat162float(w[h]));
}

template <bool kStaged>
__global__ void __launch_bounds__(kTailThreads) ple_tail_kernel(TailArgs a) {
  extern __shared__ __align__(16) unsigned char tail_sm[];
  float *kn = reinterpret_cast<float*>(tail_sm), *qn = kn + a.H;  // the gate's sum reads across threads
  __shared__ double red[32];
  const int s = int(blockIdx.x), i = int(threadIdx.x), H = a.H;
  const int64_t C = int64_t(a.S) * H, hist = int64_t(a.K - 1) * a.dil;
  // The stream's operands: where they lie in memory, or (staged) their copies in shared memory.
  const bf16 *wk = a.norm_key + int64_t(s) * H, *wq = a.norm_query + int64_t(s) * H, *wc = a.norm_conv + int64_t(s) * H;
  const bf16* taps = a.conv + int64_t(s) * H * a.K;
  // The stream's padded conv input: history row r at rows + r * ld (r < hist), token t's normalised row at
  // normed + t * ldn. In memory: the history, and the scratch rows; staged: both in one shared-memory window, so
  // that the conv and the new history read this chunk's rows from there and not back from memory.
  float* rows = a.state + int64_t(s) * H;
  float* normed = a.normed + int64_t(s) * H;
  int64_t ld = C, ldn = C;
  if constexpr (kStaged) {
    const TailSmem m = tail_smem(H, a.K, a.dil, a.T, true);
    float* hs = reinterpret_cast<float*>(tail_sm + m.rows_at);
    bf16* ws = reinterpret_cast<bf16*>(tail_sm + m.w_at);
    bf16* ts = reinterpret_cast<bf16*>(tail_sm + m.taps_at);
    const int64_t hp = H / 4, wp = H / 8, tp = int64_t(H) * a.K / 8;  // 16-byte pieces of a row
    for (int64_t j = i; j < hist * hp; j += kTailThreads)
      detail::cp_async<16>(hs + (j / hp) * H + (j % hp) * 4, rows + (j / hp) * C + (j % hp) * 4);
    for (int64_t j = i; j < 3 * wp; j += kTailThreads) {
      const int64_t w = j / wp, q = (j % wp) * 8;
      detail::cp_async<16>(ws + w * H + q, (w == 0 ? wk : w == 1 ? wq : wc) + q);
    }
    for (int64_t j = i; j < tp; j += kTailThreads) detail::cp_async<16>(ts + j * 8, taps + j * 8);
    detail::commit_async();
    wk = ws, wq = ws + H, wc = ws + 2 * H, taps = ts, rows = hs, normed = hs + hist * H, ld = H, ldn = H;
  }
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  if constexpr (kStaged) {
    detail::wait_all_async();
    __syncthreads();
  }
  pdl.mark(0);  // trace builds: the staged operands in shared memory
  // Thread i's columns h = i + 1024 m (m < kPer): a token's key, x and value there are loaded together, once.
  for (int t = 0; t < a.T; t++) {
    const int64_t row = (int64_t(t) * a.S + s) * H;
    const float* key = a.key + int64_t(t) * a.ld_key + int64_t(s) * H;
    const float* value = a.value + int64_t(t) * a.ld_value;
    float kv[kPer], xv[kPer], vv[kPer];
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) kv[m] = key[h], xv[m] = a.x[row + h], vv[m] = value[h];
    }
    double ss = 0.0;
#pragma unroll
    for (int m = 0; m < kPer; m++)
      if (i + kTailThreads * m < H) ss += double(kv[m]) * double(kv[m]);
    float inv = detail::rms_inv(detail::block_sum(ss, red), H, a.eps);
    if (t == 0) pdl.mark(1);  // the first token's rows loaded, its key's sum of squares
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) kn[h] = tail_norm(kv[m], inv, wk, h);
    }
    ss = 0.0;
#pragma unroll
    for (int m = 0; m < kPer; m++)
      if (i + kTailThreads * m < H) ss += double(xv[m]) * double(xv[m]);
    inv = detail::rms_inv(detail::block_sum(ss, red), H, a.eps);
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) qn[h] = tail_norm(xv[m], inv, wq, h);
    }
    __syncthreads();
    if (t == 0) pdl.mark(2);  // and both norms
    // ple_gate_kernel's sum: its 256 threads' strides; the other warps add exact zeros to block_sum's butterfly,
    // where that kernel's block has zeros in the lanes past its 8 warps.
    double d = 0.0;
    if (i < kGateThreads)
      for (int h = i; h < H; h += kGateThreads) d += double(kn[h]) * double(qn[h]);
    const float sg = ple_gate_of(detail::block_sum(d, red), H);
    float gv[kPer];
    ss = 0.0;
#pragma unroll
    for (int m = 0; m < kPer; m++)
      if (i + kTailThreads * m < H) gv[m] = sg * vv[m], ss += double(gv[m]) * double(gv[m]);
    inv = detail::rms_inv(detail::block_sum(ss, red), H, a.eps);
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) normed[int64_t(t) * ldn + h] = tail_norm(gv[m], inv, wc, h);
    }
    // The conv reads this token's and earlier tokens' normed rows of the thread's own channels, and the history;
    // every column's taps before the first store below.
    float cv[kPer];
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) cv[m] = detail::conv_at(normed, ldn, t, h, ld, taps, a.K, a.dil, hist, rows, Act::Silu);
    }
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) a.x[row + h] = xv[m] + (gv[m] + cv[m]);
    }
  }
  pdl.mark(3);  // every token's output stored
  // The new history: row r <- padded row T + r (causal_conv1d's shift_history, from the rows read above; in place
  // when they are memory's, where ascending r never reads a row already replaced).
  float* out = a.state + int64_t(s) * H;
  for (int h = i; h < H; h += kTailThreads)
    for (int64_t r = 0; r < hist; r++) {
      const int64_t src = a.T + r;
      out[r * C + h] = src < hist ? rows[src * ld + h] : normed[(src - hist) * ldn + h];
    }
}

}  // namespace

void ple_gate(Context& ctx, const float* key, const float* query, const float* value, int64_t T, int64_t streams,
              int64_t H, float* gated) {
  if (T <= 0 || H <= 0 || streams <= 0) return;
  detail::require(T * streams < (int64_t(1) << 31), "ple_gate: too many rows");
  detail::launch(ctx, ple_gate_kernel, unsigned(T * streams), kGateThreads, 0, key, query, value, streams, H, gated);
  DS4_CUDA_CHECK_LAUNCH();
}

bool ple_tail_supported(int64_t T, int64_t streams, int64_t H) {
  return T >= 1 && T <= kPleTailMaxT && streams >= 1 && streams < 65536 && H > kTailThreads && H <= kTailMaxH;
}

// DS4_CUDA_PLE_STAGE=0: ple_tail reads its history, norm weights and taps where they lie (the same bits).
static bool tail_stage_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_PLE_STAGE");
  return on;
}

void ple_tail(Context& ctx, const float* key, int64_t ld_key, const float* value, int64_t ld_value, float* x,
              int64_t T, int64_t streams, int64_t H, const bf16* norm_key, const bf16* norm_query, const bf16* norm_conv,
              const bf16* conv, int64_t conv_k, int64_t dilation, float* conv_state, float* normed, float eps) {
  detail::require_supported(ple_tail_supported(T, streams, H),
                            "ple_tail: needs 1 <= T <= 8 and 1024 < H <= 4096 (the composition covers the rest)");
  detail::require(conv_k >= 1 && dilation >= 1 && ld_key >= streams * H && ld_value >= H,
                  "ple_tail: bad conv shape or row stride");
  detail::require(key && value && x && norm_key && norm_query && norm_conv && conv && normed &&
                      (conv_state || conv_k == 1),
                  "ple_tail: null operand");
  const TailArgs a{key, value, ld_key, ld_value, x, norm_key, norm_query, norm_conv, conv, conv_state, normed, int(T),
                   int(streams), int(H), int(conv_k), int(dilation), eps};
  // Staging copies whole 16-byte pieces of every row (H % 8 == 0, and the operands' starts 16-byte aligned); its
  // bytes and the kernel's static `red` must fit one block.
  using detail::aligned16;
  const int64_t staged_bytes = tail_smem(H, conv_k, dilation, T, true).bytes;
  const bool fits = staged_bytes + int64_t(32 * sizeof(double)) <= int64_t(ctx.smem_optin());
  const bool staged = tail_stage_enabled() && H % 8 == 0 && fits && aligned16(norm_key) && aligned16(norm_query) &&
                      aligned16(norm_conv) && aligned16(conv) && (conv_k == 1 || aligned16(conv_state));
  if (staged) {
    detail::allow_smem(ctx, ple_tail_kernel<true>, size_t(staged_bytes));
    detail::launch(ctx, ple_tail_kernel<true>, unsigned(streams), kTailThreads, size_t(staged_bytes), a);
  } else {
    const size_t bytes = size_t(tail_smem(H, conv_k, dilation, T, false).bytes);
    detail::allow_smem(ctx, ple_tail_kernel<false>, bytes);
    detail::launch(ctx, ple_tail_kernel<false>, unsigned(streams), kTailThreads, bytes, a);
  }
  DS4_CUDA_CHECK_LAUNCH();
}

bool ple_embed_supported(const PleHash& hash, int64_t T) {
  return T >= 1 && T <= kPleTailMaxT && hash.ngram >= 2 && hash.heads_per_ngram >= 1;
}

void ple_embed(Context& ctx, const PleHash& hash, const int32_t* tokens, int64_t T, int64_t* context,
               const bf16* table, int64_t cols, int64_t* rows, float* emb) {
  detail::require_supported(ple_embed_supported(hash, T),
                            "ple_embed: needs 1 <= T <= 8 and hash constants (ple_ngram_rows covers the rest)");
  detail::require(cols >= 1 && T * hash.heads() * cols < (int64_t(1) << 31) && tokens && context && table && rows && emb,
                  "ple_embed: bad operands");
  detail::launch(ctx, ple_embed_kernel, 1, detail::kPleEmbedThreads, 0, hash, tokens, int(T), context, table, cols,
                 rows, emb);
  DS4_CUDA_CHECK_LAUNCH();
}

void ple_ngram_rows(Context& ctx, const PleHash& hash, const int32_t* tokens, int64_t T, int64_t* context,
                    int64_t* rows) {
  detail::require(hash.ngram >= 2 && hash.heads_per_ngram >= 1, "ple_ngram_rows: hash constants not set");
  if (T <= 0) return;
  detail::launch(ctx, ple_rows_kernel, detail::grid_for(ctx, T, 128), 128, 0, hash, tokens, T, context, rows);
  DS4_CUDA_CHECK_LAUNCH();
  detail::launch(ctx, ple_context_kernel, 1, 1, 0, tokens, T, hash.ngram - 1, context);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
