// The QSA indexer (models/qwen_hybrid/sparse_attention.cpp, qsa_select): block pooling of indexer keys, relu-sum
// block scores, top-k block selection with the CPU's tie behaviour, and the expansion into position lists that
// attention() reads.
#include "backend/cuda/qsa.cuh"

namespace ds4::cuda {
namespace {

// One block per pooled block b: the mean of its R raw key rows, zero-centred RMSNorm, RoPE at position b * R.
// With pos_dev set, the blocks are those the chunk of T tokens at *pos_dev completes, [pos/R, (pos+T)/R), and
// blocks of the grid beyond them return at once (the grid is sized for the most a chunk can complete).
__global__ void pool_kernel(const float* index_keys, int64_t b0, const int64_t* pos_dev, int64_t T, int64_t R,
                            int64_t D, const bf16* k_norm, RopeParams rope, float eps, float* block_keys) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ float vals[];  // [D]
  __shared__ double red[32];
  if (pos_dev) {
    const int64_t p = *pos_dev;
    b0 = p / R;
    if (b0 + int64_t(blockIdx.x) >= (p + T) / R) return;  // uniform over the block
  }
  detail::pool_block(index_keys, nullptr, b0 + blockIdx.x, R, D, k_norm, rope, eps, int(blockDim.x), vals, red,
                     block_keys + (b0 + blockIdx.x) * D);
}

// Scores of pooled blocks for query t (blockIdx.y): sum over heads of relu(q_h . key_b), / sqrt(D). A CUDA block
// takes `nsb` pooled blocks from blockIdx.x * nsb, one thread per (head, pooled block) dot product: the dot is one
// fmaf chain over e in order, and the heads' relu'd dots are added as 4 partial sums (heads g, g + 4, g + 8, ...
// in order, starting from 0) then ((p0 + p1) + p2) + p3. The same bits as the earlier form, where 4 warps each
// took every fourth head and a thread ran all of its heads' chains for one block: there a thread's 4 x D
// dependent fmafs set the time (32 us a decode step at D = 128 and 16 heads under Nsight Compute, whatever the
// context beyond the budget), here one chain does (10.7 us; an attention layer's decode step after a
// 4096-token prompt 176 -> 152 us).
constexpr int kScoreThreads = 256;       // the most threads a block has (IH above 256: each loops)
__host__ __device__ inline int score_row(int D) { return (D + 3) / 4 * 4 + 4; }
constexpr int kScoreBlockThreads = 128;  // (head, pooled block) pairs per block when IH <= 128

__global__ void __launch_bounds__(kScoreThreads)
    score_kernel(const float* q, const float* block_keys, const int64_t* pos0_dev, int64_t pos0, int64_t IH, int64_t D,
                 int64_t R, int64_t block_topk, int64_t nb_max, int64_t nsb, float* scores) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) float sm[];
  // Rows of the query's heads and of the keys padded to kp = D rounded up to 4, plus 4 floats: 16-byte aligned for
  // float4 reads, and the 8 rows that a quarter-warp's float4 reads touch start on different groups of 4 banks.
  const int di = int(D), kp = score_row(di);
  float* q_s = sm;                    // [IH][kp]
  float* k_s = q_s + IH * kp;         // [nsb][kp]
  float* rel = k_s + nsb * kp;        // [IH][nsb]: relu(q_h . key_b)
  // The staging takes 32-bit offsets (select_impl bounds IH * D and nsb * D), and the query is loaded while the
  // position is read: with 64-bit divisions per element and the position first, staging took 6.2 of the
  // kernel's 9 us after the wait on the H200 (trace marks, 4096- and 32768-token prompts).
  // The keys are staged together with the query and the position, not after the position (two round trips
  // before the dots): the rows up to nb_max exist, and rows past this query's blocks are staged but never scored.
  const int64_t t = blockIdx.y, b0 = int64_t(blockIdx.x) * nsb;
  if (pos0_dev) pos0 = *pos0_dev;
  const int ihd = int(IH * D), nkd = int(nsb * D);
  const int stored = int(detail::imax(0, detail::imin(nsb, nb_max - b0))) * di;  // elements of rows below nb_max
  const float* qt = q + t * IH * D;
  const float* kt = block_keys + b0 * D;
