// The PLE n-gram embedding of a decode or verification chunk in one block (ple_embed, and the step's first kernel,
// step_inputs): one implementation, so both give the same rows, context and embeddings.
#pragma once
#include "backend/cuda/common.cuh"
#include "backend/cuda/ple_hash.h"

namespace ds4::cuda::detail {

// Token i of the history: the carried context (ctx ids), then the chunk's tokens.
struct PleHistory {
  const int64_t* context;
  const int32_t* tokens;
  int64_t ctx;
  __device__ int64_t operator()(int64_t i) const { return i < ctx ? context[i] : int64_t(tokens[i - ctx]); }
};

// new context[r] = history[T + r]; ascending r never reads an entry already replaced (T >= 1). One thread.
__device__ __forceinline__ void carry_context(const int32_t* tokens, int64_t T, int64_t ctx, int64_t* context) {
  for (int64_t r = 0; r < ctx; r++) {
    const int64_t src = T + r;
    context[r] = src < ctx ? context[src] : int64_t(tokens[src - ctx]);
  }
}

// ple_ngram_rows + gather_rows for T <= kPleTailMaxT tokens by one block of kPleEmbedThreads threads (a thread per
// head and token): the rows hashed, the context carried after a barrier (no thread reads it any more), then the
// table rows gathered. Called after the kernel's PDL wait (pdl: its trace marks).
constexpr int kPleEmbedThreads = 256;
__device__ inline void ple_embed_block(const PleHash& p, const int32_t* tokens, int T, int64_t* context,
                                       const bf16* table, int64_t cols, int64_t* rows, float* emb,
                                       const PdlScope& pdl) {
  __shared__ int64_t srow[kPleTailMaxT * PleHash::kMaxHeads];
  const int heads = int(p.heads()), ctx = p.ngram - 1, n = T * heads;
  const PleHistory hist{context, tokens, ctx};
  for (int j = int(threadIdx.x); j < n; j += kPleEmbedThreads) {
    const int64_t r = ple_head_row(p, hist, ctx + j / heads, j % heads);
    srow[j] = r;
    rows[j] = r;
  }
  pdl.mark(0);      // trace builds: thread 0's rows hashed
  __syncthreads();  // every read of the context done
  pdl.mark(1);
  if (threadIdx.x == 0) carry_context(tokens, T, ctx, context);
  // The gather, kGatherBatch elements a thread at a time with every load issued before the first store (a load
  // after a store through another pointer was one memory round trip each: 10 a thread, 8.6 us of the kernel).
  constexpr int kGatherBatch = 8;
  const int total = n * int(cols);
  for (int e0 = int(threadIdx.x); e0 < total; e0 += kPleEmbedThreads * kGatherBatch) {
    bf16 v[kGatherBatch];
#pragma unroll
    for (int j = 0; j < kGatherBatch; j++) {
      const int e = e0 + j * kPleEmbedThreads;
      if (e < total) v[j] = table[srow[e / int(cols)] * cols + e % int(cols)];
    }
#pragma unroll
    for (int j = 0; j < kGatherBatch; j++) {
      const int e = e0 + j * kPleEmbedThreads;
      if (e < total) emb[e] = __bfloat162float(v[j]);
    }
  }
  pdl.mark(2);  // thread 0's embeddings stored
}

}  // namespace ds4::cuda::detail
