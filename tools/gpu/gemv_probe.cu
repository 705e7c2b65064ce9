// Where a one-token GEMV loses time against the HBM limit: chains of launches of y = W x (bf16 W, float32 x and
// y) over distinct weight matrices (together larger than L2, as in a decode step), replayed from a CUDA graph with
// programmatic dependent launch, for the decode step's matrix shapes and a few ways of streaming the same rows:
//   rows       one block per 8 / P rows, each warp keeping its chunks in flight in registers (linear.cu's rows
//              kernel before the bulk kernel took the tall matrices)
//   bulk       a few blocks per multiprocessor covering contiguous row ranges, each warp streaming its (row,
//              slice) pieces into shared memory with cp.async.bulk (linear.cu's gemv_bulk_kernel), D pieces in
//              flight per warp, P slices per row
//   read       a plain read of the same bytes (the copy-rate ceiling for this size)
//   persist    tall matrices: a persistent grid, each warp whole rows (both slices) with the next rows' weights in
//              flight in registers, x read through L1 per row as above
//   persist_x  the same with warp pairs (one slice each) keeping their slice of x in registers: only weights
//              stream (linear.cu's gemv_tall_kernel)
//   wide_x     short wide matrices: P warps per row, a persistent grid, each lane's slice of x in registers
//              (faster here than the rows kernel, slower inside the decode step: session 12 in bench/RESULTS.md)
// The rows, bulk, persist and persist_x sums of a row are the same bits for the same P (checked on hashed weights first).
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 -Isrc tools/gpu/gemv_probe.cu -o /tmp/gp && /tmp/gp
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/gemv.cuh"
#include "probe_util.cuh"

#include <cstdint>
#include <cmath>
#include <cstdio>
#include <vector>


using ds4::cuda::detail::dot8;
using ds4::cuda::detail::ld_stream;
using ds4::cuda::detail::pdl_enter;
using ds4::cuda::detail::prefetch_l2;

