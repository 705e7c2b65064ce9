// MoE routing and routed experts (models/qwen_hybrid/moe.cpp). Only the experts a token selected are read.
//
// Decode of one token, aligned widths: two CUDA-core streaming launches (see "Decode, one token" below).
//
// Decode (2 <= T <= 8), aligned widths: two tensor-core GEMV launches on the core of gemv.cuh, each reading the
// expert ids from the device (no host sync), each expert's weights read once even when several of the T tokens
// chose it. Assignment a = t * k + j is the "owner" of its expert when no earlier assignment chose the same one;
// only owners do work, for every token that chose the expert (the mma's 8 columns are the tokens).
//  1. gate/up: one block per (16-row tile of the intermediate width, assignment); a warp streams the tile's
//     gate rows and up rows together (shared activations), S warps share the hidden dimension. The epilogue
//     writes h[a][t] = c_t * silu(gate) * up for every token t, c_t being the sum of t's routing weights for
//     this expert (zero, and h zero, for tokens that did not choose it), and marks the owners.
//  2. down: one block per 16-row tile of the hidden width; the K dimension is the concatenation of all owners'
//     intermediate widths, shared by S warps, so the weighted sum over a token's experts is the mma's own sum.
// The block's shared expert (SharedExpert) rides along: one more row of gate/up blocks computes its
// activations sigmoid(logit) * silu(gate) * up from the router projection's columns, and its down matrix is
// one more segment of the down projection's concatenated K, so routed and shared outputs come out of the same
// sum (two kernels for the whole block after routing; a K split is added up by each tile's last block).
// Other widths take per (token, expert) scalar GEMVs: the gate/up kernel writes silu(g) * u; the down kernel
// gives each warp a few output rows, walks the token's k experts and accumulates weight * (down row · h).
//
// Prefill: assignments (token, slot) are grouped by expert on the device (a block per expert, its warps balloting
// over segments of the routing table in order, so the grouping keeps token order and is deterministic), cut into
// 64-row tiles, and multiplied by a grouped tensor-core GEMM (mma.sync bf16 x bf16 -> f32, expert_gemm_kernel)
// whose blocks look up their expert and rows in the tile table; the gate/up pass writes silu(gate) * up as bf16.
// The grid is sized by an upper bound of the tile count, so nothing is read back to the host. Outputs are per
// assignment; a final pass sums each token's k rows with their weights in a fixed order (no atomics).
// There, and on the scalar decode path, the shared expert is composed after the routed experts (SwiGLU, linear,
// gated add).
#include <algorithm>

#include "backend/cuda/gemv.cuh"
#include "backend/cuda/topk.cuh"

namespace ds4::cuda {
namespace {

constexpr int64_t kDecodeMaxT = 8;
constexpr int kWarps = 4;
constexpr int64_t kStageFloats = 12288;  // 48 KiB of staged activations per block

// ----------------------------------------------------------------------------------------------------------
// Routing: softmax, top-k with the CPU's selection, optional renormalisation.
// ----------------------------------------------------------------------------------------------------------
constexpr int kRouteThreads = 256;  // route_kernel's block size: it fixes the order of the softmax's sum

// The block's maximum of v (every thread gets it): the order does not matter for a maximum.
__device__ __forceinline__ float block_max(float v, float* red) {
  v = detail::warp_max(v);
  __syncthreads();  // red may still be read by a previous call
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < int(blockDim.x >> 5); w++) m = fmaxf(m, red[w]);
  return m;
}

// Lane j < K of a warp writes the token's j-th chosen expert (mine) and its weight (mp, its probability), the
// norm being the sequential sum over the chosen experts in selection order (route_kernel's thread 0 takes it so).
__device__ __forceinline__ void write_choice(int mine, float mp, int64_t K, bool renorm, int32_t* idx, float* weight) {
  const int lane = int(threadIdx.x & 31);
  float norm = 0.0f;
  for (int j = 0; j < int(K); j++) norm += __shfl_sync(0xffffffffu, mp, j);
  if (lane < K) {
    idx[lane] = mine;
    weight[lane] = renorm ? mp / norm : mp;
  }
}

// The general kernel, one block per token.
__global__ void __launch_bounds__(kRouteThreads)
    route_kernel(const float* logits, int64_t E, int64_t K, bool renorm, float* probs, detail::Item* replay,
                 int32_t* idx, float* weight) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[32];
  const int64_t t = blockIdx.x;
  const float* l = logits + t * E;
  float* p = probs + t * E;
  float mx = -INFINITY;
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x) mx = fmaxf(mx, l[e]);
  mx = block_max(mx, red);
  float sum = 0.0f;
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x) {
    const float v = expf(l[e] - mx);
    p[e] = v;
    sum += v;
  }
  sum = detail::block_sum(sum, red);
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x) p[e] /= sum;
  __syncthreads();  // probabilities written by every thread are read by all below
  int* chosen = reinterpret_cast<int*>(smem);
  void* topk_smem = smem + ((K * 4 + 15) / 16) * 16;
  if (K <= detail::kTopkSmallMax)
    detail::block_topk_small([p](int i) { return p[i]; }, int(E), int(K), topk_smem, replay + t * E, chosen);
  else
    detail::block_topk([p](int i) { return p[i]; }, int(E), int(K), topk_smem, replay + t * E, chosen);
  if (threadIdx.x == 0) {
    float norm = 0.0f;
    for (int64_t j = 0; j < K; j++) norm += p[chosen[j]];
    for (int64_t j = 0; j < K; j++) {
      idx[t * K + j] = chosen[j];
      weight[t * K + j] = renorm ? p[chosen[j]] / norm : p[chosen[j]];
    }
  }
}

// The decode kernel for E <= 1024 experts and K <= 32: one warp per token (kRouteWarps tokens per block), the
// token's row in registers (lane L holds experts L + 32 j), no shared memory, no block barrier, one pass over
// the logits. Its floats are route_kernel's bit for bit (same expressions; the maximum does not depend on
// order, and the sum is taken in route_kernel's order): there, thread 32 w + L sums experts 32 w + L + 256 m
// in m order, warp w adds its lanes by an xor butterfly, and block_sum adds the 8 warp totals by a butterfly
// over lanes 0..7 (zeros above). Lane L here plays thread 32 w + L of every warp w: its register j = w + 8 m
// is expert L + 32 j = (32 w + L) + 256 m, so part[w] collects thread 32 w + L's sum, then each part[w] takes
// warp w's butterfly and the totals the final one. The weights' norm is thread 0's sequential sum over the
// chosen experts in selection order, as there.
constexpr int kRouteWarps = 4;

template <int PER>
__global__ void __launch_bounds__(kRouteWarps * 32)
    route_warp_kernel(const float* logits, int64_t T, int64_t E, int64_t K, bool renorm, detail::Item* replay,
                      int32_t* idx, float* weight) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t t = int64_t(blockIdx.x) * kRouteWarps + (threadIdx.x >> 5);
  if (t >= T) return;  // the whole warp; nothing below synchronises the block
  const int lane = int(threadIdx.x & 31);
  const float* l = logits + t * E;
  float p[PER];
  float mx = -INFINITY;
#pragma unroll
  for (int j = 0; j < PER; j++) {
    const int64_t e = lane + 32 * j;
    p[j] = e < E ? l[e] : 0.0f;
    if (e < E) mx = fmaxf(mx, p[j]);
  }
  mx = detail::warp_max(mx);
  constexpr int kW = kRouteThreads / 32;
  float part[kW];
#pragma unroll
  for (int w = 0; w < kW; w++) part[w] = 0.0f;
#pragma unroll
  for (int j = 0; j < PER; j++)
    if (lane + 32 * j < E) {
      p[j] = expf(p[j] - mx);
      part[j % kW] += p[j];
    }
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kW; w++) {
    part[w] = detail::warp_sum(part[w]);
    if (lane == w) total = part[w];
  }
  const float sum = detail::warp_sum(total);
#pragma unroll
  for (int j = 0; j < PER; j++) p[j] /= sum;  // beyond E: ignored by the selection
  pdl.mark(0);  // trace builds: the softmax
  const int mine = detail::warp_topk_small<PER>(p, int(E), int(K), replay + t * E);
  pdl.mark(1);
  // Lane j < K fetches its expert's probability from the lane that holds it (register mine >> 5 of lane
  // mine & 31): one shuffle per register, keeping the one that matches. Lanes >= K (mine = -1) match none.
  float mp = 0.0f;
#pragma unroll
  for (int j = 0; j < PER; j++) {
    const float q = __shfl_sync(0xffffffffu, p[j], mine & 31);
    if (j == (mine >> 5)) mp = q;
  }
  write_choice(mine, mp, K, renorm, idx + t * K, weight + t * K);
}

