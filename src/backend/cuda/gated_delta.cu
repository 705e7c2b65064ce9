// The gated delta rule (cpu/gated_delta.cpp) and the GDN step that prepares its inputs.
//
// Both forms split the state over (value head, tile of state columns): the columns of S_h are independent (every
// update is S[:, j] <- f(S[:, j], k, q, v_j)), so a block owns its columns outright and needs no communication with
// other blocks (the recurrent form: 32 columns, the chunked form's scan: 64). Lanes map to columns, so every state
// access of a warp is one coalesced 128-byte row segment. The chunked form's chunk-local algebra runs before the
// scan, over (chunk, head).
#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/conv1d.cuh"

namespace ds4::cuda {
namespace {

constexpr int kColTile = 32;  // state columns per block: one per lane
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// ---------------------------------------------------------------------------------------------------------
// Recurrent form. Thread (warp w, lane l) holds S[a][j0 + l] for a = w, w + 8, ... in registers for the whole
// call: each token costs one pass over registers and two 8-way cross-warp reductions through shared memory,
// and the state crosses HBM once per call (read at the start, written at the end). MAXR = ceil(dk / 8).
// ---------------------------------------------------------------------------------------------------------
// One token of the recurrence for the block's column j = lane of its tile, shared by delta_recurrent_kernel and
// gdn_recurrent_fused_kernel: S <- S * decay; delta_j = (v_j - sum_a S[a][j] k_a) * b; S <- S + k ⊗ delta;
// o_j = sum_a S[a][j] q_a. Thread (wi, lane) holds S[wi + 8 r][j] in s[r]; qs, ks hold the token's q and k (the
// caller's barrier before the call publishes them); red[0] and red[1] are [kWarps][32] scratch, one per 8-warp sum
// (two buffers, so no barrier waits for every warp to have read the first sum before the second is written),
// added in warp order. Returns o_j in warp 0 (other warps: their partial). Every thread of the block calls it.
template <int MAXR>
__device__ __forceinline__ float delta_token_step(float (&s)[MAXR], const float* qs, const float* ks, int dk,
                                                  float decay, float b, float vj, float (*red)[kWarps][32], int wi,
                                                  int lane) {
  float mem = 0.0f;
#pragma unroll
  for (int r = 0; r < MAXR; r++) {
    const int a = wi + kWarps * r;
    if (a < dk) {
      s[r] *= decay;
      mem += s[r] * ks[a];
    }
  }
  red[0][wi][lane] = mem;
  __syncthreads();
  float m = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; w++) m += red[0][w][lane];
  const float delta = (vj - m) * b;
  float o = 0.0f;
#pragma unroll
  for (int r = 0; r < MAXR; r++) {
    const int a = wi + kWarps * r;
    if (a < dk) {
      s[r] += ks[a] * delta;
      o += s[r] * qs[a];
    }
  }
  red[1][wi][lane] = o;
  __syncthreads();  // also: every warp has read red[0], qs and ks (the caller's next token overwrites them)
  if (wi == 0) {
    o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; w++) o += red[1][w][lane];
  }
  return o;
}

template <int MAXR>
__global__ void __launch_bounds__(kThreads)
    delta_recurrent_kernel(const float* q, const float* k, const float* v, const float* g, const float* beta,
                           int64_t T, int64_t H, int dk, int dv, float* state, float* out) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  __shared__ float qs[MAXR * kWarps], ks[MAXR * kWarps];
  __shared__ float red[2][kWarps][32];
  const int h = blockIdx.x, lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
  const int j = blockIdx.y * kColTile + lane;
  const bool col = j < dv;
  float* S = state + int64_t(h) * dk * dv;
  float s[MAXR];
#pragma unroll
  for (int r = 0; r < MAXR; r++) {
    const int a = wi + kWarps * r;
    s[r] = (col && a < dk) ? S[int64_t(a) * dv + j] : 0.0f;
  }
  for (int64_t t = 0; t < T; t++) {
    const int64_t th = t * H + h;
    __syncthreads();  // the previous token's reads of qs, ks and red are done
    for (int a = threadIdx.x; a < dk; a += kThreads) {
      qs[a] = q[th * dk + a];
      ks[a] = k[th * dk + a];
    }
    __syncthreads();
    const float os = delta_token_step(s, qs, ks, dk, expf(g[th]), beta[th], col ? v[th * dv + j] : 0.0f, red, wi, lane);
    if (wi == 0 && col) out[th * dv + j] = os;
  }
#pragma unroll
  for (int r = 0; r < MAXR; r++) {
    const int a = wi + kWarps * r;
    if (col && a < dk) S[int64_t(a) * dv + j] = s[r];
  }
}

