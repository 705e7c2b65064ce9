// How long does the decode kernel's own QSA selection take (qsa.cuh's choose_blocks in attn_decode_kernel's
// kBlocks form), and how fast are the candidates that session 25 tried in its place?
//
// A grid like the decode kernel's (264 blocks of 256 threads, 2 a multiprocessor: 64 KB of shared memory each)
// stages one score row of n values from global memory, then runs a selection of the top 32; each block's clock64()
// span of the selection alone is recorded. Variants:
//   radix    choose_blocks as the model runs it (the ranking up to 256 values, the radix set past that)
//   rank     choose_blocks without the radix set (DS4_CUDA_SELECT_RADIX=0: ranking by counting up to 1024)
//   window   a radix search that starts at the highest bit where the row's largest and smallest order bits
//            differ (the bits above are common to every value: the full search's first pass put the whole row
//            into one or two bins) and stops as soon as the bin holding the k-th value is taken whole
//   lean     qsa.cuh's choose_blocks_lean (the second decode kernel's, caches past 128 blocks):
//            block_topk_range_set past 64 values (the radix search over d = o - lo: the first pass bins the top 8
//            bits of the row's range, not of its exponents; one histogram a pass zeroed up front, every warp finding
//            the bin itself, one barrier a pass), the ranking out of line up to 64
// Every variant's chosen blocks are compared with the CPU's (value descending, then index ascending; the rows here
// have no ties at the k-th place) and with each other. Prints the median and 90th-percentile block span in us.
// Session 25 (bench/RESULTS.md): the range set was faster here (512 values 2.5 us against radix's 3.9) and, in the
// second decode kernel, +0.4 % decode after a 32768-token prompt (session 26); inline in the default kernel it lost.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 -Isrc tools/gpu/select_probe.cu -o /tmp/sp && /tmp/sp
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/qsa.cuh"
#include "probe_util.cuh"

namespace d = ds4::cuda::detail;

constexpr int kThreads = 256, kK = 32, kMaxN = 1024, kBlocks = 264;
constexpr size_t kSmem = 64 * 1024;  // the decode kernel's ring at head dim 256: two blocks a multiprocessor

// The window variant's set in ascending index order, or false on a straddle (as block_topk_set).
template <class Value>
__device__ bool window_topk_set(Value value, int n, int k, void* smem, int* out) {
  auto* ob = static_cast<uint32_t*>(smem);     // [n]
  int* hist = reinterpret_cast<int*>(ob + n);  // [256]
  int* sh = hist + 256;                        // [0] bin, [1] count above, [2] bin count, [4..5] max/min, [8 + w]
  const int tid = int(threadIdx.x), nt = int(blockDim.x), lane = tid & 31, warp = tid >> 5;
  uint32_t hi, lo;
  d::stage_order_bits(value, n, ob, hi, lo);
  if (tid < 2) sh[4 + tid] = tid == 0 ? 0 : -1;
  __syncthreads();
  if (lane == 0) atomicMax(reinterpret_cast<unsigned*>(&sh[4]), hi), atomicMin(reinterpret_cast<unsigned*>(&sh[5]), lo);
  __syncthreads();
  const uint32_t vmax = uint32_t(sh[4]), diff = vmax ^ uint32_t(sh[5]);
  if (diff == 0) {  // every value equal: with k < n, a straddle
    __syncthreads();
    return false;
  }
  const int top = 31 - __clz(diff);  // bits above top are the same in every value
  uint32_t pmask = top == 31 ? 0u : ~((2u << top) - 1u), prefix = vmax & pmask;
  int remaining = k;
  bool whole = false;
  for (int shift = max(top - 7, 0);; shift = max(shift - 8, 0)) {
    const int width = min(8, 32 - shift - __popc(pmask));  // the bits of this pass below the prefix
    const uint32_t bmask = (1u << width) - 1u;
    for (int b = tid; b < 256; b += nt) hist[b] = 0;
    __syncthreads();
    for (int i = tid; i < n; i += nt) {
      const uint32_t o = ob[i];
      if ((o & pmask) == prefix) atomicAdd(&hist[(o >> shift) & bmask], 1);
    }
    __syncthreads();
    if (warp == 0) d::radix_find_bin(hist, remaining, sh);
    __syncthreads();
    remaining -= sh[1];
    prefix |= uint32_t(sh[0]) << shift;
    pmask |= bmask << shift;
    whole = sh[2] == remaining;  // the bin is taken whole: every value at or above prefix is chosen
    if (whole || shift == 0) break;
  }
  if (!whole) {  // all 32 bits fixed and more equal values than places: the straddle
    __syncthreads();
    return false;
  }
  d::write_chosen_in_order(ob, n, pmask, prefix, out, sh);
  return true;
}

