// Softmax attention over selected cached positions (cpu/attention.cpp) with GQA and the sigmoid output gate.
//
// A block serves one query token, one KV head and up to kHPB of the query heads that share it, over one split of
// that query's key list: K/V rows of a tile are loaded once (converted to float32 in shared memory) and read by
// every head of the block. Keys are gathered row by row through the position list, each row contiguous, so the
// loads stay coalesced whatever the selection. The softmax is online (running max and sum per head); with
// several splits, each block writes its unnormalised partial and a combine kernel merges them (flash-decoding).
// Decode (few queries) uses many splits to cover the GPU; prefill has enough (query, head-group) blocks to
// use one split and writes the output directly.
#include <cmath>
#include <type_traits>

#include "backend/cuda/common.cuh"
#include "backend/cuda/mma.cuh"
#include "backend/cuda/qsa.cuh"

namespace ds4::cuda {
namespace {

constexpr int kThreads = 256;

template <int HD>
struct Cfg {
  static constexpr int kHPB = 1024 / HD;                  // heads per block: the PV phase gives each thread 4 dims of 1 head
  static constexpr int kNT = 4096 / HD;                   // keys per tile: K and V tiles of 16 KiB each
  static constexpr int kNS = kHPB * kNT;                  // scores per tile
  static constexpr int kTS = kNS >= kThreads ? 1 : kThreads / kNS;  // threads sharing one score's dot product
  static constexpr int kSPT = kNS >= kThreads ? kNS / kThreads : 1; // scores per thread
  static constexpr int kRow = HD + 4;                     // padded shared row: rows start on different banks
};

template <class KV>
struct Args {
  const float* q;
  const KV* keys;
  const KV* values;
  const float* gate;
  float* out;
  float* part_acc;  // [T][heads][splits][HD] when splits > 1
  float* part_ml;   // [T][heads][splits][2]: running max, running sum
  const int32_t* positions;
  const int32_t* count;
  const int64_t* causal_pos0_dev;
  int64_t stride, causal_pos0, T, keys_per_split;
  int heads, kv_heads, group, head_groups, splits;
  float scale;
};

// The in-kernel selection's scratch, in the decode kernel's ring before any key is requested (byte offsets): chosen
// [topk] ints, the selection's shared memory (select_topk_bytes, 16-byte aligned), the staged scores [score_stride]
// and the replay's items [score_stride].
struct SelectionLayout {
  size_t chosen = 0, topk, vals, replay, bytes;
  __host__ __device__ SelectionLayout(int64_t score_stride, int64_t k, bool lean = false)
      : topk(size_t(k * 4 + 15) / 16 * 16),
        vals(topk + (lean ? detail::select_lean_bytes(score_stride) : detail::select_topk_bytes(score_stride))),
        replay(vals + size_t((score_stride + 1) / 2 * 2) * sizeof(float)),
        bytes(replay + size_t(score_stride) * sizeof(detail::Item)) {}
};

// A decode block's own QSA selection (KeySelection::blocks): query t at p = causal_pos0 (or *causal_pos0_dev) + t
// chooses its top `topk` complete blocks from scores[t * score_stride + b] with select_kernel's code (qsa.cuh), in
// the ring's bytes before any key is requested; the chosen blocks stay at sorted_at bytes into the dynamic shared
// memory for the key loop. ratio = 0: the selection is Args' (lists or causal).
struct BlockSel {
  const float* scores;
  int64_t score_stride;
  int ratio, topk;
  size_t sorted_at;
  bool radix;
};

// Eight consecutive K or V elements in registers, as loaded (so the next tile's loads can be in flight while a
// tile is computed), and their float32 copy in shared memory.
template <class KV>
struct Raw8;
template <>
struct Raw8<bf16> {
  uint4 u;
  __device__ __forceinline__ void load(const bf16* src) { u = *reinterpret_cast<const uint4*>(src); }
  __device__ __forceinline__ void store(float* dst) const {
    *reinterpret_cast<float4*>(dst) = make_float4(detail::bf_lo(u.x), detail::bf_hi(u.x), detail::bf_lo(u.y), detail::bf_hi(u.y));
    *reinterpret_cast<float4*>(dst + 4) = make_float4(detail::bf_lo(u.z), detail::bf_hi(u.z), detail::bf_lo(u.w), detail::bf_hi(u.w));
  }
};
template <>
struct Raw8<float> {
  float4 a, b;
  __device__ __forceinline__ void load(const float* src) {
    a = *reinterpret_cast<const float4*>(src);
    b = *reinterpret_cast<const float4*>(src + 4);
  }
  __device__ __forceinline__ void store(float* dst) const {
    *reinterpret_cast<float4*>(dst) = a;
    *reinterpret_cast<float4*>(dst + 4) = b;
  }
};

// What a block of either kernel covers: query token t, split `split` of its keys [s0, s1), and query heads
// h0 .. h0 + nh - 1 of KV head kvh (hpb heads per block).
struct BlockWork {
  int64_t t, s0, s1;
  int split, kvh, h0, nh;
};
template <class KV>
__device__ __forceinline__ BlockWork block_work(const Args<KV>& a, int hpb) {
  BlockWork w;
  w.t = blockIdx.x / a.splits;
  w.split = int(blockIdx.x % a.splits);
  w.kvh = blockIdx.y / a.head_groups;
  const int hg = blockIdx.y % a.head_groups;
  w.h0 = w.kvh * a.group + hg * hpb;
  w.nh = min(hpb, a.group - hg * hpb);
  const int64_t n =
      a.positions ? int64_t(a.count[w.t]) : (a.causal_pos0_dev ? *a.causal_pos0_dev : a.causal_pos0) + w.t + 1;
  w.s0 = int64_t(w.split) * a.keys_per_split;
  w.s1 = detail::imin(n, w.s0 + a.keys_per_split);
  return w;
}

// A thread's 4 dims dq .. dq + 3 of query row `row` (token, head), unnormalised (o) with the running max m and sum l: the output
// (times the gate) when the query's keys are one split, else the split's partial for the combine kernel.
template <class KV>
__device__ __forceinline__ void store_dims(const Args<KV>& a, int64_t row, int split, int HD, int dq,
                                           const float (&o)[4], float m, float l) {
  if (a.splits == 1) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      float r = l > 0.0f ? o[i] / l : 0.0f;
      if (a.gate) r *= detail::sigmoid(a.gate[row * HD + dq + i]);
      a.out[row * HD + dq + i] = r;
    }
  } else {
    const int64_t pi = row * a.splits + split;
    *reinterpret_cast<float4*>(&a.part_acc[pi * HD + dq]) = make_float4(o[0], o[1], o[2], o[3]);
    if (dq == 0) {
      a.part_ml[pi * 2] = m;
      a.part_ml[pi * 2 + 1] = l;
    }
  }
}