// ---------------------------------------------------------------------------------------------------------
// Chunked form, chunks of kChunk tokens (the CPU's default is 64; the function does not depend on it, and
// shorter chunks keep exp(cum) further from underflow). Per chunk:
//   A[i][j] = beta_i (k_i·k_j) e^(cum_i - cum_j), j < i     B[i][j] = (q_i·k_j) e^(cum_i - cum_j), j <= i
//   (I + A) U = beta v,  (I + A) W = beta k e^cum           (forward substitution)
//   vn = U - W S;  o_i = e^cum_i q_i S + sum_{j<=i} B[i][j] vn_j;  S <- e^cum_last S + sum_j k_j e^(cum_last-cum_j) vn_j
// Everything before vn depends on the chunk's own tokens only, so it runs for all chunks and heads at once
// (delta_chunk_prep_kernel: W, U, B and cum into scratch); only the last line is a scan over the chunks
// (delta_chunk_scan_kernel, one block per head and 64 state columns). One block per head and 32 columns used to do
// both, chunk after chunk, repeating the prep in each of a head's column blocks: 3.7 ms per 2048 tokens of the
// Flash-Next shape (48 heads), 29 % of a 4096-token prefill. Every value is computed by the same expression, in
// the same order, as there (so the same bits).
// ---------------------------------------------------------------------------------------------------------
constexpr int kChunk = 32;
constexpr int kCP = kChunk + 1;
constexpr int kScanCols = 64;  // state columns of a scan block: lanes j and j + 32

// The prep's shared memory: K and Q rows (padded by one float so that threads reading different rows hit
// different banks), A, and the chunk's cum, beta and e^cum.
size_t prep_smem_floats(int dk) { return size_t(2 * kChunk) * (dk + 1) + size_t(kChunk) * kCP + 3 * kChunk; }

// Block (chunk c, head h): A and B by dot products (a thread per pair), then one column of W (dk of them) or of U
// (dv) per thread by forward substitution. Writes W [T][H][dk], U [T][H][dv], B [T][H][kChunk] (row i: j <= i)
// and cum [T][H].
__global__ void __launch_bounds__(kThreads, 2)
    delta_chunk_prep_kernel(const float* q, const float* k, const float* v, const float* g, const float* beta, int64_t T,
                            int64_t H, int dk, int dv, float* Wg, float* Ug, float* Bg, float* cumg) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ float sm[];
  const int dkp = dk + 1;
  float* K_s = sm;                    // [kChunk][dkp]
  float* Q_s = K_s + kChunk * dkp;    // [kChunk][dkp]
  float* A_s = Q_s + kChunk * dkp;    // [kChunk][kCP]
  float* cum_s = A_s + kChunk * kCP;  // cumulative log-decay within the chunk
  float* beta_s = cum_s + kChunk;
  float* ecum_s = beta_s + kChunk;    // e^cum_i
  const int64_t c0 = int64_t(blockIdx.x) * kChunk, h = blockIdx.y;
  const int tid = threadIdx.x, L = int(detail::imin(kChunk, T - c0));
  for (int i = tid; i < L * dk; i += kThreads) {
    const int r = i / dk, e = i % dk;
    const int64_t src = ((c0 + r) * H + h) * dk + e;
    K_s[r * dkp + e] = k[src];
    Q_s[r * dkp + e] = q[src];
  }
  if (tid == 0) {  // the CPU's sequential prefix sum, so cum agrees exactly
    float acc = 0.0f;
    for (int r = 0; r < L; r++) {
      acc += g[(c0 + r) * H + h];
      cum_s[r] = acc;
      beta_s[r] = beta[(c0 + r) * H + h];
    }
  }
  __syncthreads();
  if (tid < L) {
    ecum_s[tid] = expf(cum_s[tid]);
    cumg[(c0 + tid) * H + h] = cum_s[tid];
  }
  for (int p = tid; p < L * L; p += kThreads) {
    const int i = p / L, jj = p % L;
    if (jj > i) continue;
    float kk = 0.0f, qk = 0.0f;
    for (int e = 0; e < dk; e++) {
      const float kj = K_s[jj * dkp + e];
      kk += K_s[i * dkp + e] * kj;
      qk += Q_s[i * dkp + e] * kj;
    }
    const float dcy = expf(cum_s[i] - cum_s[jj]);
    if (jj < i) A_s[i * kCP + jj] = beta_s[i] * kk * dcy;
    Bg[((c0 + i) * H + h) * kChunk + jj] = qk * dcy;
  }
  __syncthreads();
  // Forward substitution, one column per thread (its earlier rows in registers): columns < dk are W's, the rest U's.
  for (int c = tid; c < dk + dv; c += kThreads) {
    const bool wcol = c < dk;
    const int cc = wcol ? c : c - dk;
    float x[kChunk];
#pragma unroll
    for (int i = 0; i < kChunk; i++) {
      if (i >= L) break;
      const int64_t th = (c0 + i) * H + h;
      float w = wcol ? beta_s[i] * K_s[i * dkp + c] * ecum_s[i] : v[th * dv + cc] * beta[th];
#pragma unroll
      for (int jj = 0; jj < i; jj++) w -= A_s[i * kCP + jj] * x[jj];
      x[i] = w;
      if (wcol) Wg[th * dk + c] = w;
      else Ug[th * dv + cc] = w;
    }
  }
}