// The decode kernel for 128 < E <= 1024 experts and K < kRouteBlockCand: one token per block of route_kernel's
// 256 threads, so the softmax is route_kernel's code and bits (thread i holds experts i + 256 m), spread over 8
// warps instead of one warp's 32 * PER values in a row (at 512 experts that one warp's chain of about 2400
// dependent instructions took 5.3 us on the H200). Each warp ranks its own keys (lane L of warp w holds experts
// 32 w + L + 256 m) and offers its K + 1 best; warp 0 ranks the 8 (K + 1) offers, which hold the block's K + 1
// best keys in order, and finishes as route_warp_kernel does (the straddle replay over the whole row, the weights
// and their norm in selection order): the same choice and the same floats.
constexpr int kRouteBlockCand = 16;  // keys each warp offers (K + 1 <= 16)

template <int PB>
__global__ void __launch_bounds__(kRouteThreads)
    route_block_kernel(const float* logits, int64_t E, int64_t K, bool renorm, detail::Item* replay, int32_t* idx,
                       float* weight) {
  constexpr int kW = kRouteThreads / 32;
  __shared__ float ps[kRouteThreads * PB];  // the token's probabilities, for the weights and the replay
  __shared__ float red[32];
  __shared__ unsigned long long offer[kW * kRouteBlockCand];
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t t = blockIdx.x;
  const int tid = int(threadIdx.x), lane = tid & 31, w = tid >> 5, n = int(E), k = int(K);
  const float* l = logits + t * E;
  float v[PB];
  float mx = -INFINITY;
#pragma unroll
  for (int m = 0; m < PB; m++) {
    const int e = tid + kRouteThreads * m;
    v[m] = e < n ? l[e] : 0.0f;
    if (e < n) mx = fmaxf(mx, v[m]);
  }
  // route_kernel's maximum and sum.
  mx = block_max(mx, red);
  float sum = 0.0f;
#pragma unroll
  for (int m = 0; m < PB; m++)
    if (tid + kRouteThreads * m < n) {
      v[m] = expf(v[m] - mx);
      sum += v[m];
    }
  sum = detail::block_sum(sum, red);
  unsigned long long key[PB];
#pragma unroll
  for (int m = 0; m < PB; m++) {
    const int e = tid + kRouteThreads * m;
    v[m] /= sum;
    if (e < n) ps[e] = v[m];
    key[m] = e < n ? detail::topk_key(v[m], e) : 0ull;
  }
  const int rounds = k < n ? k + 1 : k;
  detail::sort_keys_desc(key);
  unsigned long long last;
  const unsigned long long best = detail::warp_rank_keys(key, rounds, last);
  if (lane < kRouteBlockCand) offer[w * kRouteBlockCand + lane] = best;  // 0 past this warp's rounds
  __syncthreads();
  if (w != 0) return;
  constexpr int kOfferPer = kW * kRouteBlockCand / 32;
  unsigned long long ok[kOfferPer];
#pragma unroll
  for (int j = 0; j < kOfferPer; j++) ok[j] = offer[lane + 32 * j];
  detail::sort_keys_desc(ok);
  const unsigned long long rank = detail::warp_rank_keys(ok, rounds, last);
  const int mine = detail::chosen_from_ranks(rank, last, n, k, replay + t * E, [&](detail::Item* rp) {
    for (int i = lane; i < n; i += 32) rp[i] = detail::Item{ps[i], i};
  });
  const float mp = mine >= 0 ? ps[mine] : 0.0f;
  write_choice(mine, mp, K, renorm, idx + t * K, weight + t * K);
}

// ----------------------------------------------------------------------------------------------------------
// Decode, tensor-core path.
// ----------------------------------------------------------------------------------------------------------
constexpr int kGateUpU = 2;  // gate and up tiles: 8 weight loads per lane in flight
constexpr int kDownU = 4;

// Lane's view of expert e's gate tile (mt 0) and up tile (mt 1): rows g and g + 8 (clamped to I - 1).
struct GateUpSrc {
  const bf16 *ga, *gb, *ua, *ub;
  const float* xg;  // token g's activations, or null when token g did not choose the expert (or g >= T)
  int64_t H;
  int c8;
  __device__ __forceinline__ bool operator()(int64_t v, const bf16* (&a)[2], const bf16* (&b)[2],
                                             const float*& xp) const {
    const int64_t k = v * detail::kMmaStepK + c8;
    if (k >= H) return false;
    a[0] = ga + k, b[0] = gb + k, a[1] = ua + k, b[1] = ub + k;
    xp = xg ? xg + k : nullptr;
    return true;
  }
};

// The shared expert's SwiGLU for the fused down projection (SharedExpert's gate, up and logit; h [T][inter]).
struct SharedAct {
  const float *gate = nullptr, *up = nullptr, *logit = nullptr;
  int64_t ld = 0, inter = 0;
  float* h = nullptr;
};

// blockIdx.y = assignment a, blockIdx.x = 16-row tile of the intermediate width. hbuf: [T*k][T][I]. With a
// shared expert the grid has one more row of blocks (blockIdx.y == A = T * K), which writes the shared expert's
// activations h[t][i] = sigmoid(logit[t]) * (silu(gate[t][i]) * up[t][i]) grid-stride (a few thousand values,
// read from the router projection: no GEMV here).
__global__ void __launch_bounds__(detail::kMmaMaxSplit * 32, 1)
    gate_up_mma_kernel(const float* x, int T, int64_t H, int64_t I, const bf16* gate, const bf16* up,
                       const int32_t* idx, const float* weight, int64_t K, float* hbuf, int32_t* owner, bool xvec,
                       SharedAct sh) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  if (int64_t(blockIdx.y) == int64_t(T) * K) {  // the whole block, before any barrier
    const int64_t n = int64_t(T) * sh.inter, stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < n; q += stride) {
      const int64_t t = q / sh.inter, i = q % sh.inter, at = t * sh.ld + i;
      sh.h[q] = detail::sigmoid(sh.logit[t * sh.ld]) * (detail::silu(sh.gate[at]) * sh.up[at]);
    }
    return;
  }
  extern __shared__ __align__(16) float red[];  // [S][2][4][32] partial fragments
  __shared__ float scale[8];
  __shared__ int chosen[8];
  const int S = int(blockDim.x >> 5), s = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), g = lane >> 2;
  const int64_t a = blockIdx.y, e = idx[a];
  bool dup = false;
  for (int64_t q = threadIdx.x; q < a; q += blockDim.x) dup = dup || idx[q] == e;
  if (threadIdx.x < unsigned(T)) {
    const int64_t t = threadIdx.x;
    float c = 0.0f;
    int any = 0;
    for (int64_t j = 0; j < K; j++)
      if (idx[t * K + j] == e) c += weight[t * K + j], any = 1;
    scale[t] = c;
    chosen[t] = any;
  }
  dup = __syncthreads_or(dup) != 0;  // also publishes scale and chosen
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int mask = 0;
    for (int t = 0; t < T; t++) mask |= chosen[t] << t;
    owner[a] = dup ? 0 : mask;  // an owner's own token chose the expert: never 0
  }
  if (dup) return;  // the whole block: an earlier assignment computes this expert

  const int64_t i0 = int64_t(blockIdx.x) * 16;
  const bf16* ge = gate + e * I * H;
  const bf16* ue = up + e * I * H;
  GateUpSrc src;
  const int64_t ra = detail::imin(i0 + g, I - 1) * H, rb = detail::imin(i0 + g + 8, I - 1) * H;
  src.ga = ge + ra, src.gb = ge + rb, src.ua = ue + ra, src.ub = ue + rb;
  src.xg = g < T && chosen[g] ? x + int64_t(g) * H : nullptr;
  src.H = H;
  src.c8 = 8 * (lane & 3);
  float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
  const int64_t nsteps = (H + detail::kMmaStepK - 1) / detail::kMmaStepK;
  detail::mma_gemv_warp<2, kGateUpU>(s, nsteps, S, src, xvec, acc);
#pragma unroll
  for (int mt = 0; mt < 2; mt++)
#pragma unroll
    for (int i = 0; i < 4; i++) red[((s * 2 + mt) * 4 + i) * 32 + lane] = acc[mt][i];
  __syncthreads();
  for (int q = int(threadIdx.x); q < 128; q += int(blockDim.x)) {
    float gs = 0.0f, us = 0.0f;
    for (int w = 0; w < S; w++) gs += red[w * 256 + q], us += red[w * 256 + 128 + q];
    const int i = q >> 5, ln = q & 31;
    const int64_t row = i0 + detail::frag_row(i, ln);
    const int col = detail::frag_col(i, ln);
    if (col < T && row < I) hbuf[(a * T + col) * I + row] = chosen[col] ? scale[col] * (detail::silu(gs) * us) : 0.0f;
  }
}

