// step_inputs (ops.h): the positions (and the next step's), the residual streams' embedding rows and the first
// PLE layer's n-gram embeddings in the step's first kernel. These were four kernels on every decode step's chain:
// fill_positions, embed_streams, advance_position after the last layer, and ple_embed (a block hashing, carrying
// the context and gathering: 6.2-6.7 us of chain on the H200) in the middle of the step although it reads nothing
// but the tokens. The blocks before the last do fill_positions' and embed_streams' elements with their
// expressions, the last does ple_embed's (ple_embed.cuh), so the values are those ops'. Every block first copies
// the chunk's tokens (at most kStagedTokens) into shared memory: a decode step's token may be host-mapped memory,
// read once a block over PCIe instead of once an element.
#include "backend/cuda/ple_embed.cuh"

namespace ds4::cuda {
namespace {

constexpr int kThreads = detail::kPleEmbedThreads;  // the PLE block's, so one block size serves both parts
constexpr int kStagedTokens = 64;

struct StepInputsArgs {
  const int32_t* tokens;
  int T;
  int32_t* tokens_copy;
  const int64_t* pos_dev;
  int64_t pos0;
  int32_t* pos3;
  int64_t *pos_copy, *advance;
  const bf16* table;
  int64_t H, S;
  float* x;
  unsigned embed_blocks;  // the PLE block follows them when ple is set
  bool ple;
  PleHash hash;
  int64_t* context;
  const bf16* ple_table;
  int64_t cols;
  int64_t* rows;
  float* emb;
};

__global__ void __launch_bounds__(kThreads) step_inputs_kernel(StepInputsArgs a) {
  __shared__ int32_t staged[kStagedTokens];
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const bool stage = a.T <= kStagedTokens;
  if (stage)
    for (int t = int(threadIdx.x); t < a.T; t += kThreads) staged[t] = a.tokens[t];
  __syncthreads();
  const int32_t* tokens = stage ? staged : a.tokens;
  if (a.ple && blockIdx.x == a.embed_blocks) {
    detail::ple_embed_block(a.hash, tokens, a.T, a.context, a.ple_table, a.cols, a.rows, a.emb, pdl);
    return;
  }
  if (blockIdx.x == 0) {
    // One thread reads the position, then moves it on (advance may be pos_dev itself).
    __shared__ int64_t p0s;
    if (threadIdx.x == 0) {
      const int64_t p = a.pos_dev ? *a.pos_dev : a.pos0;
      p0s = p;
      if (a.pos_copy) *a.pos_copy = p;
      if (a.advance) *a.advance = p + a.T;
    }
    __syncthreads();
    const int64_t p0 = p0s;
    for (int64_t i = threadIdx.x; i < int64_t(a.T) * 3; i += kThreads) a.pos3[i] = int32_t(p0 + i / 3);
    if (a.tokens_copy)
      for (int t = int(threadIdx.x); t < a.T; t += kThreads) a.tokens_copy[t] = tokens[t];
  }
  const int64_t n = int64_t(a.T) * a.S * a.H, stride = int64_t(a.embed_blocks) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const int64_t t = i / (a.S * a.H), h = i % a.H;
    a.x[i] = __bfloat162float(a.table[int64_t(tokens[t]) * a.H + h]);
  }
}

}  // namespace

void step_inputs(Context& ctx, const int32_t* tokens, int64_t T, int32_t* tokens_copy, const StepPos& pos,
                 const bf16* table, int64_t H, int64_t streams, float* x, const StepPle* ple) {
  detail::require(T >= 1 && T < (int64_t(1) << 31) && H > 0 && streams > 0 && tokens && pos.pos3 && table && x,
                  "step_inputs: bad shape or operand");
  StepInputsArgs a{};
  a.tokens = tokens, a.T = int(T), a.tokens_copy = tokens_copy, a.pos_dev = pos.pos0.dev, a.pos0 = pos.pos0.bound;
  a.pos3 = pos.pos3, a.pos_copy = pos.pos_copy, a.advance = pos.advance, a.table = table, a.H = H, a.S = streams;
  a.x = x;
  a.embed_blocks = detail::grid_for(ctx, T * streams * H, kThreads);
  if (ple) {
    detail::require_supported(ple_embed_supported(*ple->hash, T), "step_inputs: the PLE part needs 1 <= T <= 8");
    detail::require(ple->cols >= 1 && T * ple->hash->heads() * ple->cols < (int64_t(1) << 31) && ple->context &&
                        ple->table && ple->rows && ple->emb,
                    "step_inputs: bad PLE operands");
    a.ple = true, a.hash = *ple->hash, a.context = ple->context, a.ple_table = ple->table, a.cols = ple->cols;
    a.rows = ple->rows, a.emb = ple->emb;
  }
  detail::launch(ctx, step_inputs_kernel, a.embed_blocks + (ple ? 1u : 0u), kThreads, 0, a);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