// The scan's shared memory (floats), rows padded to dr = roundup4(dk) (pads zero, so float4 reads cover them and add
// nothing): S transposed [64 columns][dr + 4] (the + 4 puts consecutive columns' float4 reads on distinct banks),
// per stage the chunk's W, Q and K rows [kChunk][dr], U [kChunk][64], B [kChunk][kChunk] and cum, then vn and the
// q·S sums [kChunk][64], e^cum and the decays.
constexpr int kScanThreads = 512;
constexpr int kScanWarps = kScanThreads / 32;
__host__ __device__ inline int scan_row(int dk) { return (dk + 3) / 4 * 4; }
__host__ __device__ inline size_t scan_stage_floats(int dk) {  // a multiple of 4: every stage starts 16-byte aligned
  return (size_t(3 * kChunk) * scan_row(dk) + size_t(kChunk) * (kScanCols + kChunk + 1) + 3) / 4 * 4;
}
size_t scan_smem_floats(int dk, int stages) {
  return size_t(scan_row(dk) + 4) * kScanCols + stages * scan_stage_floats(dk) + size_t(2 * kChunk) * kScanCols +
         2 * kChunk;
}

// Block (head h, columns j0 .. j0 + 63), 16 warps. Row phases: warp w takes rows w and w + 16 of the chunk, lane l
// columns l and l + 32. State update: warp w owns S rows MAXR w .. MAXR w + MAXR - 1 (in registers) at the same
// columns. The next chunk's rows arrive by cp.async while a chunk is computed when two stages fit (dk <= 128).
template <int MAXR>
__global__ void __launch_bounds__(kScanThreads, 1)
    delta_chunk_scan_kernel(const float* q, const float* k, const float* Wg, const float* Ug, const float* Bg,
                            const float* cumg, int64_t T, int64_t H, int dk, int dv, int stages, bool vec, float* state,
                            float* out) {
  static_assert(MAXR % 4 == 0, "state rows of a warp: whole float4");
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) float sm[];
  constexpr int kRows = kChunk / kScanWarps;
  const int h = blockIdx.x, j0 = blockIdx.y * kScanCols, tid = threadIdx.x, lane = tid & 31, wi = tid >> 5;
  const int dr = scan_row(dk), sr = dr + 4;
  const size_t stage_floats = scan_stage_floats(dk);
  float* S_s = sm;  // [kScanCols][sr]: S[a][j0 + col] at col * sr + a
  float* stage0 = S_s + size_t(sr) * kScanCols;
  float* vn_s = stage0 + stages * stage_floats;  // [kChunk][kScanCols]
  float* qs_s = vn_s + kChunk * kScanCols;       // [kChunk][kScanCols]
  float* ecum_s = qs_s + kChunk * kScanCols;
  float* dec_s = ecum_s + kChunk;
  const int cols = min(kScanCols, dv - j0);
  float* S = state + int64_t(h) * dk * dv;
  // Zeros: the pads of every row (never copied into) and S past dk.
  for (int i = tid; i < stages * int(stage_floats); i += kScanThreads) stage0[i] = 0.0f;
  for (int i = tid; i < sr * kScanCols; i += kScanThreads) S_s[i] = 0.0f;
  __syncthreads();
  float s[MAXR][2];