template <int HD, class KV>
__global__ void __launch_bounds__(kThreads, 2) attn_kernel(Args<KV> a) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  using C = Cfg<HD>;
  __shared__ __align__(16) float q_s[C::kHPB][HD];
  __shared__ __align__(16) float k_s[C::kNT][C::kRow];
  __shared__ __align__(16) float v_s[C::kNT][C::kRow];
  __shared__ float p_s[C::kHPB][C::kNT];
  __shared__ float m_s[C::kHPB], l_s[C::kHPB], corr_s[C::kHPB];
  const int tid = threadIdx.x, lane = tid & 31, wi = tid >> 5;
  const BlockWork bw = block_work(a, C::kHPB);
  const int64_t t = bw.t, s0 = bw.s0, s1 = bw.s1;
  const int kvh = bw.kvh, h0 = bw.h0, nh = bw.nh;
  const int64_t kv_stride = int64_t(a.kv_heads) * HD;

  // A tile's K/V rows: kLoads groups of 8 elements of K and of V per thread. The next tile's loads are issued
  // as soon as a tile is in shared memory, so its memory round trips (position, then rows) overlap the
  // tile's scores, softmax and PV; the shared-memory contents and every sum are the same as loading each tile
  // when it is needed.
  constexpr int kLoads = C::kNT * HD / 8 / kThreads;
  static_assert(C::kNT * HD / 8 == kLoads * kThreads, "a tile is a whole number of loads per thread");
  Raw8<KV> rk[kLoads], rv[kLoads];
  auto issue = [&](int64_t base) {
    const int nt = int(detail::imin(C::kNT, s1 - base));
#pragma unroll
    for (int j = 0; j < kLoads; j++) {
      const int i = tid + j * kThreads, nn = i / (HD / 8), c = (i % (HD / 8)) * 8;
      if (nn < nt) {
        const int64_t key = base + nn;
        const int64_t pos = a.positions ? int64_t(a.positions[t * a.stride + key]) : key;
        const int64_t off = pos * kv_stride + int64_t(kvh) * HD + c;
        rk[j].load(a.keys + off);
        rv[j].load(a.values + off);
      }
    }
  };
  if (s0 < s1) issue(s0);

  for (int i = tid; i < C::kHPB * HD; i += kThreads) {
    const int hh = i / HD, d = i % HD;
    q_s[hh][d] = hh < nh ? a.q[(t * a.heads + h0 + hh) * HD + d] : 0.0f;
  }
  if (tid < C::kHPB) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.0f;
  }
  const int hp = tid / (HD / 4), dq = (tid % (HD / 4)) * 4;  // PV phase: head and 4 dims of this thread
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

  for (int64_t base = s0; base < s1; base += C::kNT) {
    const int nt = int(detail::imin(C::kNT, s1 - base));
    __syncthreads();  // the previous tile is consumed (and q_s, m_s are initialised)
#pragma unroll
    for (int j = 0; j < kLoads; j++) {
      const int i = tid + j * kThreads, nn = i / (HD / 8), c = (i % (HD / 8)) * 8;
      if (nn < nt) {
        rk[j].store(&k_s[nn][c]);
        rv[j].store(&v_s[nn][c]);
      }
    }
    __syncthreads();
    if (base + C::kNT < s1) issue(base + C::kNT);
    // Scores: a team of kTS lanes per (head, key) dot product, kSPT of them per thread.
#pragma unroll
    for (int s = 0; s < C::kSPT; s++) {
      const int si = tid / C::kTS + s * (kThreads / C::kTS), member = tid % C::kTS;
      const int hh = si / C::kNT, nn = si % C::kNT;
      float d = 0.0f;
      for (int d4 = member; d4 < HD / 4; d4 += C::kTS) {
        const float4 qa = *reinterpret_cast<const float4*>(&q_s[hh][d4 * 4]);
        const float4 ka = *reinterpret_cast<const float4*>(&k_s[nn][d4 * 4]);
        d = fmaf(qa.x, ka.x, d);
        d = fmaf(qa.y, ka.y, d);
        d = fmaf(qa.z, ka.z, d);
        d = fmaf(qa.w, ka.w, d);
      }
#pragma unroll
      for (int o = C::kTS / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      if (member == 0) p_s[hh][nn] = (hh < nh && nn < nt) ? d * a.scale : -INFINITY;
    }
    __syncthreads();
    // Online softmax, one warp per head: rescale factor for the running sums, probabilities in place.
    for (int hh = wi; hh < C::kHPB; hh += kThreads / 32) {
      float mx = -INFINITY;
      for (int nn = lane; nn < C::kNT; nn += 32) mx = fmaxf(mx, p_s[hh][nn]);
      mx = detail::warp_max(mx);
      const float m_old = m_s[hh], m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int nn = lane; nn < C::kNT; nn += 32) {
        const float e = m_new == -INFINITY ? 0.0f : expf(p_s[hh][nn] - m_new);
        p_s[hh][nn] = e;
        sum += e;
      }
      sum = detail::warp_sum(sum);
      if (lane == 0) {
        const float corr = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
        corr_s[hh] = corr;
        l_s[hh] = l_s[hh] * corr + sum;
        m_s[hh] = m_new;
      }
    }
    __syncthreads();
    const float corr = corr_s[hp];
#pragma unroll
    for (int i = 0; i < 4; i++) acc[i] *= corr;
    for (int nn = 0; nn < nt; nn++) {
      const float p = p_s[hp][nn];
      const float4 vv = *reinterpret_cast<const float4*>(&v_s[nn][dq]);
      acc[0] = fmaf(p, vv.x, acc[0]);
      acc[1] = fmaf(p, vv.y, acc[1]);
      acc[2] = fmaf(p, vv.z, acc[2]);
      acc[3] = fmaf(p, vv.w, acc[3]);
    }
  }
  __syncthreads();  // m_s, l_s final (also when this split had no keys)
  if (hp >= nh) return;
  store_dims(a, t * a.heads + h0 + hp, bw.split, HD, dq, acc, m_s[hp], l_s[hp]);
}