// Lane's view of the concatenated K of the down projection: step v < rsteps is step v % spe of assignment
// v / spe, nothing when that assignment does not own its expert. owner[a]: bit t set when token t chose a's
// expert (0 for duplicates); the other tokens' activations are zeros, so they are not read. Steps from rsteps
// on (only with a shared expert) are the shared expert's: its down rows (width SI) against hsh [T][SI], every
// token's.
struct DownSrc {
  const bf16* down;
  const float* hbuf;
  const int32_t *idx, *owner;
  const bf16* sh_down;
  const float* hsh;
  int64_t H, I, SI, offa, offb;  // offa/offb: offsets of the tile's (clamped) rows g and g + 8 in an expert
  int64_t offsa, offsb;          // the same in the shared expert's down matrix
  uint32_t spe, rsteps, nsteps;  // steps per assignment, routed steps, steps in all (< 2^31: checked on the host)
  uint32_t vbase, vend;           // this block's K partition: steps [vbase, vend)
  int T, g, c8;
  __device__ __forceinline__ bool operator()(int64_t v, const bf16* (&a)[1], const bf16* (&b)[1],
                                             const float*& xp) const {
    v += vbase;
    if (v >= int64_t(vend)) return false;
    if (v >= int64_t(rsteps)) {
      const int64_t k = (v - int64_t(rsteps)) * detail::kMmaStepK + c8;
      if (k >= SI) return false;
      a[0] = sh_down + offsa + k;
      b[0] = sh_down + offsb + k;
      xp = g < T ? hsh + int64_t(g) * SI + k : nullptr;
      return true;
    }
    const uint32_t as = uint32_t(v) / spe;
    const int64_t k = int64_t(uint32_t(v) - as * spe) * detail::kMmaStepK + c8;
    const int mask = k < I ? owner[as] : 0;
    if (mask == 0) return false;
    const bf16* base = down + int64_t(idx[as]) * H * I + k;
    a[0] = base + offa;
    b[0] = base + offb;
    xp = (mask >> g) & 1 ? hbuf + (int64_t(as) * T + g) * I + k : nullptr;
    return true;
  }
};

// blockIdx.x = 16-row tile of the hidden width, blockIdx.y = partition of the concatenated K (per steps each);
// out[y][t][row] = that partition's sum over owners of down_e[row] · h[owner][t] (and, with sh_down, of its
// share of sh_down[row] · hsh[t]).
__global__ void __launch_bounds__(detail::kMmaMaxSplit * 32, 1)
    down_mma_kernel(const float* hbuf, int T, int64_t H, int64_t I, const bf16* down, const int32_t* idx,
                    const int32_t* owner, int64_t A, const bf16* sh_down, const float* hsh, int64_t SI, int64_t per,
                    float* part, int* counters, float* out) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) float red[];  // [S][4][32]
  const int S = int(blockDim.x >> 5), s = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int64_t r0 = int64_t(blockIdx.x) * 16;
  DownSrc src;
  src.down = down, src.hbuf = hbuf, src.idx = idx, src.owner = owner, src.sh_down = sh_down, src.hsh = hsh;
  src.H = H, src.I = I, src.SI = SI;
  src.spe = uint32_t((I + detail::kMmaStepK - 1) / detail::kMmaStepK);
  src.rsteps = uint32_t(A) * src.spe;
  src.nsteps = src.rsteps + (sh_down ? uint32_t((SI + detail::kMmaStepK - 1) / detail::kMmaStepK) : 0u);
  src.vbase = uint32_t(int64_t(blockIdx.y) * per);
  src.vend = uint32_t(detail::imin(int64_t(src.vbase) + per, int64_t(src.nsteps)));
  const int P = int(gridDim.y);
  float* dst = P > 1 ? part + int64_t(blockIdx.y) * T * H : out;
  src.offa = detail::imin(r0 + (lane >> 2), H - 1) * I;
  src.offb = detail::imin(r0 + (lane >> 2) + 8, H - 1) * I;
  src.offsa = detail::imin(r0 + (lane >> 2), H - 1) * SI;
  src.offsb = detail::imin(r0 + (lane >> 2) + 8, H - 1) * SI;
  src.T = T, src.g = lane >> 2, src.c8 = 8 * (lane & 3);
  float acc[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  detail::mma_gemv_warp<1, kDownU>(s, int64_t(src.vend) - int64_t(src.vbase), S, src, true, acc);
#pragma unroll
  for (int i = 0; i < 4; i++) red[(s * 4 + i) * 32 + lane] = acc[0][i];
  __syncthreads();
  detail::store_tile_sums(red, S, r0, T, H, dst);
  if (P > 1 && detail::last_block_of(counters + blockIdx.x, P)) detail::sum_tile_planes(part, P, r0, T, H, out);
}

// sh: the shared expert to fold in (null: routed experts only).
void launch_decode_mma(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                       const float* weight, int64_t K, float* out, const SharedExpert* sh) {
  const int64_t H = w.hidden, I = w.inter, A = T * K, SI = sh ? sh->inter : 0;
  detail::require(A + 1 < 65536, "moe_experts: too many assignments for decode");
  float* hbuf = ctx.scratch().take<float>(size_t(A * T * I));
  int32_t* owner = ctx.scratch().take<int32_t>(size_t(A));
  SharedAct act;
  if (sh) {
    act.gate = sh->gate, act.up = sh->up, act.logit = sh->logit, act.ld = sh->ld, act.inter = SI;
    act.h = ctx.scratch().take<float>(size_t(T * SI));
  }
  const int sms = ctx.sm_count();
  {
    constexpr size_t kRed = 256 * sizeof(float);
    static const detail::SplitOccupancy occ = detail::measure_split_occupancy(gate_up_mma_kernel, kRed);
    const int64_t tiles_i = (I + 15) / 16, nsteps = (H + detail::kMmaStepK - 1) / detail::kMmaStepK;
    detail::require(tiles_i < (int64_t(1) << 31), "moe_experts: intermediate width too large");
    // Every assignment gets blocks (duplicates leave at once); the owners' tiles are the real work. The shared
    // expert's row of blocks only does elementwise work and is not counted.
    const int S = detail::pick_split(occ, sms, tiles_i * A, nsteps, kGateUpU);
    detail::launch(ctx, gate_up_mma_kernel, dim3(unsigned(tiles_i), unsigned(A + (sh ? 1 : 0))), 32 * S, S * kRed,
                   x, int(T), H, I, w.gate, w.up, idx, weight, K, hbuf, owner, detail::aligned16(x), act);
    DS4_CUDA_CHECK_LAUNCH();
  }
  {
    constexpr size_t kRed = 128 * sizeof(float);
    static const detail::SplitOccupancy occ = detail::measure_split_occupancy(down_mma_kernel, kRed);
    const int64_t tiles_h = (H + 15) / 16, steps_sh = (SI + detail::kMmaStepK - 1) / detail::kMmaStepK,
                  nsteps = A * ((I + detail::kMmaStepK - 1) / detail::kMmaStepK) + steps_sh;
    detail::require(tiles_h < (int64_t(1) << 31) && nsteps < (int64_t(1) << 31), "moe_experts: expert too large");
    // 160 hidden tiles on 132 multiprocessors leave a tail: split the concatenated K into P partitions until
    // there are about four blocks per multiprocessor; each tile's last block adds the partials in partition order.
    int64_t P = std::min<int64_t>({(4 * int64_t(sms) + tiles_h - 1) / tiles_h, nsteps / 8, 16});
    if (P < 1) P = 1;
    const int64_t per = (nsteps + P - 1) / P;
    P = (nsteps + per - 1) / per;
    const int S = detail::pick_split(occ, sms, tiles_h * P, per, kDownU);
    detail::require(P == 1 || tiles_h <= Context::kCounters, "moe_experts: too many hidden tiles to split K");
    float* part = P > 1 ? ctx.scratch().take<float>(size_t(P * T * H)) : nullptr;
    detail::launch(ctx, down_mma_kernel, dim3(unsigned(tiles_h), unsigned(P)), 32 * S, S * kRed, hbuf, int(T), H, I,
                   w.down, idx, owner, A, sh ? sh->down : nullptr, act.h, SI, per, part, ctx.counters(), out);
    DS4_CUDA_CHECK_LAUNCH();
  }
}

// ----------------------------------------------------------------------------------------------------------
// Decode, up to 8 tokens: CUDA-core streaming (as linear.cu's gemv_rows_kernel), one token per grid row, so a
// token's output has the same bits whatever T is (speculative verification reproduces decoding). A token's k
// experts are distinct, so there is nothing to share between its assignments and no tensor core to feed; tokens
// that share an expert read it once each (rare at 512 experts; L2 often catches it).
//  1. gate/up: a warp per (assignment j, intermediate row i) streams gate row i and up row i of expert idx[j]
//     with the token's activations, and writes h[j * I + i] = weight[j] * (silu(gate) * up) (the tensor-core
//     path's expression). The blocks past the routed rows write the shared expert's activations after them,
//     h[K * I + i] = sigmoid(logit) * (silu(gate) * up), from the router projection.
//  2. down: the K routed experts' intermediate widths and the shared expert's are one concatenated K of h; a
//     row of the output is the dot of that h with the matching rows of each expert's down matrix, P warps per
//     row taking consecutive slices and adding them in order in shared memory (down_wide_kernel: 8 slices, a
//     persistent grid with h in registers, for a concatenated K of up to 8192; down_rows_kernel otherwise).
// ----------------------------------------------------------------------------------------------------------
constexpr int kRowWarps = 8;
// Chunks in flight per lane and row. Fewer chunks, more resident warps: gate/up with 4 chunks took 94 registers
// (2 blocks per multiprocessor, 3 waves of the 803 blocks), with 2 it takes 62 (4 blocks): 21.7 -> 19.0 us a
// launch (1 chunk held to 48 registers, 5 blocks: slower, 767 against 781 tokens/s). The down pass: 2 chunks held
// to 48 registers, so 5 blocks per multiprocessor take the 640 blocks of the Flash-Next shape in one wave (with 4
// chunks and 4 blocks, 64 registers and a few spilled, a second wave of 112 blocks): 8-layer decode 757.8 ->
// 780.7 tokens/s (3 interleaved rounds, same call).
constexpr int kRowsGateUpU = 2;
constexpr int kRowsDownU = 2, kRowsDownBlocksPerSm = 5;