// The rows kernel: one row group per block, 8 warps, P warps per row (slices of K).
__global__ void __launch_bounds__(256) gemv_rows(const float* x, int K, const __nv_bfloat16* W, int N, float* y, int P) {
  __shared__ float red[8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, groups = 8 / P;
  const int chunks = K / 8, per = (chunks + P - 1) / P, c_begin = (warp % P) * per, c_end = min(c_begin + per, chunks);
  const int row = int(blockIdx.x) * groups + warp / P;
  const __nv_bfloat16* rp = W + int64_t(min(row, N - 1)) * K;
  if (c_begin + lane * 8 < c_end) prefetch_l2(rp + (c_begin + lane * 8) * 8);
  pdl_enter();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  constexpr int U = 8;
  float acc = 0.0f;
  for (int c0 = c_begin + lane; c0 < c_end; c0 += 32 * U) {
    uint4 w[U];
    float4 xa[U], xb[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int c = c0 + 32 * u;
      const bool in = c < c_end;
      w[u] = in ? ld_stream(rp + c * 8) : make_uint4(0, 0, 0, 0);
      xa[u] = in ? __ldg(x4 + 2 * c) : make_float4(0, 0, 0, 0);
      xb[u] = in ? __ldg(x4 + 2 * c + 1) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; u++) acc += dot8(w[u], xa[u], xb[u]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) red[warp] = acc;
  __syncthreads();
  if (warp % P == 0 && lane == 0 && row < N) {
    float s = 0.0f;
    for (int q = 0; q < P; q++) s += red[warp + q];
    y[row] = s;
  }
}

// The same bytes read as fast as a grid-stride loop can: the ceiling.
__global__ void __launch_bounds__(256) read_all(const uint4* p, int64_t n, float* y) {
  pdl_enter();
  uint32_t a = 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 v0 = ld_stream(p + i), v1 = ld_stream(p + i + stride), v2 = ld_stream(p + i + 2 * stride),
                v3 = ld_stream(p + i + 3 * stride);
    a ^= v0.x ^ v0.y ^ v0.z ^ v0.w ^ v1.x ^ v1.y ^ v1.z ^ v1.w ^ v2.x ^ v2.y ^ v2.z ^ v2.w ^ v3.x ^ v3.y ^ v3.z ^ v3.w;
  }
  for (; i < n; i += stride) {
    const uint4 v = ld_stream(p + i);
    a ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (a == 0x12345678u) y[0] = 1.0f;  // never in practice: keeps the loads
}


// ----- bulk-copy GEMV: weights streamed global -> shared by the copy engine (bulk_copy.cuh) -----
using ds4::cuda::detail::bulk_g2s;
using ds4::cuda::detail::fence_async_shared;
using ds4::cuda::detail::mbar_expect_tx;
using ds4::cuda::detail::mbar_init;
using ds4::cuda::detail::mbar_wait;
constexpr int kPiece = 4096;

// Rows of P slices (the rows kernel's slicing): the P warps of a group take the P slices of one row, each warp
// streaming its slices' pieces through its own D slots; the group adds its slice sums in slice order.
template <int D>
__global__ void __launch_bounds__(256) gemv_bulk2(const float* x, int K, const __nv_bfloat16* W, int N, float* y, int P,
                                                 int rows_per_block) {
  extern __shared__ __align__(128) uint8_t sm[];
  __shared__ __align__(8) uint64_t bars[8][D];
  __shared__ float red[2][8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, G = 8 / P, grp = warp / P, sl = warp % P;
  const int chunks = K / 8, per = (chunks + P - 1) / P, c_begin = sl * per, c_end = min(c_begin + per, chunks);
  const int slice_bytes = c_end > c_begin ? (c_end - c_begin) * 16 : 0, ppr = (slice_bytes + kPiece - 1) / kPiece;
  const int r_begin = blockIdx.x * rows_per_block, r_end = min(N, r_begin + rows_per_block);
  const int nrows = r_end - r_begin - grp > 0 ? (r_end - r_begin - grp + G - 1) / G : 0;
  const int total = nrows * ppr;
  uint8_t* mine = sm + warp * D * kPiece;
  auto issue = [&](int q) {
    const int slot = q % D, row = r_begin + grp + G * (q / ppr), p = q % ppr;
    const uint32_t bytes = uint32_t(min(kPiece, slice_bytes - p * kPiece));
    mbar_expect_tx(&bars[warp][slot], bytes);
    bulk_g2s(mine + slot * kPiece,
             reinterpret_cast<const uint8_t*>(W + int64_t(row) * K + int64_t(c_begin) * 8) + p * kPiece, bytes,
             &bars[warp][slot]);
  };
  if (lane == 0) {
    for (int d = 0; d < D; d++) mbar_init(&bars[warp][d], 1);
    for (int q = 0; q < min(D, total); q++) issue(q);
  }
  __syncwarp();
  pdl_enter();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int i = 0; i < nrows; i++) {
    float acc = 0.0f;
    for (int p = 0; p < ppr; p++) {
      const int q = i * ppr + p, slot = q % D;
      mbar_wait(&bars[warp][slot], uint32_t((q / D) & 1));
      const uint4* wp = reinterpret_cast<const uint4*>(mine + slot * kPiece);
      const int nch = min(kPiece, slice_bytes - p * kPiece) / 16, cb = c_begin + p * (kPiece / 16);
#pragma unroll 4
      for (int j = lane; j < nch; j += 32) {
        const int c = cb + j;
        acc += dot8(wp[j], __ldg(x4 + 2 * c), __ldg(x4 + 2 * c + 1));
      }
      __syncwarp();
      if (lane == 0 && q + D < total) {
        fence_async_shared();
        issue(q + D);
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    const int row = r_begin + grp + G * i;
    if (P == 1) {
      if (lane == 0) y[row] = acc;
      continue;
    }
    if (lane == 0) red[i & 1][warp] = acc;
    asm volatile("bar.sync %0, %1;" ::"r"(1 + grp), "r"(32 * P) : "memory");
    if (sl == 0 && lane == 0) {
      float sum = 0.0f;
      for (int q = 0; q < P; q++) sum += red[i & 1][warp + q];
      y[row] = sum;
    }
  }
}

// Tall matrices, 2 slices per row (the bulk kernel's P = 2), J chunks per lane per slice: a persistent grid of a
// few blocks per multiprocessor, each warp taking rows gw, gw + nw, ... (nw warps in the grid) with DEPTH rows'
// weights in flight in registers (the next row's loads issued before the current row is summed), x read through L1
// as the bulk kernel reads it. Sums in the bulk kernel's order (a lane's chunks c_begin + lane + 32 j in increasing
// j, the lane butterfly, the slices in order from 0), so the same bits.
template <int J, int DEPTH, int MINB>
__global__ void __launch_bounds__(256, MINB) gemv_persist(const float* x, int K, const __nv_bfloat16* W, int N, float* y) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gw = blockIdx.x * 8 + warp, nw = gridDim.x * 8;
  const int chunks = K / 8, per = (chunks + 1) / 2;
  uint4 w[DEPTH][2][J];
  auto load = [&](uint4 (&dst)[2][J], int row) {
#pragma unroll
    for (int sl = 0; sl < 2; sl++)
#pragma unroll
      for (int j = 0; j < J; j++) {
        const int c = sl * per + lane + 32 * j;
        dst[sl][j] = row < N && c < min(sl * per + per, chunks) ? ld_stream(W + int64_t(row) * K + int64_t(c) * 8)
                                                                 : make_uint4(0, 0, 0, 0);
      }
  };
#pragma unroll
  for (int d = 0; d < DEPTH; d++) load(w[d], gw + nw * d);
  pdl_enter();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int i = 0; gw + nw * i < N; i += DEPTH) {
#pragma unroll
    for (int d = 0; d < DEPTH; d++) {
      const int row = gw + nw * (i + d);
      if (row >= N) break;
      float sum = 0.0f;
#pragma unroll
      for (int sl = 0; sl < 2; sl++) {
        float acc = 0.0f;
        const int c_end = min(sl * per + per, chunks);
#pragma unroll
        for (int j = 0; j < J; j++) {
          const int c = sl * per + lane + 32 * j;
          if (c < c_end) acc += dot8(w[d][sl][j], __ldg(x4 + 2 * c), __ldg(x4 + 2 * c + 1));
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        sum += acc;
      }
      if (lane == 0) y[row] = sum;
      load(w[d], gw + nw * (i + d + DEPTH));
    }
  }
}

// The same with the activations in registers: warp pair q takes rows q, q + npairs, ..., its warp 2q + sl the
// slice sl (every row it takes needs the same x chunks, loaded once), DEPTH rows' weights in flight; the pair adds
// its two slice sums in order through shared memory (red alternates by row, as in the bulk kernel).
template <int J, int DEPTH, int MINB>
__global__ void __launch_bounds__(256, MINB) gemv_persist_x(const float* x, int K, const __nv_bfloat16* W, int N,
                                                            float* y) {
  __shared__ float red[2][8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, sl = warp & 1;
  const int gp = blockIdx.x * 4 + (warp >> 1), np = gridDim.x * 4;
  const int chunks = K / 8, per = (chunks + 1) / 2, c_begin = sl * per, c_end = min(c_begin + per, chunks);
  uint4 w[DEPTH][J];
  auto load = [&](uint4 (&dst)[J], int row) {
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int c = c_begin + lane + 32 * j;
      dst[j] = row < N && c < c_end ? ld_stream(W + int64_t(row) * K + int64_t(c) * 8) : make_uint4(0, 0, 0, 0);
    }
  };
#pragma unroll
  for (int d = 0; d < DEPTH; d++) load(w[d], gp + np * d);
  pdl_enter();
  ds4::cuda::detail::XSlice<J> xs;  // the kernels' own helper (gemv.cuh)
  xs.load(x, c_begin, c_end);
  for (int i = 0; gp + np * i < N; i += DEPTH) {
#pragma unroll
    for (int d = 0; d < DEPTH; d++) {
      const int row = gp + np * (i + d);
      if (row >= N) break;
      float acc = xs.dot(w[d], c_begin, c_end);
      load(w[d], gp + np * (i + d + DEPTH));
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) red[(i + d) & 1][warp] = acc;
      asm volatile("bar.sync %0, 64;" ::"r"(1 + (warp >> 1)) : "memory");
      if (sl == 0 && lane == 0) {
        float sum = 0.0f;
        sum += red[(i + d) & 1][warp];
        sum += red[(i + d) & 1][warp + 1];
        y[row] = sum;
      }
    }
  }
}

// Short, wide matrices: groups of P warps (warp g P + s takes slice s of K, the rows kernel's P slices), each group
// rows g, g + ng, ..., its activation slice in registers (J chunks a lane), one row's weights in flight.
template <int J, int P, int MINB>
__global__ void __launch_bounds__(256, MINB) gemv_wide_x(const float* x, int K, const __nv_bfloat16* W, int N,
                                                         float* y) {
  __shared__ float red[2][8];
  constexpr int G = 8 / P;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, sl = warp % P, grp = warp / P;
  const int g0 = blockIdx.x * G, g = g0 + grp, ng = gridDim.x * G;
  const int chunks = K / 8, per = (chunks + P - 1) / P, c_begin = sl * per, c_end = min(c_begin + per, chunks);
  uint4 w[J];
  auto load = [&](int row) {
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int c = c_begin + lane + 32 * j;
      w[j] = row < N && c < c_end ? ld_stream(W + int64_t(row) * K + int64_t(c) * 8) : make_uint4(0, 0, 0, 0);
    }
  };
  load(g);
  pdl_enter();
  ds4::cuda::detail::XSlice<J> xs;  // the kernels' own helper (gemv.cuh)
  xs.load(x, c_begin, c_end);
  for (int i = 0; g0 + ng * i < N; i++) {
    const int row = g + ng * i;
    float acc = xs.dot(w, c_begin, c_end);
    load(row + ng);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) red[i & 1][warp] = acc;
    asm volatile("bar.sync %0, %1;" ::"r"(1 + grp), "r"(32 * P) : "memory");
    if (sl == 0 && lane == 0 && row < N) {
      float sum = 0.0f;
      for (int q = 0; q < P; q++) sum += red[i & 1][warp + q];
      y[row] = sum;
    }
  }
}