// ----- prefill (more than 8 queries, bfloat16 cache): tensor cores -----
// The tiled kernel above gives a block one query and 4 heads: every query re-reads its keys from L2 for each
// group of 4 heads and every score and product is a CUDA-core FMA (a 4096-token prompt of the Flash-Next shape:
// 23 ms per 2048-query chunk and attention layer, 39 % of the whole prefill). Here a block takes one query and
// the 16 heads that share a key head: the mma's 16 rows, so the keys are read once per query and every product
// runs on the tensor cores (mma.cuh).
//
// Per tile of 32 keys, K and V rows arrive by cp.async (two stages: the next tile's rows are in flight while a
// tile is computed) in shared memory, their 16-byte chunks swizzled so that both phases read without bank
// conflicts:
//   scores: warp w takes the 32-dim steps w, w + 4, ... of all 32 keys (its queries' steps live in registers,
//     split into three bf16 terms: exact, as the GEMVs' activations); the warps' partial sums meet in shared
//     memory in warp order;
//   softmax: 8 threads a head, 4 keys each, online in float32 as the other kernels (expf); the probabilities are
//     split into two bf16 terms (16 significant bits);
//   values: warp w owns dims [w HD / 4, (w + 1) HD / 4). Each tile's products start from a fresh fragment and
//     are added to the running output (rescaled) in float32, so the tensor core never accumulates a long sum.
// The mma does not care which k it sums over as long as A and B agree: a lane's 8 consecutive dims (scores) or
// 4 consecutive keys (values) stand for its k positions. For the values, one 32-bit read gives a key's two
// adjacent dims; two such reads of keys k, k + 1 make the B registers of two n-tiles (even and odd dims).
constexpr int kMmaThreads = 128;
constexpr int kMmaWarps = kMmaThreads / 32;
constexpr int kMmaHeads = 16;  // query heads per block: the mma's rows
constexpr int kMmaKeys = 32;   // keys per tile
constexpr int kSRow = kMmaKeys + 8;   // partial-score row (floats): 64-bit writes of a half-warp on distinct banks
constexpr int kPRow = kMmaKeys + 16;  // probability row (bf16): 64-bit reads of a half-warp on distinct banks

template <int HD>
struct MmaCfg {
  static constexpr int kChunks = HD / 8;                      // 16-byte chunks of a K or V row
  static constexpr int kSteps = HD / 32;                      // 32-dim score steps
  static constexpr int kWarpSteps = (kSteps + kMmaWarps - 1) / kMmaWarps;
  static constexpr int kScoreWarps = kSteps < kMmaWarps ? kSteps : kMmaWarps;  // warps with score steps
  static constexpr int kPairs = HD / kMmaWarps / 16;          // value n-tile pairs (16 dims) of a warp
  static constexpr int kLoads = kMmaKeys * kChunks / kMmaThreads;  // chunks of K (and of V) a thread copies a tile
  static constexpr size_t kTile = size_t(kMmaKeys) * HD;      // bf16 elements of one K or V tile
  static constexpr size_t kSmem = 2 * 2 * kTile * sizeof(bf16);  // two stages of K and V
  static_assert(kChunks % 8 == 0 && kPairs >= 1 && kLoads * kMmaThreads == kMmaKeys * kChunks, "HD 64, 128 or 256");
};

// The element offset of 16-byte chunk ch of tile row r: chunks are XORed with 4 (odd rows) and 2 ((r / 4) % 4),
// which spreads both the scores' 128-bit reads (rows g, chunks 4 s + c) and the values' 32-bit reads (rows 4 c + i)
// of a warp over all banks.
template <int HD>
__device__ __forceinline__ int mma_tile_offset(int r, int ch) {
  return (r * MmaCfg<HD>::kChunks + (ch ^ (((r & 1) << 2) | (((r >> 2) & 3) << 1)))) * 8;
}

// The values' accumulators of a lane: [pair][even or odd n-tile][mma register].
template <int P>
__device__ __forceinline__ void zero_pairs(float (&f)[P][2][4]) {
#pragma unroll
  for (int p = 0; p < P; p++)
#pragma unroll
    for (int e = 0; e < 2; e++)
#pragma unroll
      for (int i = 0; i < 4; i++) f[p][e][i] = 0.0f;
}

