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
template <int HD, bool kFastExp>
__global__ void __launch_bounds__(kThreads, 2) attn_decode_kernel(Args<bf16> a) {
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
  const int64_t list_end = a.positions ? detail::imin(s0 + a.keys_per_split, a.stride) : 0;
  int64_t rows32 = 0;  // the cache rows of keys 32c .. 32c + 31, one per lane
  if (a.positions && first + int64_t(W) * lane < list_end) rows32 = a.positions[t * a.stride + first + int64_t(W) * lane];
  const int64_t n =
      a.positions ? int64_t(a.count[t]) : (a.causal_pos0_dev ? *a.causal_pos0_dev : a.causal_pos0) + t + 1;
  const int64_t s1 = detail::imin(n, s0 + a.keys_per_split);
  const int count = s1 > first ? int((s1 - first + W - 1) / W) : 0;
  const int64_t kv_stride = int64_t(a.kv_heads) * HD;
  const bf16* kb = a.keys + int64_t(kvh) * HD + lane * E;
  const bf16* vb = a.values + int64_t(kvh) * HD + lane * E;
  auto row_at = [&](int i) { return a.positions ? int64_t(a.positions[t * a.stride + first + int64_t(W) * i]) : first + int64_t(W) * i; };
  if (!a.positions) rows32 = first + int64_t(W) * lane;
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

template <int HD, class KV>
void launch(Context& ctx, const float* q, const KV* keys, const KV* values, AttnShape s, int64_t T,
            const KeySelection& sel, float scale, const float* gate, float* out) {
  using C = Cfg<HD>;
  const bool decode = std::is_same_v<KV, bf16> && T <= 8;  // attn_decode_kernel
  const int hpb = decode ? kDecodeHeads : C::kHPB;
  const int group = int(s.heads / s.kv_heads), head_groups = (group + hpb - 1) / hpb;
  // Split each query's keys until the grid covers every multiprocessor about twice, in whole tiles. Up to 8
  // queries (decode, speculative verification) split as one query does, so that a query's partial softmaxes,
  // and with them its output's bits, do not depend on how many queries share the call.
  const int64_t base_blocks = (T <= 8 ? 1 : T) * s.kv_heads * head_groups;
  int64_t splits = 1;
  const int64_t want = 2 * int64_t(ctx.sm_count());
  if (base_blocks < want) splits = (want + base_blocks - 1) / base_blocks;
  int64_t kps = (sel.max_keys + splits - 1) / splits;
  kps = (kps + C::kNT - 1) / C::kNT * C::kNT;
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
      const auto k = fast_exp_enabled() ? attn_decode_kernel<HD, true> : attn_decode_kernel<HD, false>;
      detail::allow_smem(ctx, k, decode_smem_bytes<HD>());
      detail::launch(ctx, k, grid, kThreads, decode_smem_bytes<HD>(), a);
    }
  }
  if (!decode) detail::launch(ctx, attn_kernel<HD, KV>, grid, kThreads, 0, a);
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
