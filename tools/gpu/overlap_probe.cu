// Does a consumer that starts on each group of its producer's rows as soon as that group is complete, inside the
// producer's grid, beat producer and consumer as two kernels with programmatic dependent launch? The decode step's
// GDN layer in miniature (bench/RESULTS.md, session 17's sketch):
//   producer  the input projection, y = W x (2560 -> 16480, bf16 W, float32 x and y): warp pairs with their slice of
//             x in registers streaming rows p, p + np, ... as linear.cu's gemv_tall_kernel (3 blocks a
//             multiprocessor), the rows in 16 groups of 1030 (a key head's q and k, then v, z, a and b of its 3
//             value heads), so group g is complete after about 0.65 (g + 1) of the pass's 10.4 row steps
//   consumer  a delta-rule-like step per value head (48 heads): the head's 640 values of y and its 128 x 128
//             float32 state, three block reductions (q and k norms, the state against k, the state against q),
//             the state written back and 128 outputs
// Variants, each a chain of 24 over distinct buffers (together larger than L2), replayed from a CUDA graph:
//   two      the producer, then the consumer (192 blocks: head x 4 column tiles of 32), as the decode step runs them
//   one/C    one grid of 3 blocks a multiprocessor, the last C of them consumers: every producer block adds each
//            step's rows to their groups' counts (the writers' fence, a block barrier, thread 0's adds); a consumer
//            block takes heads c, c + C, ..., waits for the head's group (thread 0 polls with relaxed loads, then a
//            fence) and runs its 4 tiles in turn
// and prints, per variant, the time per chain element against the producer alone and the consumer alone, after a
// check that every variant leaves the same outputs and states (bit for bit: the same arithmetic in the same order).
// The grid of one/C is not launched cooperative: 3 blocks a multiprocessor are resident at once (80 registers at
// most, checked below), and the kernel before it does not wait for it.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 -Isrc tools/gpu/overlap_probe.cu -o /tmp/op && /tmp/op
// Session 18 on the H200: two 27.39 us, one/16 38.08, one/48 32.77, one/96 35.02 (producer alone 21.18): one grid
// loses (bench/RESULTS.md, "Session 18").
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/gemv.cuh"
#include "probe_util.cuh"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace d = ds4::cuda::detail;
using bf16 = __nv_bfloat16;

constexpr int kK = 2560, kGroups = 16, kGroupRows = 1030, kN = kGroups * kGroupRows;
constexpr int kJ = 5;  // chunks per lane per slice: K = 2 slices x 32 lanes x 5 x 8
constexpr int kHeads = 48, kHeadsPerGroup = 3, kD = 128, kTile = 32, kTiles = kD / kTile, kRows = kD / 8;
constexpr int kBlocksPerSm = 3, kThreads = 256, kPairs = 4;

struct Buffers {
  const float* x;
  const bf16* W;
  float* y;
  float* state;  // [kHeads][kD][kD]
  float* out;    // [kHeads][kD]
  int* counts;   // [kGroups], zero before each grid that counts
};

// The producer's rows as blocks [0, nblocks) of a grid: every pair of warps (one slice of K each) takes rows
// gp, gp + np, ...; with counts, each block adds each step's rows to their groups' counts.
__device__ __forceinline__ void produce(const Buffers& b, int block, int nblocks, bool count, uint4 (&w)[kJ]) {
  __shared__ float red[2][8];
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), pair = warp / 2;
  const int np = nblocks * kPairs, gp0 = block * kPairs, gp = gp0 + pair;
  const int begin = (warp % 2) * (kK / 16), end = begin + kK / 16;
  auto load = [&](int row) {
#pragma unroll
    for (int j = 0; j < kJ; j++) {
      const int c = begin + lane + 32 * j;
      w[j] = row < kN ? d::ld_stream(b.W + size_t(row) * kK + c * 8) : make_uint4(0u, 0u, 0u, 0u);
    }
  };
  d::XSlice<kJ> xs;
  xs.load(b.x, begin, end);
  for (int i = 0; gp0 + np * i < kN; i++) {
    const int row = gp + np * i;
    float acc = xs.dot(w, begin, end);
    load(row + np);
    acc = d::warp_sum(acc);
    if (lane == 0) red[i & 1][warp] = acc;
    __syncthreads();
    if (warp % 2 == 0 && lane == 0 && row < kN) {
      b.y[row] = red[i & 1][warp] + red[i & 1][warp + 1];
      if (count) __threadfence();  // the row before the block's count (release, with the barrier)
    }
    if (count) {
      __syncthreads();
      if (threadIdx.x == 0) {
        int g = -1, n = 0;
        for (int p = 0; p < kPairs; p++) {
          const int r = gp0 + np * i + p;
          if (r >= kN) break;
          if (r / kGroupRows != g) {
            if (n) atomicAdd(b.counts + g, n);
            g = r / kGroupRows, n = 0;
          }
          n++;
        }
        if (n) atomicAdd(b.counts + g, n);
      }
    }
  }
}