template <int HD>
__global__ void __launch_bounds__(kMmaThreads, 2) attn_mma_kernel(Args<bf16> a) {
  using C = MmaCfg<HD>;
  extern __shared__ __align__(16) unsigned char mma_smem[];
  __shared__ __align__(16) float s_part[C::kScoreWarps][kMmaHeads][kSRow];
  __shared__ __align__(16) bf16 p_hi[kMmaHeads][kPRow], p_lo[kMmaHeads][kPRow];
  __shared__ float corr_s[kMmaHeads], m_s[kMmaHeads], l_s[kMmaHeads];
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  bf16* tiles = reinterpret_cast<bf16*>(mma_smem);  // stage s: K at 2 s kTile, V at (2 s + 1) kTile
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const BlockWork bw = block_work(a, kMmaHeads);
  const int64_t t = bw.t, s0 = bw.s0, s1 = bw.s1;
  const int64_t kv_stride = int64_t(a.kv_heads) * HD, kv_off = int64_t(bw.kvh) * HD;
  const int ntiles = s1 > s0 ? int((s1 - s0 + kMmaKeys - 1) / kMmaKeys) : 0;

  // Tile `it` into stage it % 2: rows past the keys are zeros (their probabilities are 0, and 0 * garbage could
  // be NaN).
  auto issue = [&](int it) {
    const int64_t base = s0 + int64_t(it) * kMmaKeys;
    const int nt = int(detail::imin(kMmaKeys, s1 - base));
    bf16* ks = tiles + size_t(2 * (it & 1)) * C::kTile;
    bf16* vs = ks + C::kTile;
#pragma unroll
    for (int j = 0; j < C::kLoads; j++) {
      const int idx = tid + j * kMmaThreads, r = idx / C::kChunks, ch = idx % C::kChunks;
      const int off = mma_tile_offset<HD>(r, ch);
      if (r < nt) {
        const int64_t key = base + r;
        const int64_t pos = a.positions ? int64_t(a.positions[t * a.stride + key]) : key;
        const int64_t src = pos * kv_stride + kv_off + ch * 8;
        detail::cp_async<16>(ks + off, a.keys + src);
        detail::cp_async<16>(vs + off, a.values + src);
      } else {
        *reinterpret_cast<uint4*>(ks + off) = make_uint4(0u, 0u, 0u, 0u);
        *reinterpret_cast<uint4*>(vs + off) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
    detail::commit_async();
  };
  if (ntiles > 0) issue(0);

  // The warp's score steps of its queries (rows g and g + 8 of the block's heads; zeros past nh), split.
  detail::XTerms qa[C::kWarpSteps], qb[C::kWarpSteps];
#pragma unroll
  for (int ws = 0; ws < C::kWarpSteps; ws++) {
    const int st = warp + ws * kMmaWarps, d = st * 32 + 8 * c;
    const bool on = st < C::kSteps;
    const float* qrow = a.q + (t * a.heads + bw.h0) * HD + d;
    detail::load_split_x8(on && g < bw.nh ? qrow + int64_t(g) * HD : nullptr, true, qa[ws]);
    detail::load_split_x8(on && g + 8 < bw.nh ? qrow + int64_t(g + 8) * HD : nullptr, true, qb[ws]);
  }
  // Softmax state: thread (row sr, keys 4 sk .. 4 sk + 3); the 8 threads of a row keep the same m and l.
  const int sr = tid >> 3, sk = tid & 7;
  float m_run = -INFINITY, l_run = 0.0f;
  // Output: pair p, n-tile e (even dims) or 1 (odd): rows g ([0], [1]) and g + 8 ([2], [3]).
  float o[C::kPairs][2][4];
  zero_pairs(o);

  for (int it = 0; it < ntiles; it++) {
    const int nt = int(detail::imin(kMmaKeys, s1 - s0 - int64_t(it) * kMmaKeys));
    const bf16* ks = tiles + size_t(2 * (it & 1)) * C::kTile;
    const bf16* vs = ks + C::kTile;
    detail::wait_all_async();  // this thread's copies of tile it (the only group in flight)
    __syncthreads();           // tile it visible to all; every warp is done with tile it - 1's stage
    if (it + 1 < ntiles) issue(it + 1);

    // Scores: 4 n-tiles of 8 keys over the warp's steps.
    if (warp < C::kScoreWarps) {
      float sc[4][4];
#pragma unroll
      for (int j = 0; j < 4; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) sc[j][i] = 0.0f;
#pragma unroll
      for (int ws = 0; ws < C::kWarpSteps; ws++) {
        const int st = warp + ws * kMmaWarps;
        if (st >= C::kSteps) break;
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const uint4 kk = *reinterpret_cast<const uint4*>(ks + mma_tile_offset<HD>(8 * j + g, 4 * st + c));
#pragma unroll
          for (int term = 2; term >= 0; term--) {
            detail::mma_bf16_16816(sc[j], qa[ws].t[term][0], qb[ws].t[term][0], qa[ws].t[term][1], qb[ws].t[term][1],
                                   kk.x, kk.y);
            detail::mma_bf16_16816(sc[j], qa[ws].t[term][2], qb[ws].t[term][2], qa[ws].t[term][3], qb[ws].t[term][3],
                                   kk.z, kk.w);
          }
        }
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        *reinterpret_cast<float2*>(&s_part[warp][g][8 * j + 2 * c]) = make_float2(sc[j][0], sc[j][1]);
        *reinterpret_cast<float2*>(&s_part[warp][g + 8][8 * j + 2 * c]) = make_float2(sc[j][2], sc[j][3]);
      }
    }
    __syncthreads();

    // Online softmax of row sr over the tile's keys.
    {
      float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int w = 0; w < C::kScoreWarps; w++) {
        const float4 v = *reinterpret_cast<const float4*>(&s_part[w][sr][4 * sk]);
        s[0] += v.x, s[1] += v.y, s[2] += v.z, s[3] += v.w;
      }
      float mx = -INFINITY;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        s[i] = 4 * sk + i < nt ? s[i] * a.scale : -INFINITY;
        mx = fmaxf(mx, s[i]);
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      const float m_new = fmaxf(m_run, mx);  // finite: key 0 of a tile is always a key
      const float corr = m_run == -INFINITY ? 0.0f : expf(m_run - m_new);
      float p[4], sum = 0.0f;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        p[i] = s[i] == -INFINITY ? 0.0f : expf(s[i] - m_new);
        sum += p[i];
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      sum += __shfl_xor_sync(0xffffffffu, sum, 4);
      l_run = l_run * corr + sum;
      m_run = m_new;
      uint32_t h01, h23, l01, l23;
      {
        const __nv_bfloat162 a01 = __floats2bfloat162_rn(p[0], p[1]), a23 = __floats2bfloat162_rn(p[2], p[3]);
        h01 = detail::bf2_bits(a01), h23 = detail::bf2_bits(a23);
        l01 = detail::bf2_bits(__floats2bfloat162_rn(p[0] - __low2float(a01), p[1] - __high2float(a01)));
        l23 = detail::bf2_bits(__floats2bfloat162_rn(p[2] - __low2float(a23), p[3] - __high2float(a23)));
      }
      *reinterpret_cast<uint2*>(&p_hi[sr][4 * sk]) = make_uint2(h01, h23);
      *reinterpret_cast<uint2*>(&p_lo[sr][4 * sk]) = make_uint2(l01, l23);
      if (sk == 0) corr_s[sr] = corr;
    }
    __syncthreads();

    // Values: the warp's dims, two k-steps of 16 keys (lane c: keys 4 c .. 4 c + 3 of each).
    {
      float pv[C::kPairs][2][4];
      zero_pairs(pv);
#pragma unroll
      for (int kst = 0; kst < 2; kst++) {
        const int k0 = 16 * kst + 4 * c;
        const uint2 hg = *reinterpret_cast<const uint2*>(&p_hi[g][k0]), hg8 = *reinterpret_cast<const uint2*>(&p_hi[g + 8][k0]);
        const uint2 lg = *reinterpret_cast<const uint2*>(&p_lo[g][k0]), lg8 = *reinterpret_cast<const uint2*>(&p_lo[g + 8][k0]);
#pragma unroll
        for (int p = 0; p < C::kPairs; p++) {
          // Word (dims 2 w, 2 w + 1) of this pair for lane g, in keys k0 .. k0 + 3.
          const int w = warp * (HD / 8) + 8 * p + g;
          uint32_t u[4];
#pragma unroll
          for (int i = 0; i < 4; i++)
            u[i] = *reinterpret_cast<const uint32_t*>(vs + mma_tile_offset<HD>(k0 + i, w >> 2) + 2 * (w & 3));
          const uint32_t e0 = (u[0] & 0xffffu) | (u[1] << 16), e1 = (u[2] & 0xffffu) | (u[3] << 16);
          const uint32_t d0 = (u[0] >> 16) | (u[1] & 0xffff0000u), d1 = (u[2] >> 16) | (u[3] & 0xffff0000u);
          detail::mma_bf16_16816(pv[p][0], lg.x, lg8.x, lg.y, lg8.y, e0, e1);
          detail::mma_bf16_16816(pv[p][0], hg.x, hg8.x, hg.y, hg8.y, e0, e1);
          detail::mma_bf16_16816(pv[p][1], lg.x, lg8.x, lg.y, lg8.y, d0, d1);
          detail::mma_bf16_16816(pv[p][1], hg.x, hg8.x, hg.y, hg8.y, d0, d1);
        }
      }
      const float cg = corr_s[g], cg8 = corr_s[g + 8];
#pragma unroll
      for (int p = 0; p < C::kPairs; p++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          o[p][e][0] = o[p][e][0] * cg + pv[p][e][0];
          o[p][e][1] = o[p][e][1] * cg + pv[p][e][1];
          o[p][e][2] = o[p][e][2] * cg8 + pv[p][e][2];
          o[p][e][3] = o[p][e][3] * cg8 + pv[p][e][3];
        }
    }
  }
  if (sk == 0) m_s[sr] = m_run, l_s[sr] = l_run;
  __syncthreads();
  // Lane (g, c) holds dims w HD / 4 + 16 p + 4 c .. + 3 of heads g and g + 8: even n-tile column 2 c is dim + 0,
  // odd + 1, even column 2 c + 1 + 2, odd + 3.
#pragma unroll
  for (int half = 0; half < 2; half++) {
    const int hh = g + 8 * half;
    if (hh >= bw.nh) continue;
#pragma unroll
    for (int p = 0; p < C::kPairs; p++) {
      const float v[4] = {o[p][0][2 * half], o[p][1][2 * half], o[p][0][2 * half + 1], o[p][1][2 * half + 1]};
      store_dims(a, t * a.heads + bw.h0 + hh, bw.split, HD, warp * (HD / 4) + 16 * p + 4 * c, v, m_s[hh], l_s[hh]);
    }
  }
}