// R rows per warp (rows q0 .. q0 + R - 1 of one assignment: I % R == 0): each row's chunks are summed in the same
// order as with one row per warp (the same bits); R = 2 halves the grid (402 blocks at the Flash-Next shape: one
// wave at 4 blocks per multiprocessor, against 1.5 waves of 803 blocks).
template <int U, int R>
__global__ void __launch_bounds__(kRowWarps * 32)
    gate_up_rows_kernel(const float* x, int64_t H, int64_t I, const bf16* gate, const bf16* up, const int32_t* idx,
                        const float* weight, int64_t K, float* h, SharedAct sh, int64_t routed_blocks) {
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  // Token blockIdx.y: its activations, routing, h row and shared-expert columns (a token's work is the same
  // whatever the number of tokens).
  const int64_t tok = blockIdx.y;
  x += tok * H, idx += tok * K, weight += tok * K, h += tok * (K * I + sh.inter);
  if (sh.inter) sh.gate += tok * sh.ld, sh.up += tok * sh.ld, sh.logit += tok * sh.ld;
  if (int64_t(blockIdx.x) >= routed_blocks) {  // the shared expert's activations: elementwise
    [[maybe_unused]] const auto pdl = detail::pdl_enter();
    const int64_t i = (int64_t(blockIdx.x) - routed_blocks) * blockDim.x + threadIdx.x;
    if (i < sh.inter) h[K * I + i] = detail::sigmoid(sh.logit[0]) * (detail::silu(sh.gate[i]) * sh.up[i]);
    return;
  }
  const int64_t q0 = (int64_t(blockIdx.x) * kRowWarps + warp) * R;  // j * I + i0
  if (q0 >= K * I) {
    [[maybe_unused]] const auto pdl = detail::pdl_enter();
    return;
  }
  const int64_t j = q0 / I, i0 = q0 % I;
  [[maybe_unused]] const auto pdl = detail::pdl_enter();  // idx is written by the routing kernel
  const int64_t e = idx[j];
  const bf16* rg[R];
  const bf16* ru[R];
#pragma unroll
  for (int r = 0; r < R; r++) rg[r] = gate + (e * I + i0 + r) * H, ru[r] = up + (e * I + i0 + r) * H;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const int64_t chunks = H / 8;
  float g[R], u[R];
#pragma unroll
  for (int r = 0; r < R; r++) g[r] = 0.0f, u[r] = 0.0f;
  for (int64_t c0 = lane; c0 < chunks; c0 += 32 * U) {
    uint4 wg[U][R], wu[U][R];
    float4 xa[U], xb[U];
    // Unconditional loads (past the end: chunk c0 again, dropped below), so all of them are in flight at once:
    // measured faster here than the conditional form (two rows per warp; 26.7 -> 22.2 us at the Flash-Next shape).
#pragma unroll
    for (int v = 0; v < U; v++) {
      const int64_t c = c0 + 32 * v < chunks ? c0 + 32 * v : c0;
#pragma unroll
      for (int r = 0; r < R; r++) wg[v][r] = detail::ld_stream(rg[r] + c * 8), wu[v][r] = detail::ld_stream(ru[r] + c * 8);
      xa[v] = __ldg(x4 + 2 * c);
      xb[v] = __ldg(x4 + 2 * c + 1);
    }
#pragma unroll
    for (int v = 0; v < U; v++)
      if (c0 + 32 * v < chunks)
#pragma unroll
        for (int r = 0; r < R; r++) {
          g[r] += detail::dot8(wg[v][r], xa[v], xb[v]);
          u[r] += detail::dot8(wu[v][r], xa[v], xb[v]);
        }
  }
#pragma unroll
  for (int r = 0; r < R; r++) {
    g[r] = detail::warp_sum(g[r]);
    u[r] = detail::warp_sum(u[r]);
    if (lane == 0) h[q0 + r] = weight[j] * (detail::silu(g[r]) * u[r]);
  }
}

// Rows r0 .. r0 + R - 1 of the output (R rows per warp group): the concatenated K is chunks of 8 of h; chunk
// c < K * I8 is expert slot c / I8's, the rest the shared expert's. The R rows of a chunk are consecutive rows of the
// same matrix and share the chunk of h, so R = 2 (launch_decode_rows) keeps 2 weight loads in flight per h load.
template <int U, int R, int MinBlocks>
__global__ void __launch_bounds__(kRowWarps * 32, MinBlocks)
    down_rows_kernel(const float* h, int64_t H, int64_t I, const bf16* down, const int32_t* idx, int64_t K,
                     const bf16* sh_down, int64_t SI, float* out, int P, float* streams, const float* inject, int S) {
  const int64_t tok = blockIdx.y;  // the token: its h row, routing and output row (or its streams)
  h += tok * (K * I + SI), idx += tok * K;
  if (streams) streams += tok * S * H, inject += tok * S;
  else out += tok * H;
  __shared__ float red[kRowWarps][R];
  __shared__ int64_t base[64];  // expert slot j's down matrix offset, idx[j] * H * I (K <= 64)
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int64_t r0 = (int64_t(blockIdx.x) * (kRowWarps / P) + warp / P) * R;
  const int64_t I8 = I / 8, routed = K * I8, chunks = routed + SI / 8;
  const int64_t per = (chunks + P - 1) / P, c_begin = (warp % P) * per, c_end = detail::imin(c_begin + per, chunks);
  int64_t rr[R];  // rows past H: row H - 1, read but never written
#pragma unroll
  for (int q = 0; q < R; q++) rr[q] = detail::imin(r0 + q, H - 1);
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const bool writer = lane == 0 && warp % P == 0;
  __shared__ float sink_slots[kRowWarps][R][2 * detail::RowSink::kPre];
  detail::RowSink sink[R];
#pragma unroll
  for (int q = 0; q < R; q++) {
    sink[q].slot = sink_slots[warp][q];
    if (writer && r0 + q < H) sink[q].load(streams, inject, S, H, r0 + q);
  }
  for (int q = int(threadIdx.x); q < int(K); q += int(blockDim.x)) base[q] = int64_t(idx[q]) * H * I;
  __syncthreads();
  const float4* h4 = reinterpret_cast<const float4*>(h);
  float acc[R];
#pragma unroll
  for (int q = 0; q < R; q++) acc[q] = 0.0f;
  // The lane's chunk c = c0 + 32 v lies in expert slot j = c / I8 at chunk o = c % I8 of its row; both advance
  // with c (a 64-bit division per load made this kernel instruction-bound: 21.7 -> 18.3 us without them).
  int64_t j = (c_begin + lane) / I8, o = (c_begin + lane) - j * I8;
  for (int64_t c0 = c_begin + lane; c0 < c_end; c0 += 32 * U) {
    uint4 w[U][R];
    float4 xa[U], xb[U];
    // Conditional loads, as linear.cu's rows kernel.
#pragma unroll
    for (int v = 0; v < U; v++) {
      const int64_t c = c0 + 32 * v;
      const bool in = c < c_end;
      const bf16* p = nullptr;
      int64_t stride = 0;
      if (in) {
        if (c < routed) p = down + base[j] + rr[0] * I + o * 8, stride = I;
        else p = sh_down + rr[0] * SI + (c - routed) * 8, stride = SI;
      }
      for (o += 32; o >= I8 && j < K; o -= I8) j++;
#pragma unroll
      for (int q = 0; q < R; q++) w[v][q] = in ? detail::ld_stream(p + (rr[q] - rr[0]) * stride) : make_uint4(0, 0, 0, 0);
      xa[v] = in ? __ldg(h4 + 2 * c) : make_float4(0, 0, 0, 0);
      xb[v] = in ? __ldg(h4 + 2 * c + 1) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int v = 0; v < U; v++)
#pragma unroll
      for (int q = 0; q < R; q++) acc[q] += detail::dot8(w[v][q], xa[v], xb[v]);
  }
#pragma unroll
  for (int q = 0; q < R; q++) acc[q] = detail::warp_sum(acc[q]);
  if (P == 1) {
#pragma unroll
    for (int q = 0; q < R; q++)
      if (writer && r0 + q < H) sink[q].put(out, streams, inject, S, H, r0 + q, acc[q]);
    return;
  }
  if (lane == 0)
#pragma unroll
    for (int q = 0; q < R; q++) red[warp][q] = acc[q];
  __syncthreads();
  if (writer)
#pragma unroll
    for (int q = 0; q < R; q++) {
      if (r0 + q >= H) continue;
      float sum = 0.0f;
      for (int k = 0; k < P; k++) sum += red[warp + k][q];
      sink[q].put(out, streams, inject, S, H, r0 + q, sum);
    }
}