#pragma unroll 16
  for (int i = int(threadIdx.x); i < ihd; i += int(blockDim.x)) {
    const int h = i / di, e = i - h * di;
    q_s[h * kp + e] = qt[i];
  }
#pragma unroll 8
  for (int i = int(threadIdx.x); i < nkd; i += int(blockDim.x)) {
    const int bl = i / di, e = i - bl * di;
    k_s[bl * kp + e] = i < stored ? kt[i] : 0.0f;
  }
  const int64_t nb = (pos0 + t + 1) / R;
  if (nb <= block_topk || b0 >= nb) return;  // whole block uniform: no barrier is skipped by only some threads
  __syncthreads();
  pdl.mark(0);  // trace builds: q and the keys staged
  // Threads of a warp share h (q read as a broadcast) and take consecutive pooled blocks. Each dot is one fmaf
  // chain over e in order, its operands read 4 at a time (read one by one, the chain took 1.9 us after a
  // 4096-token prompt: the shared-memory reads, not the fmafs, set its pace).
  const int d4 = di / 4 * 4;
  for (int i = int(threadIdx.x); i < int(IH * nsb); i += int(blockDim.x)) {
    const int h = i / int(nsb), bl = i % int(nsb);
    const float* qh = q_s + h * kp;
    const float* kb = k_s + bl * kp;
    float d = 0.0f;
#pragma unroll 4
    for (int e = 0; e < d4; e += 4) {
      const float4 qa = *reinterpret_cast<const float4*>(qh + e), ka = *reinterpret_cast<const float4*>(kb + e);
      d = fmaf(qa.x, ka.x, d);
      d = fmaf(qa.y, ka.y, d);
      d = fmaf(qa.z, ka.z, d);
      d = fmaf(qa.w, ka.w, d);
    }
    for (int e = d4; e < di; e++) d = fmaf(qh[e], kb[e], d);
    rel[i] = fmaxf(d, 0.0f);
  }
  __syncthreads();
  pdl.mark(1);  // the dots
  for (int64_t bl = threadIdx.x; bl < nsb; bl += blockDim.x) {
    if (b0 + bl >= nb) break;
    float part[4];
#pragma unroll
    for (int g = 0; g < 4; g++) {
      float acc = 0.0f;
      for (int64_t h = g; h < IH; h += 4) acc += rel[h * nsb + bl];
      part[g] = acc;
    }
    const float s = ((part[0] + part[1]) + part[2]) + part[3];
    scores[t * nb_max + b0 + bl] = s * (1.0f / sqrtf(float(D)));
  }
}

// One block per query: top-k blocks (or all positions when every block fits the budget), sorted ascending,
// expanded to positions, then the incomplete tail block.
__global__ void select_kernel(const float* scores, const int64_t* pos0_dev, int64_t pos0, int64_t R, int64_t block_topk,
                              int64_t nb_max, detail::Item* replay, int32_t* sel, int32_t* count, int64_t stride,
                              bool radix) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  int* chosen = reinterpret_cast<int*>(smem);                  // [block_topk]
  int* sorted = chosen + block_topk;                           // [block_topk]
  void* topk_smem = sorted + block_topk;                       // 8 * block_topk bytes in: 8-byte aligned
  float* vals = reinterpret_cast<float*>(static_cast<unsigned char*>(topk_smem) + detail::select_topk_bytes(nb_max));  // [nb_max]
  const int64_t t = blockIdx.x;
  // The scores (when the call has them) are staged together with the position, not after it (two round trips
  // before the selection): the row has nb_max entries, those past this query's blocks are never ranked.
  if (scores) {
    const float* row = scores + t * nb_max;
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < nb_max; i += blockDim.x) vals[i] = row[i];
  }
  if (pos0_dev) pos0 = *pos0_dev;
  const int64_t p = pos0 + t, nb = (p + 1) / R;
  int32_t* out = sel + t * stride;
  if (nb <= block_topk) {
    detail::all_positions(p, out, count + t);
    return;
  }
  __syncthreads();  // vals
  pdl.mark(1);  // trace builds: the position and the scores read
  const auto value = [vals](int i) { return vals[i]; };
  const int k = int(block_topk), r = int(R);
  detail::choose_blocks(value, int(nb), k, topk_smem, replay + t * nb_max, chosen, sorted, radix);
  pdl.mark(0);  // trace builds: the chosen blocks in ascending order
  const int64_t sel_n = block_topk * R;
  // A warp per chosen block, its lanes over the block's positions.
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), nw = int(blockDim.x >> 5);
  for (int b = warp; b < k; b += nw) {
    const int base = sorted[b] * r;
    for (int o = lane; o < r; o += 32) out[b * r + o] = base + o;
  }
  for (int64_t i = nb * R + threadIdx.x; i <= p; i += blockDim.x) out[sel_n + i - nb * R] = int32_t(i);
  if (threadIdx.x == 0) count[t] = detail::listed_count(p, int(nb), k, r);
}

