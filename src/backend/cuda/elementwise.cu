// Elementwise ops, row copies and gathers, and the hyper-connection / PLE-gate mixing. All are memory-bound:
// one thread per output element in a grid-stride loop, consecutive threads on consecutive elements so every
// warp access is coalesced.
#include "backend/cuda/common.cuh"

namespace ds4::cuda {
namespace {

using detail::grid_for;

#define DS4_GRID_STRIDE(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

__global__ void activate_kernel(const float* x, float* y, int64_t n, Act act, float in_div, float out_scale) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, n) y[i] = out_scale * detail::apply_act(act, x[i] / in_div);
}
__global__ void swiglu_kernel(const float* g, const float* u, float* y, int64_t n) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, n) y[i] = detail::silu(g[i]) * u[i];
}
__global__ void add_kernel(const float* a, const float* b, float* y, int64_t n) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}
__global__ void add_gated_rows_kernel(const float* a, const float* b, const float* logit, float* y, int64_t T, int64_t H) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, T * H) y[i] = a[i] + detail::sigmoid(logit[i / H]) * b[i];
}
__global__ void mul_sigmoid_kernel(float* x, const float* gate, int64_t n) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, n) x[i] *= detail::sigmoid(gate[i]);
}
__global__ void embed_streams_kernel(const bf16* table, int64_t H, const int32_t* tokens, int64_t T, int64_t S, float* x) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, T * S * H) {
    const int64_t t = i / (S * H), h = i % H;
    x[i] = __bfloat162float(table[int64_t(tokens[t]) * H + h]);
  }
}
__global__ void gather_rows_kernel(const bf16* table, int64_t cols, const int64_t* rows, int64_t n, float* out) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, n * cols) out[i] = __bfloat162float(table[rows[i / cols] * cols + i % cols]);
}
__global__ void store_rows_bf16_kernel(const float* src, int64_t n, bf16* dst, int64_t width, const int64_t* row0_dev) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  if (row0_dev) dst += *row0_dev * width;
  DS4_GRID_STRIDE(i, n) dst[i] = __float2bfloat16_rn(src[i]);
}
__global__ void copy_floats_kernel(float* dst, const float* src, int64_t n) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, n) dst[i] = src[i];
}
// dst[row0 + r][c] = src[r][c], row0 read on the device.
__global__ void copy_rows_at_kernel(float* dst, int64_t dst_stride, const int64_t* row0_dev, const float* src,
                                    int64_t src_stride, int64_t rows, int64_t cols) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  dst += *row0_dev * dst_stride;
  DS4_GRID_STRIDE(i, rows * cols) dst[(i / cols) * dst_stride + i % cols] = src[(i / cols) * src_stride + i % cols];
}
__global__ void fill_positions_kernel(const int64_t* pos_dev, int64_t pos0, int64_t T, int32_t* pos3) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  if (pos_dev) pos0 = *pos_dev;
  DS4_GRID_STRIDE(i, T * 3) pos3[i] = int32_t(pos0 + i / 3);
}
__global__ void advance_position_kernel(int64_t* pos, int64_t T) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter(); *pos += T; }
// mixed[t][h] = sum_s sigmoid(mix[t][s][h]) normed[t][s][h] / S, streams summed in order as the CPU does.
__global__ void hc_collapse_kernel(const float* mix, const float* normed, int64_t T, int64_t S, int64_t H, float* mixed) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, T * H) {
    const int64_t t = i / H, h = i % H;
    float acc = 0.0f;
    for (int64_t s = 0; s < S; s++) {
      const int64_t j = (t * S + s) * H + h;
      acc += detail::sigmoid(mix[j]) * normed[j];
    }
    mixed[i] = acc / float(S);
  }
}
__global__ void hc_inject_kernel(float* x, const float* out, const float* inject, int64_t T, int64_t S, int64_t H) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  DS4_GRID_STRIDE(i, T * S * H) {
    const int64_t ts = i / H, t = ts / S, h = i % H;
    x[i] += out[t * H + h] * inject[ts];
  }
}
// One block per (token, stream): the key·query dot over H, then the gated value row.

}  // namespace

void activate(Context& ctx, const float* x, float* y, int64_t n, Act act, float in_div, float out_scale) {
  if (n <= 0) return;
  detail::launch(ctx, activate_kernel, grid_for(ctx, n, 256), 256, 0, x, y, n, act, in_div, out_scale);
  DS4_CUDA_CHECK_LAUNCH();
}

void swiglu(Context& ctx, const float* gate, const float* up, float* y, int64_t n) {
  if (n <= 0) return;
  detail::launch(ctx, swiglu_kernel, grid_for(ctx, n, 256), 256, 0, gate, up, y, n);
  DS4_CUDA_CHECK_LAUNCH();
}

void add(Context& ctx, const float* a, const float* b, float* y, int64_t n) {
  if (n <= 0) return;
  detail::launch(ctx, add_kernel, grid_for(ctx, n, 256), 256, 0, a, b, y, n);
  DS4_CUDA_CHECK_LAUNCH();
}