// The down pass as wide rows (gemv.cuh: h in registers; by default the next row's weights in registers, as the
// shared-memory ring measured slower here, DS4_CUDA_DOWN_RING): the K routed experts' intermediate widths and the
// shared expert's are the concatenated K of each output row. A lane finds its chunks' expert matrices once: the
// routing is written two kernels before this one, so before the wait, as are the first rows' weights. H200 A/B
// (8 layers / 48 layers, 64 experts): +0.5 % / +1.2 % over down_rows_kernel (other slices: other bits, the same
// for any T).
static_assert(kRowWarps == detail::kWideWarps, "the down pass's blocks are wide_rows' blocks");
template <int D>
__global__ void __launch_bounds__(kRowWarps * 32, detail::kWideBlocksPerSm)
    down_wide_kernel(const float* h, int64_t H, int64_t I, const bf16* down, const int32_t* idx, int64_t K,
                     const bf16* sh_down, int64_t SI, float* out, float* streams, const float* inject, int S,
                     bool prewait) {
  __shared__ detail::WideShared shared;
  extern __shared__ __align__(16) uint4 ring[];  // D > 0: [D][kWideJ][threads]
  const int64_t tok = blockIdx.y;  // the token: its h row, routing and output row (or its streams)
  h += tok * (K * I + SI), idx += tok * K;
  if (streams) streams += tok * S * H, inject += tok * S;
  else out += tok * H;
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int64_t I8 = I / 8, routed = K * I8, chunks = routed + SI / 8;
  const int64_t per = (chunks + kRowWarps - 1) / kRowWarps, c_begin = warp * per,
                c_end = detail::imin(c_begin + per, chunks);
  // Chunk j of the lane: row 0 of its expert's down matrix at that chunk, and the matrix's row stride.
  const bf16* cp[detail::kWideJ];
  int stride[detail::kWideJ];  // I or SI (launch_decode_rows bounds them)
#pragma unroll
  for (int j = 0; j < detail::kWideJ; j++) {
    const int64_t c = c_begin + lane + 32 * j;
    if (c >= c_end) cp[j] = nullptr, stride[j] = 0;
    else if (c < routed) cp[j] = down + int64_t(idx[c / I8]) * H * I + (c % I8) * 8, stride[j] = int(I);
    else cp[j] = sh_down + (c - routed) * 8, stride[j] = int(SI);
  }
  detail::wide_rows<D>(h, c_begin, c_end, cp, stride, H, out, streams, inject, S, shared, ring, prewait);
}

// DS4_CUDA_MOE_DOWN_WIDE=0: the down pass takes down_rows_kernel (other slices: other bits, the same for any T).
bool down_wide_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_MOE_DOWN_WIDE");
  return on;
}

// 1 <= T <= kDecodeMaxT with 16-byte aligned weights and activations and widths that are multiples of 8 (shared:
// null or its width too). Each token takes its own blocks (grid y), so its output does not depend on T.
void launch_decode_rows(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                        const float* weight, int64_t K, const RowsOut& out, const SharedExpert* sh) {
  const int64_t H = w.hidden, I = w.inter, SI = sh ? sh->inter : 0;
  float* h = ctx.scratch().take<float>(size_t(T * (K * I + SI)));
  SharedAct act;
  if (sh) act.gate = sh->gate, act.up = sh->up, act.logit = sh->logit, act.ld = sh->ld, act.inter = SI;
  // Two rows per warp with one chunk each in flight (the same 4 loads per lane as one row with 2 chunks): half the
  // blocks, so the Flash-Next shape's gate/up is one wave (A/B on the H200: 8 layers 781 -> 787 tok/s, 48 layers
  // 179.6 -> 181.6). Odd intermediate sizes keep one row per warp.
  const int R = I % 2 == 0 ? 2 : 1;
  const int64_t routed_blocks = (K * I + kRowWarps * R - 1) / (kRowWarps * R), shared_blocks = (SI + 255) / 256;
  detail::launch(ctx, R == 2 ? gate_up_rows_kernel<1, 2> : gate_up_rows_kernel<kRowsGateUpU, 1>,
                 dim3(unsigned(routed_blocks + shared_blocks), unsigned(T)), kRowWarps * 32, 0, x, H, I, w.gate, w.up,
                 idx, weight, K, h, act, routed_blocks);
  DS4_CUDA_CHECK_LAUNCH();
  const int64_t chunks = (K * I + SI) / 8;
  if (chunks <= detail::kWideMaxK / 8 && I < (int64_t(1) << 30) && SI < (int64_t(1) << 30) &&
      down_wide_enabled()) {
    const dim3 grid(unsigned(detail::wide_grid(ctx.sm_count(), H)), unsigned(T));
    detail::with_ring_depth(detail::down_ring_depth(), [&](auto D) {
      const size_t smem = detail::ring_bytes(D.value, detail::kWideJ);
      detail::allow_smem(ctx, down_wide_kernel<D.value>, smem);
      detail::launch(ctx, down_wide_kernel<D.value>, grid, kRowWarps * 32, smem, h, H, I, w.down, idx, K,
                     sh ? sh->down : nullptr, SI, out.y, out.streams, out.inject, int(out.S), detail::wide_prewait());
    });
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
  // One resident wave of at most about 64 warps per multiprocessor (for one token), K sliced over up to 8 warps
  // per row: a function of the shape only, never of T.
  const int64_t want = 64 * int64_t(ctx.sm_count());
  int P = 1;
  while (P < kRowWarps && H * 2 * P <= want && chunks / (2 * P) >= 32) P *= 2;
  // Two rows per group of 2 P warps (the same grid), one chunk each in flight: 2 weight loads per chunk of h instead
  // of 2 chunks of one row. A/B on the H200, two calls: 8 layers +1.2 % and +0.5 %, 48 layers +0.6 % and +1.1 %
  // (4 rows: slower). Its slices of K are twice as short: other sums, the same for any T.
  const int RW = 2 * P <= kRowWarps ? 2 : 1;
  const dim3 grid(detail::blocks_for(H, int64_t(kRowWarps / (RW * P)) * RW), unsigned(T));
  auto launch_down = [&](auto kernel) {
    detail::launch(ctx, kernel, grid, kRowWarps * 32, 0, h, H, I, w.down, idx, K, sh ? sh->down : nullptr, SI, out.y,
                   RW * P, out.streams, out.inject, int(out.S));
  };
  if (RW == 2) launch_down(down_rows_kernel<1, 2, kRowsDownBlocksPerSm>);
  else launch_down(down_rows_kernel<kRowsDownU, 1, kRowsDownBlocksPerSm>);
  DS4_CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------------------------------------
// Decode, scalar fallback: gate/up GEMV per assignment a = t * K + j (blockIdx.y), R rows of gate and of up
// per warp.
// ----------------------------------------------------------------------------------------------------------
template <int R>
__global__ void __launch_bounds__(kWarps * 32)
    gate_up_gemv_kernel(const float* x, int64_t H, int64_t I, const bf16* gate, const bf16* up, const int32_t* idx,
                        int64_t K, float* hbuf, int64_t kc) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) float xs[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t a = blockIdx.y, t = a / K, e = idx[a];
  const int64_t row0 = (int64_t(blockIdx.x) * kWarps + warp) * R;
  const bf16* gbase = gate + e * I * H;
  const bf16* ubase = up + e * I * H;
  float acc[2 * R][1];
#pragma unroll
  for (int r = 0; r < 2 * R; r++) acc[r][0] = 0.0f;
  for (int64_t k0 = 0; k0 < H; k0 += kc) {
    const int64_t len = detail::imin(kc, H - k0);
    __syncthreads();
    detail::stage_planes(xs, x + t * H + k0, len, kc);
    __syncthreads();
    const bf16* rows[2 * R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int64_t row = detail::imin(row0 + r, I - 1);
      rows[r] = gbase + row * H + k0;
      rows[R + r] = ubase + row * H + k0;
    }
    detail::warp_dot_rows_scalar<2 * R, 1>(rows, xs, kc, len, acc);
  }
#pragma unroll
  for (int r = 0; r < R; r++) {
    const float g = detail::warp_sum(acc[r][0]), u = detail::warp_sum(acc[R + r][0]);
    if (lane == 0 && row0 + r < I) hbuf[a * I + row0 + r] = detail::silu(g) * u;
  }
}

// Decode, scalar fallback: down projection and weighted sum over the token's K experts; blockIdx.y is the token.
template <int R>
__global__ void __launch_bounds__(kWarps * 32)
    down_gemv_kernel(const float* hbuf, int64_t H, int64_t I, const bf16* down, const int32_t* idx,
                     const float* weight, int64_t K, float* out, int64_t kc) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) float hs[];  // [K][kc]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t t = blockIdx.y;
  const int64_t row0 = (int64_t(blockIdx.x) * kWarps + warp) * R;
  float total[R];