#pragma unroll
  for (int m = 0; m < MAXR; m++) {
    const int a = MAXR * wi + m;
#pragma unroll
    for (int u = 0; u < 2; u++) {
      const int col = lane + 32 * u;
      s[m][u] = a < dk && col < cols ? S[int64_t(a) * dv + j0 + col] : 0.0f;
      if (a < dk) S_s[col * sr + a] = s[m][u];
    }
  }
  const int64_t nchunks = (T + kChunk - 1) / kChunk;
  // Stage views: W, Q, K [kChunk][dr], U [kChunk][kScanCols], B [kChunk][kChunk], cum [kChunk].
  auto W_of = [&](int st) { return stage0 + st * stage_floats; };
  auto issue = [&](int64_t c) {
    float* W_s = W_of(int(c % stages));
    float* Q_s = W_s + kChunk * dr;
    float* K_s = Q_s + kChunk * dr;
    float* U_s = K_s + kChunk * dr;
    float* B_s = U_s + kChunk * kScanCols;
    float* cum_s = B_s + kChunk * kChunk;
    const int64_t c0 = c * kChunk;
    const int L = int(detail::imin(kChunk, T - c0));
    // 4-float pieces when every row is 16-byte aligned (vec), else single floats.
    const int piece = vec ? 4 : 1, pk = dk / piece, pu = kScanCols / piece, pb = kChunk / piece;
    for (int i = tid; i < L * (3 * pk + pu + pb); i += kScanThreads) {
      const int r = i / (3 * pk + pu + pb), x = i % (3 * pk + pu + pb);
      const int64_t th = (c0 + r) * H + h;
      float* dst;
      const float* src;
      if (x < 3 * pk) {
        const int which = x / pk, e = (x % pk) * piece;
        dst = (which == 0 ? W_s : which == 1 ? Q_s : K_s) + r * dr + e;
        src = (which == 0 ? Wg : which == 1 ? q : k) + th * dk + e;
      } else if (x < 3 * pk + pu) {
        const int col = (x - 3 * pk) * piece;
        if (col >= cols) continue;  // past the state's columns: zeros from the start, never stored
        dst = U_s + r * kScanCols + col;
        src = Ug + th * dv + j0 + col;
      } else {
        const int jj = (x - 3 * pk - pu) * piece;
        dst = B_s + r * kChunk + jj;
        src = Bg + th * kChunk + jj;
      }
      if (vec) detail::cp_async<16>(dst, src);
      else detail::cp_async<4>(dst, src);
    }
    if (tid < L) detail::cp_async<4>(cum_s + tid, cumg + (c0 + tid) * H + h);
    detail::commit_async();
  };
  if (stages == 2 && nchunks > 0) issue(0);

  for (int64_t c = 0; c < nchunks; c++) {
    const int64_t c0 = c * kChunk;
    const int L = int(detail::imin(kChunk, T - c0));
    if (stages == 1) {
      __syncthreads();  // the previous chunk is done with the stage
      issue(c);
    }
    detail::wait_all_async();
    __syncthreads();  // the stage, and S_s of the previous chunk, visible; every warp is done with the other stage
    if (stages == 2 && c + 1 < nchunks) issue(c + 1);
    const float* W_s = W_of(int(c % stages));
    const float* Q_s = W_s + kChunk * dr;
    const float* K_s = Q_s + kChunk * dr;
    const float* U_s = K_s + kChunk * dr;
    const float* B_s = U_s + kChunk * kScanCols;
    const float* cum_s = B_s + kChunk * kChunk;
    if (tid < L) {
      ecum_s[tid] = expf(cum_s[tid]);
      dec_s[tid] = expf(cum_s[L - 1] - cum_s[tid]);
    }
    // vn = U - W S and q·S for the warp's rows, a in order (4 at a time from float4 reads).
    {
      float vn[kRows][2], qs[kRows][2];
#pragma unroll
      for (int r = 0; r < kRows; r++)
#pragma unroll
        for (int u = 0; u < 2; u++) {
          const int i = wi + kScanWarps * r;
          vn[r][u] = i < L ? U_s[i * kScanCols + lane + 32 * u] : 0.0f;
          qs[r][u] = 0.0f;
        }
      for (int a = 0; a < dr; a += 4) {
        float sv[2][4];
#pragma unroll
        for (int u = 0; u < 2; u++) {
          const float4 x = *reinterpret_cast<const float4*>(&S_s[(lane + 32 * u) * sr + a]);
          sv[u][0] = x.x, sv[u][1] = x.y, sv[u][2] = x.z, sv[u][3] = x.w;
        }
#pragma unroll
        for (int r = 0; r < kRows; r++) {
          const int i = wi + kScanWarps * r;  // rows past L: stale, never stored
          const float4 w4 = *reinterpret_cast<const float4*>(&W_s[i * dr + a]);
          const float4 q4 = *reinterpret_cast<const float4*>(&Q_s[i * dr + a]);
          const float w[4] = {w4.x, w4.y, w4.z, w4.w}, x[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
          for (int e = 0; e < 4; e++)
#pragma unroll
            for (int u = 0; u < 2; u++) {
              vn[r][u] -= w[e] * sv[u][e];
              qs[r][u] += x[e] * sv[u][e];
            }
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; r++)
#pragma unroll
        for (int u = 0; u < 2; u++) {
          const int i = wi + kScanWarps * r;
          vn_s[i * kScanCols + lane + 32 * u] = vn[r][u];
          qs_s[i * kScanCols + lane + 32 * u] = qs[r][u];
        }
    }
    __syncthreads();
    // Outputs of the warp's rows.
#pragma unroll
    for (int r = 0; r < kRows; r++) {
      const int i = wi + kScanWarps * r;
      if (i >= L) break;
#pragma unroll
      for (int u = 0; u < 2; u++) {
        const int col = lane + 32 * u;
        float o = ecum_s[i] * qs_s[i * kScanCols + col];
        for (int jj = 0; jj <= i; jj++) o += B_s[i * kChunk + jj] * vn_s[jj * kScanCols + col];
        if (col < cols) out[((c0 + i) * H + h) * dv + j0 + col] = o;
      }
    }
    // State update of the warp's rows (rows past dk: computed from zeros and pads, never stored).
    const float el = expf(cum_s[L - 1]);
#pragma unroll
    for (int m = 0; m < MAXR; m++) s[m][0] *= el, s[m][1] *= el;
    for (int i = 0; i < L; i++) {
      const float d = dec_s[i], v0 = vn_s[i * kScanCols + lane], v1 = vn_s[i * kScanCols + lane + 32];
#pragma unroll
      for (int m4 = 0; m4 < MAXR; m4 += 4) {
        const float4 k4 = *reinterpret_cast<const float4*>(&K_s[i * dr + MAXR * wi + m4]);
        const float kk[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float kd = kk[e] * d;
          s[m4 + e][0] += kd * v0;
          s[m4 + e][1] += kd * v1;
        }
      }
    }
#pragma unroll
    for (int m = 0; m < MAXR; m++) {
      const int a = MAXR * wi + m;
      if (a < dk) S_s[lane * sr + a] = s[m][0], S_s[(lane + 32) * sr + a] = s[m][1];
    }
  }
#pragma unroll
  for (int m = 0; m < MAXR; m++) {
    const int a = MAXR * wi + m;
    if (a >= dk) break;
#pragma unroll
    for (int u = 0; u < 2; u++)
      if (lane + 32 * u < cols) S[int64_t(a) * dv + j0 + lane + 32 * u] = s[m][u];
  }
}

// One block per (token, value head): split, repeat key heads, L2-normalise, gates (gated_deltanet.cpp).
__global__ void gdn_prepare_kernel(const float* conv_out, const float* a, const float* b, const float* A_log,
                                   const float* dt_bias, int64_t KH, int64_t VH, int64_t dk, int64_t dv, float* q,
                                   float* k, float* v, float* g, float* beta) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  __shared__ double red[32];
  const int64_t th = blockIdx.x, t = th / VH, h = th % VH, kh = h / (VH / KH);
  const int64_t kd = KH * dk, conv_dim = 2 * kd + VH * dv;
  const float* row = conv_out + t * conv_dim;
  const float* qs = row + kh * dk;
  const float* ks = row + kd + kh * dk;
  const float* vs = row + 2 * kd + h * dv;
  double sq = 0.0, sk = 0.0;
  for (int64_t e = threadIdx.x; e < dk; e += blockDim.x) {
    sq += double(qs[e]) * double(qs[e]);
    sk += double(ks[e]) * double(ks[e]);
  }
  sq = detail::block_sum(sq, red);
  sk = detail::block_sum(sk, red);
  const float iq = 1.0f / sqrtf(float(sq) + 1e-6f), ik = 1.0f / sqrtf(float(sk) + 1e-6f);
  const float qscale = 1.0f / sqrtf(float(dk));
  for (int64_t e = threadIdx.x; e < dk; e += blockDim.x) {
    q[th * dk + e] = (qs[e] * iq) * qscale;
    k[th * dk + e] = ks[e] * ik;
  }
  for (int64_t e = threadIdx.x; e < dv; e += blockDim.x) v[th * dv + e] = vs[e];
  if (threadIdx.x == 0) {
    beta[th] = detail::sigmoid(b[th]);
    g[th] = -expf(A_log[h]) * detail::softplus(a[th] + dt_bias[h]);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The recurrent GDN step in one kernel (gdn_recurrent_fused): gdn_prepare, the recurrent delta rule and the gated
// RMSNorm. The blocks are delta_recurrent_kernel's (value head, tile of 32 state columns), and each column's
// arithmetic and 8-warp reductions are that kernel's; every block normalises its head's q and k itself (a few
// hundred values). The ntiles blocks of one head form a thread-block cluster: the gated norm's sum over dv adds
// the blocks' shares in rank order, each block having written its share into every block's shared memory before
// the one cluster barrier of the step (reading the others' memory after the barrier took a remote round trip and
// a second barrier, so that no block left while another still read its share). (One 1024-thread block per head was
// tried first: 48 multiprocessors issuing all the work took 8.4 us, more than the three kernels it replaced.)
//
// The decode step can fold the conv in (CONV, GdnConv): each thread convolves the channels it reads (q and k element
// e of its key head for e < dk, column j of v in every warp) with conv1d.cuh's expressions, so conv_one_kernel's
// launch leaves the chain. The taps are parameters, read before the wait; the history rows and x after it, with
// the step's other loads. Each block owns its v columns and writes their new history itself, after a barrier (all
// of its warps read them). The q/k history of key head kh is read by the readers = (VH/KH) * tiles blocks of its
// value heads (other clusters, in no fixed order), so only the last of them to have read it may overwrite it: each
// block counts itself on the key head's counter (Context::counters, zero between kernels) once all its threads
// have read their rows, and the block that counts readers - 1 resets the counter and writes the rows at its end.
// (Clusters of a key head's 3 x 4 blocks, whose barrier orders the reads before the rewrite without a count, were
// measured on the H200 in session 15: 48-layer decode 3.2 % slower than this, 1.8 % slower than no fold.)
// ---------------------------------------------------------------------------------------------------------
constexpr int kFusedMaxTiles = 8;  // dv <= 256: the portable cluster size
constexpr int kFusedMaxDk = 128;
constexpr int kFusedConvMaxK = 4;  // the folded conv's taps (the GDN conv has 4; register arrays of this size)

struct RecurrentFusedArgs {
  const float* conv_out;  // [T][2 * KH * dk + VH * dv]; null with the conv folded in
  const float *z, *b, *a;  // rows of ld floats: z [VH * dv], b and a [VH]
  int64_t ld;
  const float *A_log, *dt_bias;
  const bf16* norm;  // [dv]
  float eps;
  Act act;
  int64_t T, KH, VH;
  int dk, dv;
  float* state;  // [VH][dk][dv]
  float* out;    // [T][VH * dv]
  bool early_trigger;  // pdl_enter(true): DS4_CUDA_EARLY_TRIGGER names delta
};

// The folded conv (CONV) and the counters (Context::counters, [KH]: the blocks that have read each key head's q/k
// history) are parameters of their own: as two more fields of RecurrentFusedArgs they made ptxas allocate this
// kernel 64 registers instead of 104 (the same code), and at 64 the 48-layer decode step was 1.1 % slower (H200
// A/B, session 15; session 14 saw the same at 80: the output projection's blocks then fit beside the step and
// their prefetches delay its loads). Check the registers (-Xptxas -v) after any change here.
template <int MAXR, bool CONV>
__global__ void __launch_bounds__(kThreads)
    gdn_recurrent_fused_kernel(RecurrentFusedArgs a, GdnConv conv, int* counters) {
  namespace cg = cooperative_groups;
  __shared__ float qs[MAXR * kWarps], ks[MAXR * kWarps];
  __shared__ float red[2][kWarps][32];
  __shared__ float ob[kGdnFusedMaxT][kColTile], zs[kGdnFusedMaxT][kColTile];
  __shared__ double tss[kFusedMaxTiles][kGdnFusedMaxT];  // block c's share of each token's sum of squares
  __shared__ double sred[32];
  __shared__ bool qk_writer;  // CONV: this block writes its key head's new q/k history
  const cg::cluster_group cluster = cg::this_cluster();
  const int wi = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), e = int(threadIdx.x);
  // 32-bit offsets (the wrapper checks that they fit).
  const int h = int(blockIdx.y), kh = h / int(a.VH / a.KH), kd = int(a.KH) * a.dk, conv_dim = 2 * kd + int(a.VH) * a.dv;
  const int ld = int(a.ld), j = int(blockIdx.x) * kColTile + lane;
  const bool col = j < a.dv;
  float* S = a.state + int64_t(h) * a.dk * a.dv;
  // Parameters no kernel writes, read before the wait: the gated norm's weight was the tail's one load after the
  // cluster barrier (one more L2 round trip at the end of every GDN layer's step).
  const float wj = wi == 0 && col ? detail::bf(a.norm[j]) : 0.0f;
  const float neg_A = -expf(a.A_log[h]), dt = a.dt_bias[h];
  // CONV: the conv's channels of this thread's q, k and v, and their taps.
  const int T = CONV ? 1 : int(a.T), K = int(conv.K), qc = kh * a.dk + e, kc = kd + qc, vc = 2 * kd + h * a.dv + j;
  float tq[kFusedConvMaxK], tk[kFusedConvMaxK], tv[kFusedConvMaxK], rq[kFusedConvMaxK], rk[kFusedConvMaxK],
      rv[kFusedConvMaxK];
  if constexpr (CONV) {
    if (e < a.dk) {
      detail::conv_one_taps(conv.w + qc * K, K, tq);
      detail::conv_one_taps(conv.w + kc * K, K, tk);
    }
    if (col) detail::conv_one_taps(conv.w + vc * K, K, tv);
  }
  // Every block of the cluster has started, so the others may write into its shared memory (the shares below);
  // before the wait, so the step does not wait for this barrier.
  cluster.sync();
  [[maybe_unused]] const auto pdl = detail::pdl_enter(a.early_trigger);
  float s[MAXR];
#pragma unroll
  for (int r = 0; r < MAXR; r++) {
    const int ai = wi + kWarps * r;
    s[r] = (col && ai < a.dk) ? S[ai * a.dv + j] : 0.0f;
  }
  const float qscale = 1.0f / sqrtf(float(a.dk));

  int arrived = 0;  // CONV, thread 0: the blocks of the key head that had counted before this one

  for (int t = 0; t < T; t++) {
    // This token's inputs, all loads issued together: q and k (element e of the key head), v (column j), gates.
    float qv, kv, vj;
    if constexpr (CONV) {
      if (e < a.dk) {
        detail::conv_one_rows(conv.state + qc, conv_dim, conv.x + qc, K, rq);
        detail::conv_one_rows(conv.state + kc, conv_dim, conv.x + kc, K, rk);
      }
      if (col) detail::conv_one_rows(conv.state + vc, conv_dim, conv.x + vc, K, rv);
      qv = e < a.dk ? detail::conv_one_out(tq, rq, K, conv.act) : 0.0f;
      kv = e < a.dk ? detail::conv_one_out(tk, rk, K, conv.act) : 0.0f;
      vj = col ? detail::conv_one_out(tv, rv, K, conv.act) : 0.0f;
    } else {
      const float* row = a.conv_out + t * conv_dim;
      qv = e < a.dk ? row[kh * a.dk + e] : 0.0f;
      kv = e < a.dk ? row[kd + kh * a.dk + e] : 0.0f;
      vj = col ? row[2 * kd + h * a.dv + j] : 0.0f;
    }
    const float av = a.a[t * ld + h], bv = a.b[t * ld + h];
    const float zt = wi == 0 && col ? a.z[t * ld + h * a.dv + j] : 0.0f;  // for the gated norm
    // gdn_prepare: L2 norms in float64 (its block sums: the same bits), q scaled by 1/sqrt(dk).
    const double sq = detail::block_sum(double(qv) * double(qv), sred);
    const double sk = detail::block_sum(double(kv) * double(kv), sred);
    if constexpr (CONV) {
      // The sums' barriers came after every history load of the block (a barrier orders its threads' loads before
      // what follows it), so the rows of this block's v columns may be overwritten now, and this block counts
      // itself a reader done: the fence orders those loads (made cumulative by the barrier) before the count
      // (release); the last block's acquire fence below orders every count, and so every other block's loads,
      // before its q/k stores. Thread 0 does not wait for the count's value here: it is read after the delta step.
      // Warp 1 stores the v rows, so that thread 0's fences wait for no store. (The release is the fold's price:
      // about 0.7 % of a 48-layer step on the H200, what a bare count, a formal race, measured faster;
      // fence.acq_rel.gpu and atom.release.gpu measured as this fence.)
      if (e == 0) {
        __threadfence();
        arrived = atomicAdd(counters + kh, 1);
      }
      if (wi == 1 && col) detail::conv_one_shift(rv, K, conv.state + vc, conv_dim);
    }
    const float iq = 1.0f / sqrtf(float(sq) + 1e-6f), ik = 1.0f / sqrtf(float(sk) + 1e-6f);
    if (e < a.dk) {
      qs[e] = (qv * iq) * qscale;
      ks[e] = kv * ik;
    }
    const float g = neg_A * detail::softplus(av + dt), b = detail::sigmoid(bv);
    __syncthreads();
    if (t == 0) pdl.mark(0);  // trace builds: the first token's inputs and norms
    const float os = delta_token_step(s, qs, ks, a.dk, expf(g), b, vj, red, wi, lane);
    if (wi == 0) {
      ob[t][lane] = col ? os : 0.0f;
      zs[t][lane] = zt;
    }
  }
  if constexpr (CONV)
    if (e == 0) {
      qk_writer = arrived == int(a.VH / a.KH) * int(gridDim.x) - 1;
      if (qk_writer) {
        __threadfence();  // acquire: the others' counts, and so their loads, before this block's q/k stores
        // Every reader has counted: zero for the next kernel (after the fence, so that it waits for no store).
        counters[kh] = 0;
      }
    }
#pragma unroll
  for (int r = 0; r < MAXR; r++) {
    const int ai = wi + kWarps * r;
    if (col && ai < a.dk) S[ai * a.dv + j] = s[r];
  }

  // The gated norm of each token's head row: y = w * (o / rms(o)) * act(z), the sum of squares in float64, the
  // blocks' shares added in rank order.
  const unsigned nb = cluster.num_blocks(), rank = cluster.block_rank();
  if (wi == 0)
    for (int t = 0; t < T; t++) {
      const double v = detail::warp_sum(double(ob[t][lane]) * double(ob[t][lane]));
      if (lane < int(nb)) cluster.map_shared_rank(&tss[0][0], unsigned(lane))[rank * kGdnFusedMaxT + t] = v;
    }
  pdl.mark(1);
  cluster.sync();  // every share is in every block's tss; after it no block touches another's memory
  pdl.mark(2);
  if (wi == 0 && col) {
    for (int t = 0; t < T; t++) {
      double ss = 0.0;
      for (unsigned c = 0; c < nb; c++) ss += tss[c][t];
      const float inv = 1.0f / sqrtf(float(ss / double(a.dv)) + a.eps);
      a.out[(t * int(a.VH) + h) * a.dv + j] = wj * (ob[t][lane] * inv) * detail::apply_act(a.act, zs[t][lane]);
    }
  }
  // The cluster barrier published qk_writer (and thread 0's acquire) to the block.
  if constexpr (CONV)
    if (qk_writer && e < a.dk) {
      detail::conv_one_shift(rq, K, conv.state + qc, conv_dim);
      detail::conv_one_shift(rk, K, conv.state + kc, conv_dim);
    }
}

void check_delta_shape(const DeltaShape& s) {
  detail::require(s.T >= 0 && s.H > 0 && s.dk > 0 && s.dv > 0, "gated delta: bad shape");
  detail::require_supported(s.dk <= 256, "gated delta: key dim " + std::to_string(s.dk) + " > 256");
  detail::require(s.H < 65536 * 16, "gated delta: too many heads");
}

}  // namespace