// ----- decode (up to 8 queries, bfloat16 cache): a warp per key, no block-wide step per tile -----
// The tiled kernel above pays a chain of shared-memory phases and block barriers per 16 keys; at decode a block
// has only 64 keys or so, and those chains, not the bytes, set its time. Here each warp takes every 8th key of
// the block's split and keeps the block's heads' online softmax in registers: a lane holds E = HD / 32 dims of
// the heads' queries and accumulators, a key's scores are warp sums, and kDepth keys' K/V rows are in flight per
// warp (their positions read for 32 keys at once). The warps' partial softmaxes are merged once at the end, in
// warp order, into the same [splits] partial the combine kernel reads (or the output when there is one split).
// A query's sums depend only on its own keys and the split, never on T, so verification rows equal decode rows.
constexpr int kDecodeHeads = 4;  // heads per block: E x 4 registers of queries and of accumulators per lane
// Keys in flight per warp: a ring of shared-memory slots filled by cp.async, a lane's E elements of a row in the
// lane's own bytes (so no lane waits for another). As a ring of 3 keys in registers (more spilled at HD 256), a
// warp's 8 keys of the decode shape (2112 listed keys, 33 splits) were three memory round trips in a row.
constexpr int kDecodeRing = 8;
// Keys a warp scores together: a group's G x H dot products are summed over the warp by recursive halving (16
// shuffles for 16 sums, where a warp sum per key and head took 20 per key) and its softmax rescales the
// accumulators once. Per key and head, the online softmax took two exponentials, five shuffles and E
// multiplications besides the dot products; that instruction count, not the keys' bytes, set the kernel's time
// (after a 4096-token prompt on the H200: the keys landed 3.5 us after the wait, warp 0 was done with its 8 keys
// at 9.6).
constexpr int kDecodeGroup = 4;

// Dynamic shared memory of attn_decode_kernel<HD>: the warps' rings of K and V rows (bf16); after the key loop the
// same bytes hold the warps' accumulators (float [W][H][HD], half as many bytes).
template <int HD>
constexpr size_t decode_smem_bytes() {
  return size_t(kThreads / 32) * kDecodeRing * 2 * HD * sizeof(bf16);
}

