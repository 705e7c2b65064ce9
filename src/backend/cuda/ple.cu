// PLE on the device. N-gram hashing: one thread per token hashes its window (ple_hash.h); a one-thread kernel
// then carries the last N-1 ids into the next chunk. Two kernels because the context must not change while
// hashing threads still read it. The gate (ple_gate) of the composed block.
//
// The fused tail (ple_tail): everything after the key and value projections for up to kPleTailMaxT tokens in one
// kernel instead of seven (three norms, the gate, the conv, two adds: about 29 us of a decode step's critical
// path, nearly all of it launch hand-offs). One block per stream walks the tokens in order; every sum is the
// composed op's, term for term and in the same order (the norms' 1024-thread block sums, the gate's 256-thread
// sum, the conv's per-channel expression from conv1d.cuh), so the output has the composition's bits (the test
// checks it). A channel's conv input rows and history are touched only by its own thread, as in the conv's
// one-thread-per-channel form.
#include "backend/cuda/common.cuh"
#include "backend/cuda/conv1d.cuh"
#include "backend/cuda/norm_math.cuh"

namespace ds4::cuda {
namespace {

struct History {
  const int64_t* context;
  const int32_t* tokens;
  int64_t ctx;
  __device__ int64_t operator()(int64_t i) const { return i < ctx ? context[i] : int64_t(tokens[i - ctx]); }
};

__global__ void ple_rows_kernel(PleHash p, const int32_t* tokens, int64_t T, const int64_t* context, int64_t* rows) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t ctx = p.ngram - 1, heads = p.heads();
  const History hist{context, tokens, ctx};
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < T; t += int64_t(gridDim.x) * blockDim.x)
    ple_token_rows(p, hist, ctx + t, rows + t * heads);
}

// new context[r] = history[T + r]; ascending r never reads an entry already replaced (T >= 1).
__global__ void ple_context_kernel(const int32_t* tokens, int64_t T, int64_t ctx, int64_t* context) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t r = 0; r < ctx; r++) {
    const int64_t src = T + r;
    context[r] = src < ctx ? context[src] : int64_t(tokens[src - ctx]);
  }
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
  const float* key;    // [T][S][H]: the key projection, not yet normalised
  const float* value;  // [T][H]
  float* x;            // [T][S][H]: residual streams, += the block's output
  const bf16 *norm_key, *norm_query, *norm_conv;  // [S][H]
  const bf16* conv;    // [S * H][K]
  float* state;        // [(K - 1) * dil][S * H]
  float* normed;       // [T][S * H] scratch: the conv's input rows
  int T, S, H, K, dil;
  float eps;
};

// rms_norm_offset's norm_block_kernel for one row (norm_math.cuh): v / rms * (1 + w[h]).
__device__ __forceinline__ float tail_norm(float v, float inv, const bf16* w, int h) {
  return detail::offset_norm(v, inv, __bfloat162float(w[h]));
}

__global__ void __launch_bounds__(kTailThreads) ple_tail_kernel(TailArgs a) {
  extern __shared__ float sm[];
  float *kn = sm, *qn = sm + a.H;  // one token's normalised key and query rows (the gate's sum reads across threads)
  __shared__ double red[32];
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int s = int(blockIdx.x), i = int(threadIdx.x), H = a.H;
  const int64_t C = int64_t(a.S) * H, hist = int64_t(a.K - 1) * a.dil;
  const bf16 *wk = a.norm_key + int64_t(s) * H, *wq = a.norm_query + int64_t(s) * H, *wc = a.norm_conv + int64_t(s) * H;
  // Thread i's columns h = i + 1024 m (m < kPer): a token's key, x and value there are loaded together, once.
  for (int t = 0; t < a.T; t++) {
    const int64_t row = (int64_t(t) * a.S + s) * H;
    float kv[kPer], xv[kPer], vv[kPer];
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) kv[m] = a.key[row + h], xv[m] = a.x[row + h], vv[m] = a.value[int64_t(t) * H + h];
    }
    double ss = 0.0;
#pragma unroll
    for (int m = 0; m < kPer; m++)
      if (i + kTailThreads * m < H) ss += double(kv[m]) * double(kv[m]);
    float inv = detail::rms_inv(detail::block_sum(ss, red), H, a.eps);
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
      if (h < H) a.normed[int64_t(t) * C + int64_t(s) * H + h] = tail_norm(gv[m], inv, wc, h);
    }
    // The conv reads this token's and earlier tokens' normed rows of the thread's own channels, and the history;
    // every column's taps before the first store below.
    float cv[kPer];
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) cv[m] = detail::conv_at(a.normed, C, t, int64_t(s) * H + h, C, a.conv, a.K, a.dil, hist, a.state, Act::Silu);
    }
#pragma unroll
    for (int m = 0; m < kPer; m++) {
      const int h = i + kTailThreads * m;
      if (h < H) a.x[row + h] = xv[m] + (gv[m] + cv[m]);
    }
  }
  for (int h = i; h < H; h += kTailThreads) detail::shift_history(a.normed, C, a.T, int64_t(s) * H + h, C, hist, a.state);
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

void ple_tail(Context& ctx, const float* key, const float* value, float* x, int64_t T, int64_t streams, int64_t H,
              const bf16* norm_key, const bf16* norm_query, const bf16* norm_conv, const bf16* conv, int64_t conv_k,
              int64_t dilation, float* conv_state, float* normed, float eps) {
  detail::require_supported(ple_tail_supported(T, streams, H),
                            "ple_tail: needs 1 <= T <= 8 and 1024 < H <= 4096 (the composition covers the rest)");
  detail::require(conv_k >= 1 && dilation >= 1, "ple_tail: bad conv shape");
  detail::require(key && value && x && norm_key && norm_query && norm_conv && conv && normed &&
                      (conv_state || conv_k == 1),
                  "ple_tail: null operand");
  const TailArgs a{key, value, x, norm_key, norm_query, norm_conv, conv, conv_state, normed, int(T), int(streams),
                   int(H), int(conv_k), int(dilation), eps};
  detail::launch(ctx, ple_tail_kernel, unsigned(streams), kTailThreads, size_t(2 * H) * sizeof(float), a);
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