#pragma unroll
  for (int r = 0; r < R; r++) total[r] = 0.0f;
  for (int64_t k0 = 0; k0 < I; k0 += kc) {
    const int64_t len = detail::imin(kc, I - k0);
    __syncthreads();
    for (int64_t j = 0; j < K; j++) detail::stage_planes(hs + j * kc, hbuf + (t * K + j) * I + k0, len, kc);
    __syncthreads();
    for (int64_t j = 0; j < K; j++) {
      const int64_t e = idx[t * K + j];
      const float w = weight[t * K + j];
      const bf16* rows[R];
#pragma unroll
      for (int r = 0; r < R; r++) rows[r] = down + e * H * I + detail::imin(row0 + r, H - 1) * I + k0;
      float acc[R][1];
#pragma unroll
      for (int r = 0; r < R; r++) acc[r][0] = 0.0f;
      detail::warp_dot_rows_scalar<R, 1>(rows, hs + j * kc, kc, len, acc);
#pragma unroll
      for (int r = 0; r < R; r++) total[r] = fmaf(w, acc[r][0], total[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; r++) {
    const float v = detail::warp_sum(total[r]);
    if (lane == 0 && row0 + r < H) out[t * H + row0 + r] = v;
  }
}

void launch_decode_scalar(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                          const float* weight, int64_t K, float* out) {
  constexpr int R = 2;
  const int64_t H = w.hidden, I = w.inter;
  detail::require_supported(K <= kStageFloats / 8, "moe_experts: too many experts per token");
  float* hbuf = ctx.scratch().take<float>(size_t(T * K * I));
  {
    const int64_t kc = detail::imin(kStageFloats / 8 * 8, (H + 7) / 8 * 8);
    const dim3 grid(detail::blocks_for(I, kWarps * R), unsigned(T * K));
    const size_t smem = size_t(kc) * sizeof(float);
    detail::launch(ctx, gate_up_gemv_kernel<R>, grid, kWarps * 32, smem, x, H, I, w.gate, w.up, idx, K, hbuf, kc);
    DS4_CUDA_CHECK_LAUNCH();
  }
  {
    const int64_t kc = detail::imin((kStageFloats / K) / 8 * 8, (I + 7) / 8 * 8);
    const dim3 grid(detail::blocks_for(H, kWarps * R), unsigned(T));
    const size_t smem = size_t(K * kc) * sizeof(float);
    detail::launch(ctx, down_gemv_kernel<R>, grid, kWarps * 32, smem, hbuf, H, I, w.down, idx, weight, K, out, kc);
    DS4_CUDA_CHECK_LAUNCH();
  }
}

// ----------------------------------------------------------------------------------------------------------
// Prefill: grouping, tile table, grouped GEMM, SwiGLU, weighted combine.
// ----------------------------------------------------------------------------------------------------------
constexpr int kBM = 64;  // rows of an expert tile

// Block e collects the assignments routed to expert e, in assignment order: list[e * T + i], counts[e]. Each warp
// scans one contiguous segment of the assignments twice: it counts its matches, then writes them after the earlier
// warps' (a warp per expert walking all of them took 143 us per call for 2048 tokens x 10 at 512 experts).
constexpr int kGroupThreads = 256;
__global__ void __launch_bounds__(kGroupThreads) group_kernel(const int32_t* idx, int64_t A, int64_t T, int32_t* list,
                                                              int32_t* counts) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  constexpr int kW = kGroupThreads / 32;
  __shared__ int warp_count[kW];
  const int64_t e = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t seg = (A + kW - 1) / kW, b0 = int64_t(warp) * seg, b1 = detail::imin(A, b0 + seg);
  int cnt = 0;
  for (int64_t base = b0; base < b1; base += 32) {
    const int64_t a = base + lane;
    cnt += __popc(__ballot_sync(0xffffffffu, a < b1 && idx[a] == e));
  }
  if (lane == 0) warp_count[warp] = cnt;
  __syncthreads();
  int out = 0;
  for (int w = 0; w < warp; w++) out += warp_count[w];
  for (int64_t base = b0; base < b1; base += 32) {
    const int64_t a = base + lane;
    const bool mine = a < b1 && idx[a] == e;
    const unsigned m = __ballot_sync(0xffffffffu, mine);
    if (mine) list[e * T + out + __popc(m & ((1u << lane) - 1u))] = int32_t(a);
    out += __popc(m);
  }
  if (threadIdx.x == kGroupThreads - 1) counts[e] = out;  // the last warp's end is the expert's count
}

// Cuts each expert's rows into 64-row tiles, in expert order: one block, thread t takes experts t, t + 1024, ...
// in rounds of 1024; a round's tile counts are scanned across the block and offset by the rounds before.
constexpr int kTileThreads = 1024;
__global__ void __launch_bounds__(kTileThreads) tiles_kernel(const int32_t* counts, int64_t E, int32_t* tile_e,
                                                             int32_t* tile_r0, int32_t* num_tiles) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  __shared__ int warp_sum[kTileThreads / 32];
  __shared__ int round_base;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) round_base = 0;
  for (int64_t e0 = 0; e0 < E; e0 += kTileThreads) {
    const int64_t e = e0 + tid;
    const int n = e < E ? (counts[e] + kBM - 1) / kBM : 0;
    int incl = n;  // inclusive scan within the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    __syncthreads();  // round_base of the round before is final; warp_sum is free
    if (lane == 31) warp_sum[warp] = incl;
    __syncthreads();
    int before = round_base;
    for (int w = 0; w < warp; w++) before += warp_sum[w];
    const int first = before + incl - n;
    for (int j = 0; j < n; j++) {
      tile_e[first + j] = int32_t(e);
      tile_r0[first + j] = j * kBM;
    }
    __syncthreads();  // every thread has read round_base
    if (tid == kTileThreads - 1) round_base = before + incl;
  }
  __syncthreads();
  if (tid == 0) *num_tiles = round_base;
}

// The grouped GEMM of the experts on the tensor cores (mma.sync, mma.cuh). A block computes one 64-row tile of
// one expert's assignments against 128 weight rows: for gate/up, 64 rows of gate and the same 64 rows of up, so
// each warp holds gate and up of the same outputs and writes h = silu(gate) * up as bf16 directly; for down,
// 128 rows of the output width, written as float32 per assignment. K advances 64 columns a stage through three
// stages of shared memory filled by cp.async (a stage's rows land while the one before is multiplied). A lane
// loads 8 consecutive K elements of rows g and g + 8 of an A tile and of row g of a B tile: the operands of two
// mma, the K positions relabelled (as in gemv.cuh). Rows of a stage are 8 chunks of 16 bytes, the chunks of odd
// rows swapped by halves, so a quarter-warp's reads (two rows, four chunks) fall on distinct banks. Chunks that
// are not whole 16-byte runs inside K (K not a multiple of 8, misaligned rows, the K tail) are loaded element by
// element, zeros past K. Rows past a tile's assignments read its first row, and their outputs are dropped.
constexpr int kGN = 128;   // weight rows per block
constexpr int kGK = 64;    // K per stage
constexpr int kGStages = 3;
// Warps: 2 along the tile's rows x kWN along its 128 weight rows (kWN = 4: 8 warps of 4 n-tiles, half the
// accumulators each, the default; 2: 4 warps of 8 n-tiles, DS4_CUDA_EXPERT_WARPS8=0). Each output is the same chain
// of mma either way, so the same bits. H200, prefill of 4096 tokens, two runs each: 8 layers 40.4k / 40.0k tok/s
// with 4 warps, 42.0k / 41.8k with 8 (+4.2 %); 48 layers (64 experts) 8358 / 8375 against 8687 / 8621 (+3.4 %).
template <int kWN>
__host__ __device__ constexpr int gemm_threads() { return 64 * kWN; }
constexpr int kGChunks = kGK / 8;
constexpr size_t kGStageChunks = size_t(kBM + kGN) * kGChunks;
constexpr size_t kGSmem = kGStages * kGStageChunks * 16;

struct ExpertGemm {
  const bf16* a;  // [*, lda]: token activations (row a / a_div) or SwiGLU outputs (row a)
  int64_t lda, a_div;
  const bf16* w0;  // [E][N][Kd]: gate, or down
  const bf16* w1;  // [E][N][Kd]: up (gate/up only)
  void* out;       // gate/up: bf16 h [A][N]; down: float y [A][N]
  int64_t N, Kd, T;
  const int32_t *list, *counts, *tile_e, *tile_r0, *num_tiles;
  bool vec;  // Kd % 8 == 0 and 16-byte aligned bases: whole chunks by cp.async
};

__device__ __forceinline__ int gemm_chunk(int r, int ch) { return r * kGChunks + (ch ^ ((r & 1) << 2)); }