// The first row's weights, before the wait (as gemv_tall_kernel).
__device__ __forceinline__ void produce_preload(const Buffers& b, int block, uint4 (&w)[kJ]) {
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), row = block * kPairs + warp / 2;
  const int begin = (warp % 2) * (kK / 16);
#pragma unroll
  for (int j = 0; j < kJ; j++) w[j] = d::ld_stream(b.W + size_t(row) * kK + (begin + lane + 32 * j) * 8);
}

__device__ __forceinline__ float block_sum8(float v, float* red) {  // the 8 warps' lanes l summed per column l
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  red[warp * 32 + lane] = v;
  __syncthreads();
  float s = 0.0f;
  for (int q = 0; q < 8; q++) s += red[q * 32 + lane];
  __syncthreads();
  return s;
}

// Column tile t of head h: thread (warp w, lane l) holds rows w + 8 r of column 32 t + l. y of group g: its key
// head's q (128) and k (128), then for each of its 3 value heads v (128), z (128), a, b.
__device__ __forceinline__ void consume(const Buffers& b, int h, int t) {
  __shared__ float red[8 * 32];
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), j = t * kTile + lane;
  const float* yg = b.y + (h / kHeadsPerGroup) * kGroupRows;
  const float* yh = yg + 2 * kD + (h % kHeadsPerGroup) * (2 * kD + 2);
  float* S = b.state + size_t(h) * kD * kD;
  float s[kRows], q[kRows], k[kRows];
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    const int row = warp + 8 * r;
    s[r] = S[row * kD + j];
    q[r] = __ldcg(yg + row);
    k[r] = __ldcg(yg + kD + row);
  }
  const float v = __ldcg(yh + j), z = __ldcg(yh + kD + j), a = __ldcg(yh + 2 * kD), bb = __ldcg(yh + 2 * kD + 1);
  float qq = 0.0f, kk = 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; r++) qq += q[r] * q[r], kk += k[r] * k[r];
  // every column's threads hold the same rows: the norms are the 8 warps' sums of one lane's column
  const float iq = rsqrtf(block_sum8(qq, red) + 1e-6f), ik = rsqrtf(block_sum8(kk, red) + 1e-6f);
  const float decay = expf(-logf(1.0f + expf(a))), beta = 1.0f / (1.0f + expf(-bb));
  float sk = 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; r++) sk += s[r] * (k[r] * ik);
  sk = block_sum8(sk, red);
  const float u = beta * (v - decay * sk);
  float o = 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    s[r] = decay * s[r] + (k[r] * ik) * u;
    o += s[r] * (q[r] * iq);
  }
  o = block_sum8(o, red);
#pragma unroll
  for (int r = 0; r < kRows; r++) S[(warp + 8 * r) * kD + j] = s[r];
  if (warp == 0) b.out[h * kD + j] = o * z;
}

// A poll of a count written by other blocks of the grid (a fence after it makes it an acquire).
__device__ __forceinline__ int load_relaxed(const int* p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm) producer_kernel(Buffers b) {
  uint4 w[kJ];
  produce_preload(b, int(blockIdx.x), w);
  [[maybe_unused]] const auto pdl = d::pdl_enter();
  produce(b, int(blockIdx.x), int(gridDim.x), false, w);
}

__global__ void __launch_bounds__(kThreads) consumer_kernel(Buffers b) {
  [[maybe_unused]] const auto pdl = d::pdl_enter();
  consume(b, int(blockIdx.x) / kTiles, int(blockIdx.x) % kTiles);
}

