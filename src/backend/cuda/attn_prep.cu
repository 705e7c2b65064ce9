// attn_prep (ops.h): the attention layer's step from the projection rows to the attention's inputs in one kernel.
// One warp per (token, segment); the segments of a token are, in order: NH query heads (q_norm, RoPE, written
// padded to HDp), NH gates (copied), KVH key heads (k_norm, RoPE, stored as bfloat16 into the key cache at row
// pos + t, padded), KVH value heads (stored likewise), IH indexer query heads (idx_q_norm, RoPE) and the indexer
// key (raw, into the index-key cache). The warp stages its segment in shared memory, normalises it as
// norm_warp_kernel does (lane-strided float64 sum of squares, the same bits), rotates pairs with rope_kernel's
// arithmetic (rope.cuh), and writes it out. It replaces copy_rows, rms_norm_offset, apply_rope, store_rows_bf16
// and copy_rows_at: 14 launches a layer at the Flash-Next shape, whatever T is.
//
// attn_prep_qsa (one token, the decode step) adds one block after the segments' blocks for the token's QSA
// steps that need no scores: it pools the indexer block the token completes (qsa_pool_chunk's work: its own raw
// key taken from the projection row, the earlier ones from the cache) and, when no position up to the bound has
// more complete blocks than the budget, writes the token's list (qsa_select's: every position). Each is
// otherwise a kernel of its own on the attention layer's critical path. The segments' blocks do not wait for it,
// nor it for them. (Scoring in this block too, all complete blocks against the 16 query heads it normalised
// itself, cost 0.8-1.1 % of a 48-layer step after 4096 tokens on the H200: one block's dots and its keys' fetch
// under the projection's stream took 12 us, where qsa_select's score kernel spreads them.)
#include "backend/cuda/qsa.cuh"
#include "backend/cuda/rope.cuh"

namespace ds4::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxSeg = 512;  // elements of a staged segment (HDp and the indexer head dim)

// The decode block's operands (attn_prep_qsa).
struct PrepQsa {
  const float* index_keys;  // [positions][ID] raw indexer keys (rows below the token's)
  float* block_keys;        // [blocks][ID] pooled keys: the token's block written here
  const bf16* k_norm;       // idx_k_norm [ID] or null
  int64_t R;
  int32_t *sel, *count;  // the list, or null (qsa_select follows)
};

struct PrepArgs {
  const float* pr;
  int64_t ld, T;
  AttnPrepShape sh;
  AttnPrepNorms norms;
  RopeParams rope;
  Positions pos;
  SeqPos sp;
  AttnPrepOut out;
  int64_t segs;  // per token
  int64_t prep_blocks;  // blocks of the segments; with qsa set, one more: the decode block
  bool qsa;
  PrepQsa qs;
};

// The decode block (attn_prep_qsa; T == 1). vals, pooled: [kMaxSeg] of shared memory (the segments' staging
// rows, unused in this block).
__device__ void decode_qsa(const PrepArgs& a, float* vals, float* pooled) {
  __shared__ double red[32];
  const PrepQsa& s = a.qs;
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t p = a.sp.dev ? *a.sp.dev : a.sp.bound, D = a.sh.ID;
  if ((p + 1) % s.R == 0) {
    // pool_kernel's threads: 128 of them, element e on thread e (pool_block); the raw key of the token (row R - 1
    // of its block) is the projection row's, which a segment's warp is storing into the cache meanwhile.
    const float* raw = a.pr + a.sh.NH * 2 * a.sh.HD + 2 * a.sh.KVH * a.sh.HD + a.sh.IH * D;
    detail::pool_block(s.index_keys, raw, (p + 1) / s.R - 1, s.R, D, s.k_norm, a.rope, a.norms.eps, 128, vals, red,
                       pooled);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < D; e += blockDim.x) s.block_keys[((p + 1) / s.R - 1) * D + e] = pooled[e];
  }
  if (s.sel) detail::all_positions(p, s.sel, s.count);
}

enum class Seg { Query, Gate, Key, Value, IdxQuery, IdxKey };