void pool_impl(Context& ctx, const float* index_keys, int64_t b0, const int64_t* pos_dev, int64_t T, unsigned blocks,
          int64_t R, int64_t D, const bf16* k_norm, const RopeParams& rope, float eps, float* block_keys) {
  detail::require(R > 0 && D > 0 && b0 >= 0, "qsa_pool_blocks: bad shape");
  detail::require(rope.rotary_dim > 0 && rope.rotary_dim <= D && rope.rotary_dim % 2 == 0,
                  "qsa_pool_blocks: the rotary dimension must fit the index head");
  if (blocks == 0) return;
  const size_t smem = size_t(D) * sizeof(float);
  detail::allow_smem(ctx, pool_kernel, smem);
  detail::launch(ctx, pool_kernel, blocks, 128, smem, index_keys, b0, pos_dev, T, R, D, k_norm, rope, eps, block_keys);
  DS4_CUDA_CHECK_LAUNCH();
}

// Scores [T][nb_max] of the complete blocks of each query (score_kernel), when some query can have more than
// block_topk of them (the caller checks).
void score_impl(Context& ctx, const float* q, const float* block_keys, int64_t T, SeqPos pos0, int64_t IH, int64_t D,
                int64_t R, int64_t block_topk, int64_t nb_max, float* scores) {
  detail::require_supported(nb_max <= 16384, "qsa_select: more than 16384 indexer blocks");
  detail::require_supported(IH * D < (int64_t(1) << 24), "qsa_select: indexer heads x head dim too large");
  // Pooled blocks per CUDA block: one thread per (head, pooled block), kScoreBlockThreads of them when IH
  // allows (a block of 256 threads took 16 pooled blocks and read 16 x 16 x 128 keys from shared memory on one
  // multiprocessor: 1.8 us of dots after a 4096-token prompt; 128 threads spread them over twice the blocks).
  const int64_t nsb = detail::imax(1, kScoreBlockThreads / IH);
  const size_t score_smem = size_t((IH + nsb) * score_row(int(D)) + IH * nsb) * sizeof(float);
  detail::allow_smem(ctx, score_kernel, score_smem);
  const dim3 grid(detail::blocks_for(nb_max, int(nsb)), unsigned(T));
  const int threads = IH * nsb <= kScoreBlockThreads ? kScoreBlockThreads : kScoreThreads;
  detail::launch(ctx, score_kernel, grid, threads, score_smem, q, block_keys, pos0.dev, pos0.bound, IH, D, R,
                 block_topk, nb_max, nsb, scores);
  DS4_CUDA_CHECK_LAUNCH();
}

void require_select_shape(SeqPos pos0, int64_t T, int64_t IH, int64_t D, int64_t R, int64_t block_topk) {
  detail::require(R > 0 && IH > 0 && D > 0 && block_topk > 0 && pos0.bound >= 0, "qsa_select: bad shape");
  detail::require(T < 65536, "qsa_select: at most 65535 queries per call");
}