// 16 bytes of row src at column k into dst: cp.async when the chunk is whole, else element by element.
__device__ __forceinline__ void gemm_load(uint4* dst, const bf16* src, int64_t k, int64_t Kd, bool vec) {
  if (vec && k + 8 <= Kd) {
    detail::cp_async<16>(dst, src + k);
    return;
  }
  alignas(16) bf16 v[8];
#pragma unroll
  for (int q = 0; q < 8; q++) v[q] = k + q < Kd ? src[k + q] : __float2bfloat16_rn(0.0f);
  *dst = *reinterpret_cast<const uint4*>(v);
}

template <bool kGateUp, int kWN>
__global__ void __launch_bounds__(gemm_threads<kWN>()) expert_gemm_kernel(ExpertGemm g) {
  constexpr int kGThreads = gemm_threads<kWN>(), kRowsPass = kGThreads / kGChunks;
  constexpr int NT = 16 / kWN;  // n-tiles of a warp (gate/up: NT / 2 of gate, the same of up)
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  if (int(blockIdx.y) >= *g.num_tiles) return;
  extern __shared__ uint4 gemm_smem[];  // stage s: A rows then B rows, kGChunks chunks each
  __shared__ int32_t arow[kBM];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gr = lane >> 2, gc = lane & 3;
  const int e = g.tile_e[blockIdx.y], r0 = g.tile_r0[blockIdx.y];
  const int rows_valid = min(kBM, g.counts[e] - r0);
  const int64_t n0 = int64_t(blockIdx.x) * (kGateUp ? kGN / 2 : kGN);
  if (tid < kBM) arow[tid] = tid < rows_valid ? g.list[int64_t(e) * g.T + r0 + tid] : -1;
  __syncthreads();

  // The loader's rows: A rows tid / 8 + kRowsPass j, B rows tid / 8 + kRowsPass j, chunk tid % 8 of each.
  constexpr int kALoads = kBM * kGChunks / kGThreads, kBLoads = kGN * kGChunks / kGThreads;
  const int lch = tid % kGChunks, lrow = tid / kGChunks;
  const bf16* asrc[kALoads];
  const bf16* bsrc[kBLoads];
#pragma unroll
  for (int j = 0; j < kALoads; j++) {
    const int r = lrow + kRowsPass * j, a = arow[r] >= 0 ? arow[r] : arow[0];
    asrc[j] = g.a + int64_t(a / g.a_div) * g.lda;
  }
#pragma unroll
  for (int j = 0; j < kBLoads; j++) {
    const int r = lrow + kRowsPass * j;
    const bool up = kGateUp && r >= kGN / 2;
    const int64_t n = detail::imin(n0 + (up ? r - kGN / 2 : r), g.N - 1);
    bsrc[j] = (up ? g.w1 : g.w0) + (int64_t(e) * g.N + n) * g.Kd;
  }
  const int nk = int((g.Kd + kGK - 1) / kGK);
  auto issue = [&](int kt) {
    if (kt < nk) {
      uint4* st = gemm_smem + size_t(kt % kGStages) * kGStageChunks;
      const int64_t k = int64_t(kt) * kGK + 8 * lch;
#pragma unroll
      for (int j = 0; j < kALoads; j++) gemm_load(st + gemm_chunk(lrow + kRowsPass * j, lch), asrc[j], k, g.Kd, g.vec);
#pragma unroll
      for (int j = 0; j < kBLoads; j++)
        gemm_load(st + gemm_chunk(kBM + lrow + kRowsPass * j, lch), bsrc[j], k, g.Kd, g.vec);
    }
    detail::commit_async();  // empty groups too: "at most kGStages - 2 in flight" then means stage kt landed
  };
#pragma unroll
  for (int s = 0; s < kGStages - 1; s++) issue(s);

  // Warp tile: rows 32 wm .. + 32 (2 m-tiles), NT n-tiles of B rows (gate/up: NT / 2 of gate, the same of up).
  const int wm = warp & 1, wn = warp >> 1;
  constexpr int kHalfCols = kGN / 2 / kWN, kCols = kGN / kWN;  // gate (or up) columns, down columns of a warp
  auto brow = [&](int j) {
    return kGateUp ? (j < NT / 2 ? kHalfCols * wn + 8 * j : kGN / 2 + kHalfCols * wn + 8 * (j - NT / 2)) : kCols * wn + 8 * j;
  };
  float acc[2][NT][4];
#pragma unroll
  for (int mi = 0; mi < 2; mi++)
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
      for (int i = 0; i < 4; i++) acc[mi][j][i] = 0.0f;

  for (int kt = 0; kt < nk; kt++) {
    detail::wait_async<kGStages - 2>();
    __syncthreads();  // stage kt visible; every warp is done with stage kt - 1, which the next issue refills
    issue(kt + kGStages - 1);
    const uint4* st = gemm_smem + size_t(kt % kGStages) * kGStageChunks;
#pragma unroll
    for (int s = 0; s < kGK / 32; s++) {
      uint4 alo[2], ahi[2];
#pragma unroll
      for (int mi = 0; mi < 2; mi++) {
        alo[mi] = st[gemm_chunk(32 * wm + 16 * mi + gr, 4 * s + gc)];
        ahi[mi] = st[gemm_chunk(32 * wm + 16 * mi + gr + 8, 4 * s + gc)];
      }
#pragma unroll
      for (int j = 0; j < NT; j++) {
        const uint4 b = st[gemm_chunk(kBM + brow(j) + gr, 4 * s + gc)];
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
          detail::mma_bf16_16816(acc[mi][j], alo[mi].x, ahi[mi].x, alo[mi].y, ahi[mi].y, b.x, b.y);
          detail::mma_bf16_16816(acc[mi][j], alo[mi].z, ahi[mi].z, alo[mi].w, ahi[mi].w, b.z, b.w);
        }
      }
    }
  }
  detail::wait_all_async();

  // Lane (gr, gc) holds, per m-tile and n-tile, rows gr and gr + 8 at columns 2 gc and 2 gc + 1.
#pragma unroll
  for (int mi = 0; mi < 2; mi++)
#pragma unroll
    for (int half = 0; half < 2; half++) {
      const int a = arow[32 * wm + 16 * mi + gr + 8 * half];
      if (a < 0) continue;
      if constexpr (kGateUp) {
        bf16* h = static_cast<bf16*>(g.out) + int64_t(a) * g.N;
#pragma unroll
        for (int j = 0; j < NT / 2; j++) {
          const int64_t n = n0 + kHalfCols * wn + 8 * j + 2 * gc;
#pragma unroll
          for (int q = 0; q < 2; q++)
            if (n + q < g.N)
              h[n + q] =
                  __float2bfloat16_rn(detail::silu(acc[mi][j][2 * half + q]) * acc[mi][j + NT / 2][2 * half + q]);
        }
      } else {
        float* y = static_cast<float*>(g.out) + int64_t(a) * g.N;
#pragma unroll
        for (int j = 0; j < NT; j++) {
          const int64_t n = n0 + kCols * wn + 8 * j + 2 * gc;
#pragma unroll
          for (int q = 0; q < 2; q++)
            if (n + q < g.N) y[n + q] = acc[mi][j][2 * half + q];
        }
      }
    }
}

// out[t][h] = sum_j weight[t][j] * y[t*K + j][h], slots in order.
__global__ void combine_kernel(const float* y, const float* weight, int64_t T, int64_t K, int64_t H, float* out) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < T * H; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / H, h = i % H;
    float acc = 0.0f;
    for (int64_t j = 0; j < K; j++) acc = fmaf(weight[t * K + j], y[(t * K + j) * H + h], acc);
    out[i] = acc;
  }
}