__global__ void __launch_bounds__(kWarps * 32) attn_prep_kernel(PrepArgs a) {
  __shared__ float buf[kWarps][kMaxSeg];
  if (a.qsa && int64_t(blockIdx.x) >= a.prep_blocks) {
    decode_qsa(a, buf[0], buf[1]);
    return;
  }
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int64_t id = int64_t(blockIdx.x) * kWarps + warp;
  const bool live = id < a.T * a.segs;
  const int64_t t = live ? id / a.segs : 0;
  int64_t q = live ? id % a.segs : 0, h = 0;
  const AttnPrepShape& s = a.sh;
  Seg kind;
  if (q < s.NH) kind = Seg::Query, h = q;
  else if ((q -= s.NH) < s.NH) kind = Seg::Gate, h = q;
  else if ((q -= s.NH) < s.KVH) kind = Seg::Key, h = q;
  else if ((q -= s.KVH) < s.KVH) kind = Seg::Value, h = q;
  else if ((q -= s.KVH) < s.IH) kind = Seg::IdxQuery, h = q;
  else kind = Seg::IdxKey;

  // Source in the projection row: [q | gate] per head, k, v, indexer queries, indexer key.
  const float* row = a.pr + t * a.ld;
  const int64_t QG = s.NH * 2 * s.HD, idx0 = QG + 2 * s.KVH * s.HD;
  const float* src;
  int64_t L;
  const bf16* w = nullptr;
  switch (kind) {
    case Seg::Query: src = row + h * 2 * s.HD, L = s.HD, w = a.norms.q; break;
    case Seg::Gate: src = row + h * 2 * s.HD + s.HD, L = s.HD; break;
    case Seg::Key: src = row + QG + h * s.HD, L = s.HD, w = a.norms.k; break;
    case Seg::Value: src = row + QG + s.KVH * s.HD + h * s.HD, L = s.HD; break;
    case Seg::IdxQuery: src = row + idx0 + h * s.ID, L = s.ID, w = a.norms.idx_q; break;
    default: src = row + idx0 + s.IH * s.ID, L = s.ID; break;
  }
  const bool norm = live && (kind == Seg::Query || kind == Seg::Key || kind == Seg::IdxQuery);
  // The norm's 1 + weight of the lane's elements and its RoPE frequency: parameters no kernel writes, loaded
  // before the wait (after the row's 1/rms they were one more L2 round trip each, in every attention layer's step).
  constexpr int kPer = kMaxSeg / 32;
  const int64_t half = a.rope.rotary_dim / 2;
  const bool one_pair = half <= 32;  // at most one rotated pair a lane (the Flash-Next shape: 32)
  float w1[kPer];
#pragma unroll
  for (int k = 0; k < kPer; k++) {
    const int64_t i = lane + 32 * k;
    w1[k] = 1.0f + (norm && w && i < L ? __bfloat162float(w[i]) : 0.0f);
  }
  const float inv_freq = norm && one_pair && lane < half ? a.rope.inv_freq[lane] : 0.0f;
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  if (!live) return;  // the whole warp; only warp-level synchronisation below
  float* v = buf[warp];
  // The position of the lane's pair (one_pair; more pairs take rope_pair's loop below), requested together with
  // the segment.
  const int64_t p = norm && one_pair && lane < half ? detail::rope_position(lane, t, a.rope, a.pos) : 0;
  for (int64_t i = lane; i < L; i += 32) v[i] = src[i];
  if (norm) {
    // norm_warp_kernel's Offset form: the same loop, sum and expression.
    double ss = 0.0;
#pragma unroll 4
    for (int64_t i = lane; i < L; i += 32) ss += double(v[i]) * double(v[i]);
    ss = detail::warp_sum(ss);
    const float inv = 1.0f / sqrtf(float(ss / double(L)) + a.norms.eps);
#pragma unroll
    for (int k = 0; k < kPer; k++) {
      const int64_t i = lane + 32 * k;
      if (i < L) v[i] = (v[i] * inv) * w1[k];
    }
    __syncwarp();
    if (one_pair) {
      if (lane < half) detail::rope_rotate(v[lane], v[lane + half], inv_freq * float(p));
    } else {
      for (int64_t i = lane; i < half; i += 32) detail::rope_pair(v[i], v[i + half], i, t, a.rope, a.pos);
    }
  }
  __syncwarp();

  const int64_t row0 = (a.sp.dev ? *a.sp.dev : a.sp.bound) + t;  // cache row of this token
  switch (kind) {
    case Seg::Query: {
      float* d = a.out.q + (t * s.NH + h) * s.HDp;
      for (int64_t i = lane; i < s.HDp; i += 32) d[i] = i < L ? v[i] : 0.0f;
      break;
    }
    case Seg::Gate: {
      float* d = a.out.gate + (t * s.NH + h) * s.HD;
      for (int64_t i = lane; i < L; i += 32) d[i] = v[i];
      break;
    }
    case Seg::Key:
    case Seg::Value: {
      bf16* d = (kind == Seg::Key ? a.out.keys : a.out.values) + (row0 * s.KVH + h) * s.HDp;
      for (int64_t i = lane; i < s.HDp; i += 32) d[i] = __float2bfloat16_rn(i < L ? v[i] : 0.0f);
      break;
    }
    case Seg::IdxQuery: {
      float* d = a.out.idx_q + (t * s.IH + h) * s.ID;
      for (int64_t i = lane; i < L; i += 32) d[i] = v[i];
      break;
    }
    default: {
      float* d = a.out.idx_keys + row0 * s.ID;
      for (int64_t i = lane; i < L; i += 32) d[i] = v[i];
      break;
    }
  }
}