// kFastExp: the online softmax's two exponentials per key and head take __expf (ex2.approx: two instructions
// against expf's twenty or so). With 16 query heads per key head the kernel is bound by its instructions, not by
// the keys' bytes (2112 keys x 32 heads x ~100 instructions a step after a 4096-token prompt: 10.7 us of its
// 12 after the wait in the H200 trace), and those exponentials were about 40 % of them. The arguments are <= 0,
// where __expf's error is a few ulp; DS4_CUDA_ATTN_FAST_EXP=0 takes expf.
// kLean (with kBlocks): the selection by qsa.cuh's choose_blocks_lean (caches of more than 128 blocks, select_lean).
template <int HD, bool kFastExp, bool kBlocks, bool kLean = false>
__global__ void __launch_bounds__(kThreads, 2) attn_decode_kernel(Args<bf16> a, BlockSel bs) {
  constexpr int E = HD / 32, H = kDecodeHeads, W = kThreads / 32, R = kDecodeRing, G = kDecodeGroup;
  static_assert(E % 2 == 0 && E <= 8, "a lane's dims are whole bf16 pairs");
  static_assert(R % G == 0 && 32 % (G * H) == 0, "groups fill the ring; a group's scores fit the warp");
  extern __shared__ __align__(16) unsigned char decode_smem[];
  __shared__ float m_w[W][H], l_w[W][H];
  __shared__ float p_w[W][G * H + H];  // a group's probabilities (key-major) and its new maxima, per warp
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  bf16* ring = reinterpret_cast<bf16*>(decode_smem) + size_t(warp) * R * 2 * HD + lane * E;  // slot j: + 2 HD j
  const int64_t t = blockIdx.x / a.splits;
  const int split = int(blockIdx.x % a.splits), kvh = int(blockIdx.y) / a.head_groups;
  const int h0 = kvh * a.group + (int(blockIdx.y) % a.head_groups) * H, nh = min(H, a.group - (h0 - kvh * a.group));
  const int64_t s0 = int64_t(split) * a.keys_per_split, first = s0 + warp;
  // The warp's keys are s0 + warp + W * i. The lanes' first 32 list entries are read together with the count
  // (entries past the count are read but never used; the list has `stride` entries), not after it.
  int64_t rows32 = 0;  // the cache rows of keys 32c .. 32c + 31, one per lane
  int64_t n;
  int nb = 0;  // kBlocks: the query's complete blocks
  const int* sorted = reinterpret_cast<const int*>(decode_smem + bs.sorted_at);  // kBlocks: its chosen blocks
  if constexpr (kBlocks) {
    // The scores are staged together with the position (one round trip; the row has score_stride entries, those
    // past this query's blocks are never ranked), into the ring's bytes, which no key has been requested into yet.
    const SelectionLayout at(bs.score_stride, bs.topk, kLean);
    int* chosen = reinterpret_cast<int*>(decode_smem + at.chosen);
    void* topk_smem = decode_smem + at.topk;
    float* vals = reinterpret_cast<float*>(decode_smem + at.vals);
    detail::Item* replay = reinterpret_cast<detail::Item*>(decode_smem + at.replay);
    if (bs.scores)
      for (int64_t i = tid; i < bs.score_stride; i += kThreads) vals[i] = bs.scores[t * bs.score_stride + i];
    const int64_t p = (a.causal_pos0_dev ? *a.causal_pos0_dev : a.causal_pos0) + t;
    nb = int((p + 1) / bs.ratio);
    __syncthreads();  // vals, and every write to these bytes before the keys' copies
    if (nb > bs.topk) {
      const auto value = [vals](int i) { return vals[i]; };
      if constexpr (kLean)
        detail::choose_blocks_lean(value, nb, bs.topk, topk_smem, replay, chosen, const_cast<int*>(sorted));
      else
        detail::choose_blocks(value, nb, bs.topk, topk_smem, replay, chosen, const_cast<int*>(sorted), bs.radix);
    }
    n = detail::listed_count(p, nb, bs.topk, bs.ratio);
    if (first + int64_t(W) * lane < detail::imin(n, s0 + a.keys_per_split))
      rows32 = detail::listed_position(int(first) + W * lane, nb, bs.topk, bs.ratio, sorted);
  } else {
    const int64_t list_end = a.positions ? detail::imin(s0 + a.keys_per_split, a.stride) : 0;
    if (a.positions && first + int64_t(W) * lane < list_end) rows32 = a.positions[t * a.stride + first + int64_t(W) * lane];
    n = a.positions ? int64_t(a.count[t]) : (a.causal_pos0_dev ? *a.causal_pos0_dev : a.causal_pos0) + t + 1;
    if (!a.positions) rows32 = first + int64_t(W) * lane;
  }
  const int64_t s1 = detail::imin(n, s0 + a.keys_per_split);
  const int count = s1 > first ? int((s1 - first + W - 1) / W) : 0;
  const int64_t kv_stride = int64_t(a.kv_heads) * HD;
  const bf16* kb = a.keys + int64_t(kvh) * HD + lane * E;
  const bf16* vb = a.values + int64_t(kvh) * HD + lane * E;
  auto row_at = [&](int i) -> int64_t {
    if constexpr (kBlocks) return detail::listed_position(int(first) + W * i, nb, bs.topk, bs.ratio, sorted);
    return a.positions ? int64_t(a.positions[t * a.stride + first + int64_t(W) * i]) : first + int64_t(W) * i;
  };
  // Key i into slot i % R (warp-uniform calls: the row comes from lane i % 32, read anew every 32 keys).
  auto issue = [&](int i) {
    if (i > 0 && (i & 31) == 0) rows32 = i + lane < count ? row_at(i + lane) : 0;
    const int64_t r = __shfl_sync(0xffffffffu, rows32, i & 31);
    bf16* slot = ring + (i % R) * 2 * HD;
    // A lane's E bf16 of the K and V rows (its bytes only, so its own wait makes them visible to it).
    detail::cp_async<E * 2>(slot, kb + r * kv_stride);
    detail::cp_async<E * 2>(slot + HD, vb + r * kv_stride);
  };
  // One commit group per group of G keys, empty ones included, so that "at most R / G - 1 groups in flight"
  // means that the group about to be read has landed.
#pragma unroll
  for (int j = 0; j < R; j++) {
    if (j < count) issue(j);
    if (j % G == G - 1) detail::commit_async();
  }
  pdl.mark(0);  // trace builds: the count and rows read, the keys requested

  float q[H][E], acc[H][E], m[H], l[H];
#pragma unroll
  for (int hh = 0; hh < H; hh++) {
    m[hh] = -INFINITY, l[hh] = 0.0f;
#pragma unroll
    for (int e = 0; e < E; e++) {
      q[hh][e] = hh < nh ? a.q[(t * a.heads + h0 + hh) * HD + lane * E + e] : 0.0f;
      acc[hh][e] = 0.0f;
    }
  }
  float* pw = p_w[warp];
  auto ex = [](float x) { return kFastExp ? __expf(x) : expf(x); };

  for (int i0 = 0; i0 < count; i0 += G) {
    const int valid = min(G, count - i0);
    detail::wait_async<R / G - 1>();
    if (i0 == 0) pdl.mark(1);  // the first keys landed
    // The group's G x H dot products (value k * H + h), each lane's E dims, then summed over the warp by
    // recursive halving: afterwards lane l holds the total of value l / (32 / (G H)).
    float d[G * H];
#pragma unroll
    for (int k = 0; k < G; k++) {
      uint32_t kr[E / 2];
      const uint32_t* kp = reinterpret_cast<const uint32_t*>(ring + ((i0 + k) % R) * 2 * HD);
#pragma unroll
      for (int e = 0; e < E / 2; e++) kr[e] = k < valid ? kp[e] : 0u;
#pragma unroll
      for (int hh = 0; hh < H; hh++) {
        float dk = 0.0f;
#pragma unroll
        for (int e = 0; e < E / 2; e++) {
          dk = fmaf(q[hh][2 * e], detail::bf_lo(kr[e]), dk);
          dk = fmaf(q[hh][2 * e + 1], detail::bf_hi(kr[e]), dk);
        }
        d[k * H + hh] = dk;
      }
    }
    detail::team_sum_scatter<G * H, 32>(d);
    // Lane l's value: key k = v / H, head h = v % H. Keys past the list score -inf.
    const int v = lane / (32 / (G * H)), k = v / H, h = v % H;
    const float sc = k < valid ? d[0] * a.scale : -INFINITY;
    float gm = sc;  // the group's max of head h: over the lanes of the other keys
#pragma unroll
    for (int o = 32 / G; o < 32; o <<= 1) gm = fmaxf(gm, __shfl_xor_sync(0xffffffffu, gm, o));
    float mh = m[0];
#pragma unroll
    for (int hh = 1; hh < H; hh++) mh = h == hh ? m[hh] : mh;
    const float mn = fmaxf(mh, gm);
    __syncwarp();  // the previous group's reads of pw are done
    if (lane % (32 / (G * H)) == 0) {
      pw[v] = mn == -INFINITY ? 0.0f : ex(sc - mn);  // p of (key k, head h)
      if (k == 0) pw[G * H + h] = mn;
    }
    __syncwarp();
    float mnh[H];
#pragma unroll
    for (int hh = 0; hh < H; hh++) mnh[hh] = pw[G * H + hh];
#pragma unroll
    for (int hh = 0; hh < H; hh++) {
      const float corr = m[hh] == -INFINITY ? 0.0f : ex(m[hh] - mnh[hh]);
      float lh = l[hh] * corr;
#pragma unroll
      for (int e = 0; e < E; e++) acc[hh][e] *= corr;
      l[hh] = lh;
      m[hh] = mnh[hh];
    }
#pragma unroll
    for (int kk = 0; kk < G; kk++) {
      if (kk >= valid) break;
      const uint32_t* vp = reinterpret_cast<const uint32_t*>(ring + ((i0 + kk) % R) * 2 * HD + HD);
      float vk[E];
#pragma unroll
      for (int e = 0; e < E / 2; e++) vk[2 * e] = detail::bf_lo(vp[e]), vk[2 * e + 1] = detail::bf_hi(vp[e]);
#pragma unroll
      for (int hh = 0; hh < H; hh++) {
        const float p = pw[kk * H + hh];
        l[hh] += p;
#pragma unroll
        for (int e = 0; e < E; e++) acc[hh][e] = fmaf(p, vk[e], acc[hh][e]);
      }
    }
    // This lane has read its bytes of the group's slots: the keys R further on go into them.
#pragma unroll
    for (int j = 0; j < G; j++)
      if (i0 + R + j < count) issue(i0 + R + j);
    detail::commit_async();
  }
  detail::wait_async<0>();  // nothing of this thread's is in flight when the ring's bytes take the accumulators

  pdl.mark(2);  // warp 0's keys done
  __syncthreads();  // every warp is done with its ring
  // Merge the warps' partials (warp order), one thread per 4 dims of a head.
  float(*acc_s)[H][HD] = reinterpret_cast<float(*)[H][HD]>(decode_smem);
#pragma unroll
  for (int hh = 0; hh < H; hh++) {
#pragma unroll
    for (int e = 0; e < E; e++) acc_s[warp][hh][lane * E + e] = acc[hh][e];
    if (lane == 0) m_w[warp][hh] = m[hh], l_w[warp][hh] = l[hh];
  }
  __syncthreads();
  pdl.mark(3);  // every warp's keys
  const int hp = tid / (HD / 4), dq = (tid % (HD / 4)) * 4;  // H * HD / 4 <= kThreads
  if (hp >= nh) return;
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < W; w++) M = fmaxf(M, m_w[w][hp]);
  float L = 0.0f, o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (M != -INFINITY)