void add_gated_rows(Context& ctx, const float* a, const float* b, const float* logit, float* y, int64_t T, int64_t H) {
  if (T <= 0 || H <= 0) return;
  detail::launch(ctx, add_gated_rows_kernel, grid_for(ctx, T * H, 256), 256, 0, a, b, logit, y, T, H);
  DS4_CUDA_CHECK_LAUNCH();
}

void mul_sigmoid(Context& ctx, float* x, const float* gate, int64_t n) {
  if (n <= 0) return;
  detail::launch(ctx, mul_sigmoid_kernel, grid_for(ctx, n, 256), 256, 0, x, gate, n);
  DS4_CUDA_CHECK_LAUNCH();
}

void copy_rows(Context& ctx, float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t rows,
               int64_t cols) {
  detail::require(cols <= dst_stride && cols <= src_stride, "copy_rows: cols exceed a stride");
  if (rows <= 0 || cols <= 0) return;
  DS4_CUDA_CHECK(cudaMemcpy2DAsync(dst, size_t(dst_stride) * 4, src, size_t(src_stride) * 4, size_t(cols) * 4,
                                   size_t(rows), cudaMemcpyDeviceToDevice, ctx.stream()));
}

void embed_streams(Context& ctx, const bf16* table, int64_t H, const int32_t* tokens, int64_t T, int64_t streams,
                   float* x) {
  if (T <= 0 || H <= 0 || streams <= 0) return;
  detail::launch(ctx, embed_streams_kernel, grid_for(ctx, T * streams * H, 256), 256, 0, table, H, tokens, T, streams, x);
  DS4_CUDA_CHECK_LAUNCH();
}

void gather_rows(Context& ctx, const bf16* table, int64_t cols, const int64_t* rows, int64_t n, float* out) {
  if (n <= 0 || cols <= 0) return;
  detail::launch(ctx, gather_rows_kernel, grid_for(ctx, n * cols, 256), 256, 0, table, cols, rows, n, out);
  DS4_CUDA_CHECK_LAUNCH();
}

void store_rows_bf16(Context& ctx, const float* src, int64_t T, int64_t width, bf16* cache, int64_t row0) {
  store_rows_bf16(ctx, src, T, width, cache, SeqPos::host(row0));
}

void store_rows_bf16(Context& ctx, const float* src, int64_t T, int64_t width, bf16* cache, SeqPos row0) {
  if (T <= 0 || width <= 0) return;
  bf16* dst = row0.dev ? cache : cache + row0.bound * width;
  detail::launch(ctx, store_rows_bf16_kernel, grid_for(ctx, T * width, 256), 256, 0, src, T * width, dst, width, row0.dev);
  DS4_CUDA_CHECK_LAUNCH();
}

void copy_floats(Context& ctx, float* dst, const float* src, int64_t n) {
  if (n <= 0) return;
  detail::launch(ctx, copy_floats_kernel, grid_for(ctx, n, 256), 256, 0, dst, src, n);
  DS4_CUDA_CHECK_LAUNCH();
}

void copy_rows_at(Context& ctx, float* dst, int64_t dst_stride, SeqPos row0, const float* src, int64_t src_stride,
                  int64_t rows, int64_t cols) {
  if (!row0.dev) return copy_rows(ctx, dst + row0.bound * dst_stride, dst_stride, src, src_stride, rows, cols);
  detail::require(cols <= dst_stride && cols <= src_stride, "copy_rows_at: cols exceed a stride");
  if (rows <= 0 || cols <= 0) return;
  detail::launch(ctx, copy_rows_at_kernel, grid_for(ctx, rows * cols, 256), 256, 0, dst, dst_stride, row0.dev, src,
                                                                                src_stride, rows, cols);
  DS4_CUDA_CHECK_LAUNCH();
}

void fill_positions(Context& ctx, SeqPos pos0, int64_t T, int32_t* pos3) {
  if (T <= 0) return;
  detail::launch(ctx, fill_positions_kernel, grid_for(ctx, 3 * T, 256), 256, 0, pos0.dev, pos0.bound, T, pos3);
  DS4_CUDA_CHECK_LAUNCH();
}

void advance_position(Context& ctx, int64_t* pos, int64_t T) {
  detail::launch(ctx, advance_position_kernel, 1, 1, 0, pos, T);
  DS4_CUDA_CHECK_LAUNCH();
}

void hc_collapse(Context& ctx, const float* mix, const float* normed, int64_t T, int64_t streams, int64_t H,
                 float* mixed) {
  if (T <= 0 || H <= 0) return;
  detail::require(streams > 0, "hc_collapse: streams must be positive");
  detail::launch(ctx, hc_collapse_kernel, grid_for(ctx, T * H, 256), 256, 0, mix, normed, T, streams, H, mixed);
  DS4_CUDA_CHECK_LAUNCH();
}

void hc_inject(Context& ctx, float* x, const float* out, const float* inject, int64_t T, int64_t streams, int64_t H) {
  if (T <= 0 || H <= 0 || streams <= 0) return;
  detail::launch(ctx, hc_inject_kernel, grid_for(ctx, T * streams * H, 256), 256, 0, x, out, inject, T, streams, H);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