void check_prep(const float* pr, int64_t ld, const AttnPrepShape& sh, const RopeParams& rope, const AttnPrepOut& out) {
  detail::require(sh.NH > 0 && sh.KVH > 0 && sh.NH % sh.KVH == 0 && sh.HD > 0 && sh.HDp >= sh.HD && sh.IH >= 0 &&
                      sh.ID >= 0 && (sh.IH == 0 || sh.ID > 0),
                  "attn_prep: bad shape");
  detail::require_supported(sh.HDp <= kMaxSeg && sh.ID <= kMaxSeg, "attn_prep: head dims above 512");
  detail::require(rope.rotary_dim > 0 && rope.rotary_dim % 2 == 0 && rope.rotary_dim <= sh.HD &&
                      (sh.IH == 0 || rope.rotary_dim <= sh.ID) && rope.inv_freq,
                  "attn_prep: bad rope table");
  detail::require(ld >= sh.NH * 2 * sh.HD + 2 * sh.KVH * sh.HD + (sh.IH + (sh.ID > 0 ? 1 : 0)) * sh.ID,
                  "attn_prep: projection rows too short");
  detail::require(pr && out.q && out.gate && out.keys && out.values && (sh.IH == 0 || out.idx_q) &&
                      (sh.ID == 0 || out.idx_keys),
                  "attn_prep: null operand");
}

// The segments' blocks for T tokens, then (qs set, T == 1) the decode block.
void launch_prep(Context& ctx, const float* pr, int64_t ld, int64_t T, const AttnPrepShape& sh,
                 const AttnPrepNorms& norms, const RopeParams& rope, Positions pos, SeqPos sp, const AttnPrepOut& out,
                 const PrepQsa* qs) {
  // Segments per token: queries, gates, keys, values, indexer queries, and the indexer key when there is one.
  const int64_t segs = 2 * sh.NH + 2 * sh.KVH + sh.IH + (sh.ID > 0 ? 1 : 0);
  detail::require(T * segs / kWarps < (int64_t(1) << 31), "attn_prep: too many rows");
  const int64_t blocks = (T * segs + kWarps - 1) / kWarps;
  const PrepArgs args{pr, ld, T, sh, norms, rope, pos, sp, out, segs, blocks, qs != nullptr, qs ? *qs : PrepQsa{}};
  detail::launch(ctx, attn_prep_kernel, unsigned(blocks + (qs ? 1 : 0)), kWarps * 32, 0, args);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

void attn_prep(Context& ctx, const float* pr, int64_t ld, int64_t T, const AttnPrepShape& sh,
               const AttnPrepNorms& norms, const RopeParams& rope, Positions pos, SeqPos sp, const AttnPrepOut& out) {
  check_prep(pr, ld, sh, rope, out);
  if (T <= 0) return;
  launch_prep(ctx, pr, ld, T, sh, norms, rope, pos, sp, out, nullptr);
}

QsaFused attn_prep_qsa(Context& ctx, const float* pr, int64_t ld, const AttnPrepShape& sh, const AttnPrepNorms& norms,
                       const RopeParams& rope, Positions pos, SeqPos sp, const AttnPrepOut& out, const QsaDecode& qsa) {
  check_prep(pr, ld, sh, rope, out);
  detail::require(sh.IH > 0 && qsa.R > 0 && qsa.block_topk > 0 && qsa.block_keys && qsa.sel && qsa.count &&
                      sp.bound >= 0 && qsa.stride >= qsa_list_stride(qsa.block_topk, qsa.R),
                  "attn_prep_qsa: bad indexer operands");
  // Listed when no position up to the bound has more complete blocks than the budget.
  const bool listed = (sp.bound + 1) / qsa.R <= qsa.block_topk;
  const PrepQsa qs{out.idx_keys, qsa.block_keys, qsa.k_norm, qsa.R, listed ? qsa.sel : nullptr,
                   listed ? qsa.count : nullptr};
  launch_prep(ctx, pr, ld, 1, sh, norms, rope, pos, sp, out, &qs);
  return listed ? QsaFused::Listed : QsaFused::Pooled;
}

}  // namespace ds4::cuda
