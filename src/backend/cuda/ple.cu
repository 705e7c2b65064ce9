// PLE n-gram hashing on the device: one thread per token hashes its window (ple_hash.h); a one-thread kernel
// then carries the last N-1 ids into the next chunk. Two kernels because the context must not change while
// hashing threads still read it.
#include "backend/cuda/common.cuh"

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

}  // namespace

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