__global__ void fill_hash(__nv_bfloat16* w, int64_t n, float* x, int k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ uint32_t(i >> 32) * 40503u;
    h ^= h >> 15;
    w[i] = __float2bfloat16((int(h % 2001) - 1000) * 1e-3f);
    if (i < k) x[i] = (int((h >> 7) % 2001) - 1000) * 1e-3f;
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  struct Shape {
    const char* name;
    int K, N;
  };
  const Shape shapes[] = {{"2560->16480 (GDN in)", 2560, 16480}, {"2560->19584 (attn in)", 2560, 19584},
                          {"6144->2560 (GDN out)", 6144, 2560},  {"8192->2560 (attn out)", 8192, 2560},
                          {"2560->2560", 2560, 2560},            {"2560->248320 (lm_head)", 2560, 248320}};
  float* x;
  float* y;
  CK(cudaMalloc(&x, 8192 * 4));
  CK(cudaMemset(x, 0, 8192 * 4));
  CK(cudaMalloc(&y, 248320 * 4));
  printf("H200 probe, %d SMs. us per launch in a graph of chained PDL launches over distinct matrices.\n\n", sms);
  printf("| shape | MB | variant | grid | us | GB/s |\n|---|---:|---|---:|---:|---:|\n");
  for (const Shape& sh : shapes) {
    const int64_t bytes = int64_t(sh.K) * sh.N * 2;
    const int mats = int((int64_t(400) << 20) / bytes) + 2 < 16 ? int((int64_t(400) << 20) / bytes) + 2 : 16;
    std::vector<__nv_bfloat16*> W(mats);
    for (auto& w : W) {
      CK(cudaMalloc(&w, bytes));
      CK(cudaMemset(w, 0, bytes));
    }
    // rows_shape: P slices per row for short matrices.
    const int want = 64 * sms, chunks = sh.K / 8;
    int P = 1;
    if (sh.N < 2 * want)
      while (P < 8 && sh.N * 2 * P <= want && chunks / (2 * P) >= 32) P *= 2;
    const int vblocks = (sh.N + 8 / P - 1) / (8 / P);
    struct Var {
      const char* name;
      int grid, D, P;  // D = 0: the rows kernel (grid vblocks), D < 0: read
    };
    std::vector<Var> vars = {{"rows", vblocks, 0, P}};
    for (int bp : {2, 3})
      for (int pp : {1, 2, 4, 8})
        if ((pp == 1) == (P == 1) || (P == 1 && pp == 2)) vars.push_back({bp == 2 ? "bulk2 D=3 x2" : "bulk2 D=2 x3", bp * sms, bp == 2 ? 3 : 2, pp});
    vars.push_back({"read", 8 * sms, -1, P});
    if (sh.N == 2560) {  // D = -20 - v: gemv_wide_x (v 1: P 4 x3, 2: P 8 x3, 3: P 4 x2, 4: P 8 x2)
      vars.push_back({"wide_x P4 x3", 3 * sms, -21, 4});
      vars.push_back({"wide_x P8 x3", 3 * sms, -22, 8});
      vars.push_back({"wide_x P4 x2", 2 * sms, -23, 4});
      vars.push_back({"wide_x P8 x2", 2 * sms, -24, 8});
    }
    if (P == 1 && sh.K == 2560) {  // D = -10 - v: the persistent kernel (v: 1 = depth 1 x4, 2 = depth 2 x2, 3 = depth 1 x3)
      vars.push_back({"persist depth 1 x4", 4 * sms, -11, 2});
      vars.push_back({"persist depth 2 x2", 2 * sms, -12, 2});
      vars.push_back({"persist depth 1 x3", 3 * sms, -13, 2});
      vars.push_back({"persist_x depth 2 x2", 2 * sms, -14, 2});
      vars.push_back({"persist_x depth 3 x2", 2 * sms, -15, 2});
      vars.push_back({"persist_x depth 1 x3", 3 * sms, -16, 2});
      vars.push_back({"persist_x depth 4 x1", 1 * sms, -17, 2});
    }
    CK(cudaFuncSetAttribute(gemv_bulk2<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    CK(cudaFuncSetAttribute(gemv_bulk2<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    {  // bulk against rows on hashed weights: the same slices and per-lane order, so the same bits
      fill_hash<<<1024, 256>>>(W[0], int64_t(sh.K) * sh.N, x, sh.K);
      float *ya, *yb;
      CK(cudaMalloc(&ya, sh.N * 4));
      CK(cudaMalloc(&yb, sh.N * 4));
      launch_pdl(s, gemv_rows, vblocks, 256, 0, x, sh.K, W[0], sh.N, ya, P);
      launch_pdl(s, gemv_bulk2<3>, 2 * sms, 256, size_t(8) * 3 * kPiece, x, sh.K, W[0], sh.N, yb, P,
             (sh.N + 2 * sms - 1) / (2 * sms));
      CK(cudaStreamSynchronize(s));
      std::vector<float> a(sh.N), b(sh.N);
      CK(cudaMemcpy(a.data(), ya, sh.N * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(b.data(), yb, sh.N * 4, cudaMemcpyDeviceToHost));
      int same = 0;
      for (int i = 0; i < sh.N; i++) same += a[i] == b[i];
      printf("| %s | | check (P=%d): bulk equals rows in %d of %d rows | | | |\n", sh.name, P, same, sh.N);
      if (P == 1 && sh.K == 2560) {  // tall: the persistent kernel against the bulk kernel's P = 2 sums
        launch_pdl(s, gemv_bulk2<3>, 2 * sms, 256, size_t(8) * 3 * kPiece, x, sh.K, W[0], sh.N, yb, 2,
                   (sh.N + 2 * sms - 1) / (2 * sms));
        launch_pdl(s, gemv_persist<5, 2, 2>, 2 * sms, 256, 0, x, sh.K, W[0], sh.N, ya);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(a.data(), ya, sh.N * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(b.data(), yb, sh.N * 4, cudaMemcpyDeviceToHost));
        same = 0;
        for (int i = 0; i < sh.N; i++) same += a[i] == b[i];
        printf("| %s | | check (P=2): persist equals bulk in %d of %d rows | | | |\n", sh.name, same, sh.N);
        launch_pdl(s, gemv_persist_x<5, 2, 2>, 2 * sms, 256, 0, x, sh.K, W[0], sh.N, ya);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(a.data(), ya, sh.N * 4, cudaMemcpyDeviceToHost));
        same = 0;
        for (int i = 0; i < sh.N; i++) same += a[i] == b[i];
        printf("| %s | | check (P=2): persist_x equals bulk in %d of %d rows | | | |\n", sh.name, same, sh.N);
      }
      CK(cudaFree(ya));
      CK(cudaFree(yb));
      CK(cudaMemset(x, 0, 8192 * 4));
    }
    for (const Var& v : vars) {
      const int grid = v.D == 0 ? vblocks : v.grid;
      const int rpb = (sh.N + grid - 1) / grid;
      const int chain = 64;
      auto run = [&] {
        for (int i = 0; i < chain; i++) {
          if (v.D > 0) {
            const size_t sm = size_t(8) * v.D * kPiece;
            if (v.D == 2) launch_pdl(s, gemv_bulk2<2>, grid, 256, sm, x, sh.K, W[i % mats], sh.N, y, v.P, rpb);
            else launch_pdl(s, gemv_bulk2<3>, grid, 256, sm, x, sh.K, W[i % mats], sh.N, y, v.P, rpb);
          } else if (v.D == -11) {
            launch_pdl(s, gemv_persist<5, 1, 4>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D == -13) {
            launch_pdl(s, gemv_persist<5, 1, 3>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D <= -21 && v.D >= -24) {
            // J = ceil(K / 8 / P / 32): K up to 8192 with P 4 -> 8, P 8 -> 4
            if (v.P == 4) {
              if (v.D == -21) launch_pdl(s, gemv_wide_x<8, 4, 3>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
              else launch_pdl(s, gemv_wide_x<8, 4, 2>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
            } else {
              if (v.D == -22) launch_pdl(s, gemv_wide_x<4, 8, 3>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
              else launch_pdl(s, gemv_wide_x<4, 8, 2>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
            }
          } else if (v.D == -14) {
            launch_pdl(s, gemv_persist_x<5, 2, 2>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D == -15) {
            launch_pdl(s, gemv_persist_x<5, 3, 2>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D == -16) {
            launch_pdl(s, gemv_persist_x<5, 1, 3>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D == -17) {
            launch_pdl(s, gemv_persist_x<5, 4, 1>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D == -12) {
            launch_pdl(s, gemv_persist<5, 2, 2>, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y);
          } else if (v.D < 0) {
            launch_pdl(s, read_all, grid, 256, 0, reinterpret_cast<const uint4*>(W[i % mats]), bytes / 16, y);
          } else {
            launch_pdl(s, gemv_rows, grid, 256, 0, x, sh.K, W[i % mats], sh.N, y, P);
          }
        }
      };
      const double us = best_graph_us(s, 5, run) / chain;
      printf("| %s | %.1f | %s (P=%d) | %d | %.2f | %.0f |\n", sh.name, bytes / 1e6, v.name, v.P, grid, us, bytes / us / 1e3);
    }
    for (auto& w : W) CK(cudaFree(w));
  }
  printf("status: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