void select_impl(Context& ctx, const float* q, const float* block_keys, int64_t T, SeqPos pos0, int64_t IH, int64_t D,
            int64_t R, int64_t block_topk, int32_t* sel, int32_t* count, int64_t stride) {
  require_select_shape(pos0, T, IH, D, R, block_topk);
  detail::require(stride >= qsa_list_stride(block_topk, R), "qsa_select: stride below qsa_list_stride");
  if (T <= 0) return;
  const int64_t nb_max = qsa_score_stride(pos0.bound, T, R);  // complete blocks seen by the last query (at most)
  ScratchScope scope(ctx.scratch());
  float* scores = nullptr;
  detail::Item* replay = nullptr;
  size_t select_smem = 0;
  if (nb_max > block_topk) {
    scores = ctx.scratch().take<float>(size_t(T * nb_max));
    replay = ctx.scratch().take<detail::Item>(size_t(T * nb_max));
    score_impl(ctx, q, block_keys, T, pos0, IH, D, R, block_topk, nb_max, scores);
    select_smem = size_t(2 * block_topk) * sizeof(int) + detail::select_topk_bytes(nb_max) + size_t(nb_max) * sizeof(float);
    detail::allow_smem(ctx, select_kernel, select_smem);
  }
  const bool radix = detail::select_radix();
  detail::launch(ctx, select_kernel, unsigned(T), 256, select_smem, scores, pos0.dev, pos0.bound, R, block_topk, nb_max,
                 replay, sel, count, stride, radix);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

void qsa_pool_blocks(Context& ctx, const float* index_keys, int64_t b0, int64_t b1, int64_t R, int64_t D,
                     const bf16* k_norm, const RopeParams& rope, float eps, float* block_keys) {
  pool_impl(ctx, index_keys, b0, nullptr, 0, b1 > b0 ? unsigned(b1 - b0) : 0u, R, D, k_norm, rope, eps, block_keys);
}

void qsa_pool_chunk(Context& ctx, const float* index_keys, SeqPos pos0, int64_t T, int64_t R, int64_t D,
                    const bf16* k_norm, const RopeParams& rope, float eps, float* block_keys) {
  detail::require(R > 0 && T >= 0, "qsa_pool_chunk: bad shape");
  if (!pos0.dev) {
    qsa_pool_blocks(ctx, index_keys, pos0.bound / R, (pos0.bound + T) / R, R, D, k_norm, rope, eps, block_keys);
    return;
  }
  // At most T / R + 1 blocks complete inside a chunk of T tokens, wherever it starts.
  pool_impl(ctx, index_keys, 0, pos0.dev, T, unsigned(T / R + 1), R, D, k_norm, rope, eps, block_keys);
}

void qsa_select(Context& ctx, const float* q, const float* block_keys, int64_t T, int64_t pos0, int64_t IH, int64_t D,
                int64_t R, int64_t block_topk, int32_t* sel, int32_t* count, int64_t stride) {
  select_impl(ctx, q, block_keys, T, SeqPos::host(pos0), IH, D, R, block_topk, sel, count, stride);
}

void qsa_select(Context& ctx, const float* q, const float* block_keys, int64_t T, SeqPos pos0, int64_t IH, int64_t D,
                int64_t R, int64_t block_topk, int32_t* sel, int32_t* count, int64_t stride) {
  select_impl(ctx, q, block_keys, T, pos0, IH, D, R, block_topk, sel, count, stride);
}

void qsa_score(Context& ctx, const float* q, const float* block_keys, int64_t T, SeqPos pos0, int64_t IH, int64_t D,
               int64_t R, int64_t block_topk, float* scores) {
  require_select_shape(pos0, T, IH, D, R, block_topk);
  const int64_t nb_max = qsa_score_stride(pos0.bound, T, R);
  if (T > 0 && nb_max > block_topk) score_impl(ctx, q, block_keys, T, pos0, IH, D, R, block_topk, nb_max, scores);
}

}  // namespace ds4::cuda