#pragma unroll
    for (int w = 0; w < W; w++) {
      if (m_w[w][hp] == -INFINITY) continue;
      const float wt = expf(m_w[w][hp] - M);
      L += l_w[w][hp] * wt;
      const float4 x = *reinterpret_cast<const float4*>(&acc_s[w][hp][dq]);
      o[0] += x.x * wt, o[1] += x.y * wt, o[2] += x.z * wt, o[3] += x.w * wt;
    }
  store_dims(a, t * a.heads + h0 + hp, split, HD, dq, o, M, L);
}

// Merges the splits of one (token, head) row: weights e^(m_s - M), normalised by the merged sum; one thread per dim.
// Every split's partial of the thread's dim is loaded right after the wait, kCombineChunk at a time, all in flight
// together (one memory round trip for the decode shapes' 33 splits, where a loop that loads as it sums waits once
// per split); the sums then run in split order as before.
constexpr int kCombineChunk = 48;
constexpr int kMaxSplits = 1024;  // the running max and sum of each split are staged in shared memory

__global__ void attn_combine_kernel(const float* part_acc, const float* part_ml, const float* gate, float* out,
                                    int splits, int HD, bool early_trigger, bool fast_exp) {
  __shared__ float ml_s[2 * kMaxSplits];
  __shared__ float w_s[kMaxSplits];  // each split's weight e^(m_s - M), -1 for a split without keys
  __shared__ float ML[2];            // the merged maximum and sum
  [[maybe_unused]] const auto pdl = detail::pdl_enter(early_trigger);
  const int64_t row = blockIdx.x;
  const int d = threadIdx.x, nt = int(blockDim.x);
  const float* ml = part_ml + row * splits * 2;
  const float* acc = part_acc + row * splits * HD + d;
  float v[kCombineChunk];
#pragma unroll
  for (int j = 0; j < kCombineChunk; j++) v[j] = j < splits ? acc[int64_t(j) * HD] : 0.0f;
  {
    constexpr int kPre = 4;  // the splits' maxima and sums: all requested before any is stored
    float mv[kPre];
#pragma unroll
    for (int u = 0; u < kPre; u++) mv[u] = d + u * nt < 2 * splits ? ml[d + u * nt] : 0.0f;
#pragma unroll
    for (int u = 0; u < kPre; u++)
      if (d + u * nt < 2 * splits) ml_s[d + u * nt] = mv[u];
    for (int i = d + kPre * nt; i < 2 * splits; i += nt) ml_s[i] = ml[i];
  }
  // The output gate with the partials (after the sums it was one more L2 round trip at the end).
  const float gv = gate ? gate[row * HD + d] : 0.0f;
  __syncthreads();
  pdl.mark(0);  // trace builds: the splits' maxima and sums staged
  // The weights are the same for every dim of the row, so the block computes each once, in parallel, and the
  // merged sum in split order in one thread (each thread ran both chains over all splits, each step waiting for
  // its shared-memory reads: 3.7 of the kernel's 6.9 us after the wait on the H200 at 33 splits).
  if (d < 32) {
    float M = -INFINITY;
    for (int s = d; s < splits; s += 32) M = fmaxf(M, ml_s[2 * s]);
    M = detail::warp_max(M);
    if (d == 0) ML[0] = M;
  }
  __syncthreads();
  const float M = ML[0];
  for (int s = d; s < splits; s += nt) {
    const float m = ml_s[2 * s];
    w_s[s] = M == -INFINITY || m == -INFINITY ? -1.0f : fast_exp ? __expf(m - M) : expf(m - M);  // see attn_decode_kernel
  }
  __syncthreads();
  if (d == 0) {
    float L = 0.0f;
    for (int s = 0; s < splits; s++)
      if (w_s[s] >= 0.0f) L += ml_s[2 * s + 1] * w_s[s];
    ML[1] = L;
  }
  pdl.mark(1);  // the weights
  float o = 0.0f;
  for (int s0 = 0; s0 < splits; s0 += kCombineChunk) {
    if (s0 > 0) {
#pragma unroll
      for (int j = 0; j < kCombineChunk; j++) v[j] = s0 + j < splits ? acc[int64_t(s0 + j) * HD] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kCombineChunk; j++) {
      const int s = s0 + j;
      if (s >= splits) break;
      const float w = w_s[s];
      if (w >= 0.0f) o += v[j] * w;
    }
  }
  __syncthreads();  // ML[1]
  pdl.mark(2);  // the sums
  const float L = ML[1];
  o = L > 0.0f ? o / L : 0.0f;
  if (gate) o *= detail::sigmoid(gv);
  out[row * HD + d] = o;
}

// DS4_CUDA_ATTN_FAST_EXP=0: the decode and combine kernels take expf (see attn_decode_kernel).
bool fast_exp_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_ATTN_FAST_EXP");
  return on;
}

// DS4_CUDA_ATTN_MMA=0: more than 8 queries over a bfloat16 cache take attn_kernel instead of attn_mma_kernel.
bool mma_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_ATTN_MMA");
  return on;
}