template <int kVariant>
__global__ void __launch_bounds__(kThreads, 2) probe(const float* scores, int n, int* out, long long* span) {
  extern __shared__ __align__(16) unsigned char sm[];
  int* chosen = reinterpret_cast<int*>(sm);
  int* sorted = chosen + kK;
  void* topk_smem = sorted + kK;
  float* vals = reinterpret_cast<float*>(static_cast<unsigned char*>(topk_smem) + d::select_lean_bytes(kMaxN));
  d::Item* replay = reinterpret_cast<d::Item*>(vals + kMaxN);
  for (int i = int(threadIdx.x); i < n; i += kThreads) vals[i] = scores[i];
  __syncthreads();
  const long long t0 = clock64();
  const auto value = [vals](int i) { return vals[i]; };
  if constexpr (kVariant == 2) {
    if (!window_topk_set(value, n, kK, topk_smem, sorted))
      d::choose_blocks(value, n, kK, topk_smem, replay, chosen, sorted, false);
  } else if constexpr (kVariant == 3) {
    d::choose_blocks_lean(value, n, kK, topk_smem, replay, chosen, sorted);
  } else {
    d::choose_blocks(value, n, kK, topk_smem, replay, chosen, sorted, kVariant == 0);
  }
  const long long t1 = clock64();
  if (threadIdx.x == 0) span[blockIdx.x] = t1 - t0;
  for (int i = int(threadIdx.x); i < kK; i += kThreads) out[blockIdx.x * kK + i] = sorted[i];
}

int main() {
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  float* dscores;
  int* dout;
  long long* dspan;
  CK(cudaMalloc(&dscores, kMaxN * sizeof(float)));
  CK(cudaMalloc(&dout, kBlocks * kK * sizeof(int)));
  CK(cudaMalloc(&dspan, kBlocks * sizeof(long long)));
  void (*kernels[4])(const float*, int, int*, long long*) = {probe<0>, probe<1>, probe<2>, probe<3>};
  const char* names[4] = {"radix", "rank", "window", "lean"};
  for (auto k : kernels) CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::printf("| pooled blocks | variant | median us | p90 us | same blocks as the CPU |\n|---:|---|---:|---:|---|\n");
  for (int n : {48, 64, 128, 256, 512, 1024}) {
    // Scores like the indexer's: sums of 16 heads' relu'd dots, / sqrt(128).
    std::vector<float> s(static_cast<size_t>(n));
    for (auto& v : s) {
      float acc = 0.0f;
      for (int h = 0; h < 16; h++) acc += std::max(g(rng) * 4.0f, 0.0f);
      v = acc / std::sqrt(128.0f);
    }
    std::vector<int> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return s[size_t(a)] > s[size_t(b)]; });
    std::vector<int> want(idx.begin(), idx.begin() + kK);
    std::sort(want.begin(), want.end());
    CK(cudaMemcpy(dscores, s.data(), size_t(n) * sizeof(float), cudaMemcpyHostToDevice));
    for (int v = 0; v < 4; v++) {
      std::vector<double> us;
      bool same = true;
      for (int rep = 0; rep < 20; rep++) {
        kernels[v]<<<kBlocks, kThreads, kSmem>>>(dscores, n, dout, dspan);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<long long> span(kBlocks);
        std::vector<int> out(size_t(kBlocks) * kK);
        CK(cudaMemcpy(span.data(), dspan, span.size() * sizeof(long long), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
        for (int b = 0; b < kBlocks; b++) {
          us.push_back(double(span[size_t(b)]) / double(khz) * 1e3);
          same = same && std::equal(want.begin(), want.end(), out.begin() + b * kK);
        }
      }
      std::sort(us.begin(), us.end());
      std::printf("| %d | %s | %.2f | %.2f | %s |\n", n, names[v], us[us.size() / 2], us[us.size() * 9 / 10],
                  same ? "yes" : "NO");
    }
  }
  return 0;
}