void experts_prefill(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                     const float* weight, int64_t K, float* out) {
  const int64_t E = w.num_experts, H = w.hidden, I = w.inter, A = T * K;
  detail::require(A < (int64_t(1) << 31) && E * T < (int64_t(1) << 31), "moe_experts: too many assignments");
  auto& s = ctx.scratch();
  int32_t* list = s.take<int32_t>(size_t(E * T));
  int32_t* counts = s.take<int32_t>(size_t(E));
  const int64_t max_tiles = (A + kBM - 1) / kBM + detail::imin(E, A);
  int32_t* tile_e = s.take<int32_t>(size_t(max_tiles));
  int32_t* tile_r0 = s.take<int32_t>(size_t(max_tiles));
  int32_t* num_tiles = s.take<int32_t>(1);
  bf16* xb = s.take<bf16>(size_t(T * H));
  bf16* hbuf = s.take<bf16>(size_t(A * I));
  float* ybuf = s.take<float>(size_t(A * H));
  detail::require(max_tiles < 65536, "moe_experts: more than 65535 expert tiles in one call; split the chunk");

  detail::launch(ctx, group_kernel, unsigned(E), kGroupThreads, 0, idx, A, T, list, counts);
  DS4_CUDA_CHECK_LAUNCH();
  detail::launch(ctx, tiles_kernel, 1, kTileThreads, 0, counts, E, tile_e, tile_r0, num_tiles);
  DS4_CUDA_CHECK_LAUNCH();
  round_to_bf16(ctx, x, T * H, xb);

  ExpertGemm g{};
  g.T = T, g.list = list, g.counts = counts, g.tile_e = tile_e, g.tile_r0 = tile_r0, g.num_tiles = num_tiles;
  // gate and up: A rows are the token activations (assignment a reads token a / K), K dim = H, N = I; out h.
  g.a = xb, g.lda = H, g.a_div = K, g.w0 = w.gate, g.w1 = w.up, g.out = hbuf, g.N = I, g.Kd = H;
  g.vec = H % 8 == 0 && detail::aligned16(xb) && detail::aligned16(w.gate) && detail::aligned16(w.up);
  static const bool warps8 = detail::switch_on("DS4_CUDA_EXPERT_WARPS8");
  auto gemm = [&](auto kernel, int threads, int64_t cols_per_block) {
    detail::allow_smem(ctx, kernel, kGSmem);
    detail::launch(ctx, kernel, dim3(detail::blocks_for(g.N, cols_per_block), unsigned(max_tiles)), threads, kGSmem, g);
    DS4_CUDA_CHECK_LAUNCH();
  };
  if (warps8) gemm(expert_gemm_kernel<true, 4>, gemm_threads<4>(), kGN / 2);
  else gemm(expert_gemm_kernel<true, 2>, gemm_threads<2>(), kGN / 2);
  // down: A rows are the SwiGLU outputs of the assignment itself, K dim = I, N = H.
  g.a = hbuf, g.lda = I, g.a_div = 1, g.w0 = w.down, g.w1 = nullptr, g.out = ybuf, g.N = H, g.Kd = I;
  g.vec = I % 8 == 0 && detail::aligned16(hbuf) && detail::aligned16(w.down);
  if (warps8) gemm(expert_gemm_kernel<false, 4>, gemm_threads<4>(), kGN);
  else gemm(expert_gemm_kernel<false, 2>, gemm_threads<2>(), kGN);
  detail::launch(ctx, combine_kernel, detail::grid_for(ctx, T * H, 256), 256, 0, ybuf, weight, T, K, H, out);
  DS4_CUDA_CHECK_LAUNCH();
}

// ----------------------------------------------------------------------------------------------------------
// The shared expert outside the decode kernels: the ops' composition (swiglu, linear, add_gated_rows) with
// their formulas, over the strided columns of the router projection.
// ----------------------------------------------------------------------------------------------------------
__global__ void shared_swiglu_kernel(const float* gate, const float* up, int64_t ld, int64_t T, int64_t I, float* h) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < T * I; q += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = (q / I) * ld + q % I;
    h[q] = detail::silu(gate[at]) * up[at];
  }
}

__global__ void add_gated_shared_kernel(float* out, const float* y, const float* logit, int64_t ld, int64_t T,
                                        int64_t H) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < T * H; q += int64_t(gridDim.x) * blockDim.x)
    out[q] = out[q] + detail::sigmoid(logit[(q / H) * ld]) * y[q];
}

void shared_composed(Context& ctx, const SharedExpert& sh, int64_t T, int64_t H, float* out) {
  const int64_t SI = sh.inter;
  float* h = ctx.scratch().take<float>(size_t(T * SI));
  float* y = ctx.scratch().take<float>(size_t(T * H));
  detail::launch(ctx, shared_swiglu_kernel, detail::grid_for(ctx, T * SI, 256), 256, 0, sh.gate, sh.up, sh.ld, T, SI,
                 h);
  DS4_CUDA_CHECK_LAUNCH();
  linear(ctx, h, T, SI, sh.down, H, y);
  detail::launch(ctx, add_gated_shared_kernel, detail::grid_for(ctx, T * H, 256), 256, 0, out, y, sh.logit, sh.ld, T,
                 H);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

void moe_route(Context& ctx, const float* logits, int64_t T, int64_t E, int64_t k, bool renormalize, int32_t* idx,
               float* weight) {
  detail::require(E >= 1 && k >= 1 && k <= E, "moe_route: need 1 <= k <= experts");
  detail::require_supported(E <= 16384, "moe_route: more than 16384 experts");
  if (T <= 0) return;
  detail::require(T < (int64_t(1) << 31), "moe_route: too many tokens");
  ScratchScope scope(ctx.scratch());
  auto* replay = ctx.scratch().take<detail::Item>(size_t(T * E));
  if (E > 128 && E <= 1024 && k < kRouteBlockCand) {
    auto launch_block = [&](auto kernel) {
      detail::launch(ctx, kernel, unsigned(T), kRouteThreads, 0, logits, E, k, renormalize, replay, idx, weight);
    };
    if (E <= 256) launch_block(route_block_kernel<1>);
    else if (E <= 512) launch_block(route_block_kernel<2>);
    else launch_block(route_block_kernel<4>);
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
  if (E <= 1024 && k <= detail::kTopkSmallMax) {
    detail::with_lanes_per(E, [&](auto per) {
      detail::launch(ctx, route_warp_kernel<decltype(per)::value>, detail::blocks_for(T, kRouteWarps),
                     32 * int(detail::imin(T, kRouteWarps)), 0, logits, T, E, k, renormalize, replay, idx, weight);
      DS4_CUDA_CHECK_LAUNCH();
    });
    return;
  }
  float* probs = ctx.scratch().take<float>(size_t(T * E));
  const size_t sel = k <= detail::kTopkSmallMax ? detail::topk_small_smem_bytes(E) : detail::topk_smem_bytes(E);
  const size_t smem = size_t((k * 4 + 15) / 16 * 16) + sel;
  detail::allow_smem(ctx, route_kernel, smem);
  detail::launch(ctx, route_kernel, unsigned(T), kRouteThreads, smem, logits, E, k, renormalize, probs, replay, idx,
                 weight);
  DS4_CUDA_CHECK_LAUNCH();
}

void moe_experts(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                 const float* weight, int64_t k, float* out, const SharedExpert* shared) {
  detail::require(w.num_experts > 0 && w.hidden > 0 && w.inter > 0 && k >= 1 && k <= w.num_experts,
                  "moe_experts: bad shape");
  detail::require(w.gate && w.up && w.down, "moe_experts: missing expert weights");
  detail::require(!shared || (shared->down && shared->gate && shared->up && shared->logit && shared->inter > 0 &&
                              shared->ld >= shared->inter),
                  "moe_experts: bad shared expert");
  if (T <= 0) return;
  ScratchScope scope(ctx.scratch());
  if (T > kDecodeMaxT) {
    experts_prefill(ctx, w, x, T, idx, weight, k, out);
    if (shared) shared_composed(ctx, *shared, T, w.hidden, out);
    return;
  }
  const bool vec = w.hidden % 8 == 0 && w.inter % 8 == 0 && detail::aligned16(w.gate) && detail::aligned16(w.up) &&
                   detail::aligned16(w.down);
  const bool fuse = shared && vec && shared->inter % 8 == 0 && detail::aligned16(shared->down);
  if (vec && k <= 64 && detail::aligned16(x) && (!shared || fuse))
    launch_decode_rows(ctx, w, x, T, idx, weight, k, RowsOut{out}, shared);
  else if (vec) launch_decode_mma(ctx, w, x, T, idx, weight, k, out, fuse ? shared : nullptr);
  else launch_decode_scalar(ctx, w, x, T, idx, weight, k, out);
  if (shared && !fuse) shared_composed(ctx, *shared, T, w.hidden, out);
}

void moe_experts(Context& ctx, const ExpertWeights& w, const float* x, int64_t T, const int32_t* idx,
                 const float* weight, int64_t k, const RowsOut& out, const SharedExpert* shared) {
  if (!out.streams) return moe_experts(ctx, w, x, T, idx, weight, k, out.y, shared);
  detail::require(out.inject && out.S > 0 && out.S < (int64_t(1) << 16), "moe_experts: bad stream output");
  const bool vec = w.hidden % 8 == 0 && w.inter % 8 == 0 && detail::aligned16(w.gate) && detail::aligned16(w.up) &&
                   detail::aligned16(w.down);
  const bool fuse = shared && shared->down && shared->inter % 8 == 0 && detail::aligned16(shared->down);
  if (T <= kDecodeMaxT && vec && k >= 1 && k <= 64 && k <= w.num_experts && detail::aligned16(x) && (!shared || fuse)) {
    detail::require(!shared || (shared->gate && shared->up && shared->logit && shared->ld >= shared->inter),
                    "moe_experts: bad shared expert");
    ScratchScope scope(ctx.scratch());
    return launch_decode_rows(ctx, w, x, T, idx, weight, k, out, shared);
  }
  ScratchScope scope(ctx.scratch());
  float* y = ctx.scratch().take<float>(size_t(std::max<int64_t>(T, 0) * w.hidden));
  moe_experts(ctx, w, x, T, idx, weight, k, y, shared);
  if (T > 0) hc_inject(ctx, out.streams, y, out.inject, T, out.S, w.hidden);
}

}  // namespace ds4::cuda