// The last C blocks consume heads c, c + C, ... (each after its group is complete), the others produce.
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) fused_kernel(Buffers b, int C) {
  const int P = int(gridDim.x) - C, block = int(blockIdx.x);
  uint4 w[kJ];
  if (block < P) produce_preload(b, block, w);
  [[maybe_unused]] const auto pdl = d::pdl_enter();
  if (block < P) {
    produce(b, block, P, true, w);
    return;
  }
  for (int h = block - P; h < kHeads; h += C) {
    const int g = h / kHeadsPerGroup;
    if (threadIdx.x == 0) {
      while (load_relaxed(b.counts + g) < kGroupRows) __nanosleep(200);
      __threadfence();  // acquire: the group's rows before this block reads them
    }
    __syncthreads();
    __threadfence();  // every thread's reads of y after thread 0's acquire (as gemv.cuh's last_block_of)
    for (int t = 0; t < kTiles; t++) consume(b, h, t);
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (auto k : {reinterpret_cast<const void*>(producer_kernel), reinterpret_cast<const void*>(fused_kernel)}) {
    cudaFuncAttributes fa{};
    CK(cudaFuncGetAttributes(&fa, k));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kThreads, 0));
    std::printf("%s: %d registers, %zu B local, %d blocks a multiprocessor\n",
                k == reinterpret_cast<const void*>(producer_kernel) ? "producer" : "fused", fa.numRegs,
                size_t(fa.localSizeBytes), per_sm);
    if (per_sm < kBlocksPerSm) {
      std::printf("fewer than %d blocks a multiprocessor: the fused grid could wait on blocks that never start\n",
                  kBlocksPerSm);
      return 1;
    }
  }
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  constexpr int kChain = 24;
  const unsigned grid = unsigned(kBlocksPerSm * sms);
  float* x;
  CK(cudaMalloc(&x, kK * sizeof(float)));
  std::vector<float> hx(kK);
  for (int i = 0; i < kK; i++) hx[size_t(i)] = float((i * 37) % 101 - 50) / 50.0f;
  CK(cudaMemcpy(x, hx.data(), kK * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<Buffers> bufs(kChain);
  std::vector<bf16> hw(size_t(kN) * kK);
  for (size_t i = 0; i < hw.size(); i++) hw[i] = __float2bfloat16(float(int((i * 2654435761u) >> 22) % 64 - 32) / 512.0f);
  const size_t state_bytes = size_t(kHeads) * kD * kD * sizeof(float);
  std::vector<float> state0(size_t(kHeads) * kD * kD);
  for (size_t i = 0; i < state0.size(); i++) state0[i] = float(int(i % 97) - 48) / 4096.0f;
  int* counts;
  CK(cudaMalloc(&counts, kChain * kGroups * sizeof(int)));
  for (int c = 0; c < kChain; c++) {
    bf16* W;
    float *y, *st, *out;
    CK(cudaMalloc(&W, hw.size() * sizeof(bf16)));
    CK(cudaMemcpy(W, hw.data(), hw.size() * sizeof(bf16), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&y, kN * sizeof(float)));
    CK(cudaMalloc(&st, state_bytes));
    CK(cudaMalloc(&out, kHeads * kD * sizeof(float)));
    bufs[size_t(c)] = Buffers{x, W, y, st, out, counts + c * kGroups};
  }
  auto reset = [&] {
    for (auto& b : bufs) CK(cudaMemcpy(b.state, state0.data(), state_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(counts, 0, kChain * kGroups * sizeof(int)));
  };
  // The variants as chains; every chain zeroes the counts first (the same node in all, for a fair comparison).
  auto two = [&] {
    CK(cudaMemsetAsync(counts, 0, kChain * kGroups * sizeof(int), s));
    for (auto& b : bufs) {
      launch_pdl(s, producer_kernel, grid, kThreads, 0, b);
      launch_pdl(s, consumer_kernel, unsigned(kHeads * kTiles), kThreads, 0, b);
    }
  };
  auto one = [&](int C) {
    return [&, C] {
      CK(cudaMemsetAsync(counts, 0, kChain * kGroups * sizeof(int), s));
      for (auto& b : bufs) launch_pdl(s, fused_kernel, grid, kThreads, 0, b, C);
    };
  };
  auto producer_only = [&] {
    CK(cudaMemsetAsync(counts, 0, kChain * kGroups * sizeof(int), s));
    for (auto& b : bufs) launch_pdl(s, producer_kernel, grid, kThreads, 0, b);
  };
  auto consumer_only = [&] {
    CK(cudaMemsetAsync(counts, 0, kChain * kGroups * sizeof(int), s));
    for (auto& b : bufs) launch_pdl(s, consumer_kernel, unsigned(kHeads * kTiles), kThreads, 0, b);
  };
  // The check: one pass of each variant from the same states; outputs and states bit for bit.
  auto snapshot = [&] {
    std::vector<float> o(size_t(kHeads) * kD), st(state0.size());
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(o.data(), bufs[3].out, o.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(st.data(), bufs[3].state, state_bytes, cudaMemcpyDeviceToHost));
    o.insert(o.end(), st.begin(), st.end());
    return o;
  };
  reset();
  two();
  const auto want = snapshot();
  const int consumers[] = {16, 48, 96};
  for (int C : consumers) {
    reset();
    one(C)();
    const auto got = snapshot();
    std::printf("one/%d against two: %s\n", C,
                std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0 ? "the same bits" : "DIFFERENT");
  }
  const double bytes = double(kN) * kK * 2;
  auto report = [&](const char* name, double us) {
    std::printf("| %-12s | %8.2f | %7.0f |\n", name, us, bytes / us / 1e3);
  };
  std::printf("\n| variant      | us each | weight GB/s |\n|---|---:|---:|\n");
  report("producer", best_graph_us(s, 7, producer_only) / kChain);
  report("consumer", best_graph_us(s, 7, consumer_only) / kChain);
  report("two", best_graph_us(s, 7, two) / kChain);
  for (int C : consumers) {
    char name[16];
    std::snprintf(name, sizeof name, "one/%d", C);
    report(name, best_graph_us(s, 7, one(C)) / kChain);
  }
  return 0;
}