void gated_delta_recurrent(Context& ctx, const float* q, const float* k, const float* v, const float* g,
                           const float* beta, DeltaShape s, float* state, float* out) {
  check_delta_shape(s);
  if (s.T == 0) return;
  const dim3 grid(unsigned(s.H), detail::blocks_for(s.dv, kColTile));
  const int dk = int(s.dk), dv = int(s.dv);
  if (dk <= 64)
    detail::launch(ctx, delta_recurrent_kernel<8>, grid, kThreads, 0, q, k, v, g, beta, s.T, s.H, dk, dv, state, out);
  else if (dk <= 128)
    detail::launch(ctx, delta_recurrent_kernel<16>, grid, kThreads, 0, q, k, v, g, beta, s.T, s.H, dk, dv, state, out);
  else
    detail::launch(ctx, delta_recurrent_kernel<32>, grid, kThreads, 0, q, k, v, g, beta, s.T, s.H, dk, dv, state, out);
  DS4_CUDA_CHECK_LAUNCH();
}

void gated_delta_chunked(Context& ctx, const float* q, const float* k, const float* v, const float* g,
                         const float* beta, DeltaShape s, float* state, float* out) {
  check_delta_shape(s);
  if (s.T == 0) return;
  const int64_t T = s.T, H = s.H, nchunks = (T + kChunk - 1) / kChunk;
  const int dk = int(s.dk), dv = int(s.dv);
  detail::require(H < 65536 && nchunks < (int64_t(1) << 31), "gated delta: too many heads or chunks");
  ScratchScope scope(ctx.scratch());
  float* W = ctx.scratch().take<float>(size_t(T * H * dk));
  float* U = ctx.scratch().take<float>(size_t(T * H * dv));
  float* B = ctx.scratch().take<float>(size_t(T * H * kChunk));
  float* cum = ctx.scratch().take<float>(size_t(T * H));
  const size_t prep_smem = prep_smem_floats(dk) * sizeof(float);
  detail::allow_smem(ctx, delta_chunk_prep_kernel, prep_smem);
  detail::launch(ctx, delta_chunk_prep_kernel, dim3(unsigned(nchunks), unsigned(H)), kThreads, prep_smem, q, k, v, g, beta,
                 T, H, dk, dv, W, U, B, cum);
  DS4_CUDA_CHECK_LAUNCH();
  // Two stages (the next chunk's rows in flight) when they fit: dk <= 128 on the H200.
  const int stages = scan_smem_floats(dk, 2) * sizeof(float) <= ctx.smem_optin() ? 2 : 1;
  const size_t smem = scan_smem_floats(dk, stages) * sizeof(float);
  const bool vec = dk % 4 == 0 && dv % 4 == 0 && detail::aligned16(q) && detail::aligned16(k) && detail::aligned16(U);
  const dim3 grid(unsigned(H), detail::blocks_for(s.dv, kScanCols));
  auto run = [&](auto kernel) {
    detail::allow_smem(ctx, kernel, smem);
    detail::launch(ctx, kernel, grid, kScanThreads, smem, q, k, W, U, B, cum, T, H, dk, dv, stages, vec, state, out);
  };
  if (dk <= 64) run(delta_chunk_scan_kernel<4>);
  else if (dk <= 128) run(delta_chunk_scan_kernel<8>);
  else run(delta_chunk_scan_kernel<16>);
  DS4_CUDA_CHECK_LAUNCH();
}