template <int HD, class KV>
void launch(Context& ctx, const float* q, const KV* keys, const KV* values, AttnShape s, int64_t T,
            const KeySelection& sel, float scale, const float* gate, float* out) {
  using C = Cfg<HD>;
  const bool decode = std::is_same_v<KV, bf16> && T <= 8;  // attn_decode_kernel
  const bool blocks = sel.block_ratio > 0;                    // its own QSA selection
  detail::require(!blocks || decode, "attention: an in-kernel block selection needs the decode kernel (a bfloat16 "
                                     "cache, at most 8 queries)");
  const bool mma = std::is_same_v<KV, bf16> && !decode && mma_enabled();  // attn_mma_kernel
  const int hpb = decode ? kDecodeHeads : mma ? kMmaHeads : C::kHPB;
  const int64_t tile = mma ? kMmaKeys : C::kNT;
  const int group = int(s.heads / s.kv_heads), head_groups = (group + hpb - 1) / hpb;
  // Split each query's keys until the grid covers every multiprocessor about twice, in whole tiles. Up to 8
  // queries (decode, speculative verification) split as one query does, so that a query's partial softmaxes,
  // and with them its output's bits, do not depend on how many queries share the call.
  const int64_t base_blocks = (T <= 8 ? 1 : T) * s.kv_heads * head_groups;
  int64_t splits = 1;
  const int64_t want = 2 * int64_t(ctx.sm_count());
  if (base_blocks < want) splits = (want + base_blocks - 1) / base_blocks;
  int64_t kps = (sel.max_keys + splits - 1) / splits;
  kps = (kps + tile - 1) / tile * tile;
  splits = (sel.max_keys + kps - 1) / kps;
  detail::require(T * splits < (int64_t(1) << 31) && s.kv_heads * head_groups < 65536 && splits <= kMaxSplits,
                  "attention: grid too large");

  ScratchScope scope(ctx.scratch());
  Args<KV> a{};
  a.q = q, a.keys = keys, a.values = values, a.gate = gate, a.out = out;
  if (splits > 1) {
    a.part_acc = ctx.scratch().take<float>(size_t(T * s.heads * splits * HD));
    a.part_ml = ctx.scratch().take<float>(size_t(T * s.heads * splits * 2));
  }
  a.positions = sel.positions, a.count = sel.count, a.stride = sel.stride, a.causal_pos0 = sel.causal_pos0;
  a.causal_pos0_dev = sel.causal_pos0_dev;
  a.T = T, a.keys_per_split = kps;
  a.heads = int(s.heads), a.kv_heads = int(s.kv_heads), a.group = group, a.head_groups = head_groups;
  a.splits = int(splits), a.scale = scale;
  const dim3 grid(unsigned(T * splits), unsigned(s.kv_heads * head_groups));
  if constexpr (std::is_same_v<KV, bf16>) {
    if (decode) {
      BlockSel bs{};
      size_t smem = decode_smem_bytes<HD>();
      const bool fast = fast_exp_enabled(), lean = blocks && HD == 256 && fast && detail::select_lean(sel.score_stride);
      if (blocks) {
        bs = BlockSel{sel.block_scores, sel.score_stride, int(sel.block_ratio), int(sel.block_topk), 0,
                      detail::select_radix()};
        bs.sorted_at = std::max(smem, SelectionLayout(sel.score_stride, sel.block_topk, lean).bytes);
        smem = bs.sorted_at + size_t(sel.block_topk) * sizeof(int);
      }
      auto k = blocks ? (fast ? attn_decode_kernel<HD, true, true> : attn_decode_kernel<HD, false, true>)
                      : (fast ? attn_decode_kernel<HD, true, false> : attn_decode_kernel<HD, false, false>);
      if constexpr (HD == 256)
        if (lean) k = attn_decode_kernel<HD, true, true, true>;
      detail::allow_smem(ctx, k, smem);
      detail::launch(ctx, k, grid, kThreads, smem, a, bs);
    }
  }
  if constexpr (std::is_same_v<KV, bf16>) {
    if (mma) {
      detail::allow_smem(ctx, attn_mma_kernel<HD>, MmaCfg<HD>::kSmem);
      detail::launch(ctx, attn_mma_kernel<HD>, grid, kMmaThreads, MmaCfg<HD>::kSmem, a);
    }
  }
  if (!decode && !mma) detail::launch(ctx, attn_kernel<HD, KV>, grid, kThreads, 0, a);
  DS4_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    detail::launch(ctx, attn_combine_kernel, unsigned(T * s.heads), HD, 0, a.part_acc, a.part_ml, gate, out, int(splits),
                   HD, detail::early_trigger("combine"), fast_exp_enabled());
    DS4_CUDA_CHECK_LAUNCH();
  }
}

template <class KV>
void dispatch(Context& ctx, const float* q, const KV* keys, const KV* values, AttnShape s, int64_t T,
              const KeySelection& sel, float scale, const float* gate, float* out) {
  detail::require(s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads == 0,
                  "attention: heads must be a multiple of kv_heads");
  detail::require(sel.max_keys > 0, "attention: max_keys must be positive");
  detail::require(sel.block_ratio == 0 || (sel.positions == nullptr && sel.block_topk > 0 &&
                                           sel.score_stride <= kQsaInKernelMaxBlocks &&
                                           sel.max_keys == qsa_list_stride(sel.block_topk, sel.block_ratio)),
                  "attention: bad in-kernel block selection");
  detail::require(sel.positions == nullptr || (sel.count && sel.stride >= sel.max_keys),
                  "attention: position lists need counts and a stride >= max_keys");
  if (T <= 0) return;
  switch (s.head_dim) {
    case 64: return launch<64>(ctx, q, keys, values, s, T, sel, scale, gate, out);
    case 128: return launch<128>(ctx, q, keys, values, s, T, sel, scale, gate, out);
    case 256: return launch<256>(ctx, q, keys, values, s, T, sel, scale, gate, out);
    default:
      detail::require_supported(false, "attention: head_dim " + std::to_string(s.head_dim) + " (64, 128 or 256)");
  }
}

}  // namespace

void attention(Context& ctx, const float* q, const float* keys, const float* values, AttnShape s, int64_t T,
               const KeySelection& sel, float scale, const float* gate, float* out) {
  dispatch(ctx, q, keys, values, s, T, sel, scale, gate, out);
}

void attention(Context& ctx, const float* q, const bf16* keys, const bf16* values, AttnShape s, int64_t T,
               const KeySelection& sel, float scale, const float* gate, float* out) {
  dispatch(ctx, q, keys, values, s, T, sel, scale, gate, out);
}

}  // namespace ds4::cuda