void gdn_prepare(Context& ctx, const float* conv_out, const float* a, const float* b, const float* A_log,
                 const float* dt_bias, int64_t T, GdnHeads hd, float* q, float* k, float* v, float* g, float* beta) {
  detail::require(hd.key_heads > 0 && hd.value_heads % hd.key_heads == 0 && hd.dk > 0 && hd.dv > 0,
                  "gdn_prepare: value heads must be a multiple of key heads");
  if (T <= 0) return;
  detail::require(T * hd.value_heads < (int64_t(1) << 31), "gdn_prepare: too many rows");
  detail::launch(ctx, gdn_prepare_kernel, unsigned(T * hd.value_heads), 128, 0, 
      conv_out, a, b, A_log, dt_bias, hd.key_heads, hd.value_heads, hd.dk, hd.dv, q, k, v, g, beta);
  DS4_CUDA_CHECK_LAUNCH();
}

bool gdn_recurrent_fused_supported(int64_t T, GdnHeads hd) {
  return T >= 1 && T <= kGdnFusedMaxT && hd.key_heads > 0 && hd.value_heads % hd.key_heads == 0 && hd.dk >= 1 &&
         hd.dk <= kFusedMaxDk && hd.dv >= 1 && hd.dv <= kFusedMaxTiles * kColTile && hd.value_heads < 65536 &&
         T * (2 * hd.key_heads * hd.dk + hd.value_heads * hd.dv) < (int64_t(1) << 31);
}

bool gdn_conv_fused_supported(int64_t T, GdnHeads hd, int64_t K) {
  return T == 1 && gdn_recurrent_fused_supported(T, hd) && K >= 1 && K <= kFusedConvMaxK &&
         hd.key_heads <= Context::kCounters &&
         (2 * hd.key_heads * hd.dk + hd.value_heads * hd.dv) * K < (int64_t(1) << 31);
}

void gdn_recurrent_fused(Context& ctx, const float* conv_out, const GdnGates& gates, int64_t T, GdnHeads hd,
                         float* state, float* out, const GdnConv* conv) {
  detail::require_supported(gdn_recurrent_fused_supported(T, hd),
                            "gdn_recurrent_fused: needs 1 <= T <= 8, dk <= 128, dv <= 256 and value heads a multiple "
                            "of key heads");
  detail::require_supported(!conv || gdn_conv_fused_supported(T, hd, conv->K),
                            "gdn_recurrent_fused: the conv folds in for one token and at most 4 taps");
  detail::require(gates.ld >= 0 && T * gates.ld < (int64_t(1) << 31), "gdn_recurrent_fused: row stride too large");
  detail::require((conv ? !conv_out && conv->x && conv->w && (conv->state || conv->K == 1) : conv_out != nullptr) &&
                      gates.z && gates.b && gates.a && gates.A_log && gates.dt_bias && gates.norm && state && out,
                  "gdn_recurrent_fused: null operand (or both conv_out and conv)");
  const RecurrentFusedArgs args{conv_out, gates.z, gates.b, gates.a, gates.ld,
                                gates.A_log, gates.dt_bias, gates.norm, gates.eps, gates.act, T, hd.key_heads,
                                hd.value_heads, int(hd.dk), int(hd.dv), state, out, detail::early_trigger("delta")};
  // Grid (tiles, heads), one cluster per head.
  const unsigned tiles = detail::blocks_for(hd.dv, kColTile);
  const dim3 grid(tiles, unsigned(hd.value_heads));
  void (*kernel)(RecurrentFusedArgs, GdnConv, int*) =
      hd.dk <= 64 ? (conv ? gdn_recurrent_fused_kernel<8, true> : gdn_recurrent_fused_kernel<8, false>)
                  : (conv ? gdn_recurrent_fused_kernel<16, true> : gdn_recurrent_fused_kernel<16, false>);
  detail::launch_in_clusters(ctx, tiles, kernel, grid, kThreads, 0, args, conv ? *conv : GdnConv{}, ctx.counters());
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
