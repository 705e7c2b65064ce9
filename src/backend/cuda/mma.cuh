// The tensor-core instruction the kernels use (mma.sync m16n8k16, bf16 operands, float32 accumulation) and the
// exact split of float32 operands into bf16 terms that feeds it: the tensor-core GEMVs (gemv.cuh) and the prefill
// attention (attention.cu). The CPU emulator (tools/cuda-emu) has a warp-wide stand-in for the instruction.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

namespace ds4::cuda::detail {

__device__ __forceinline__ uint32_t bf2_bits(__nv_bfloat162 v) {
  return (uint32_t(__bfloat16_as_ushort(v.y)) << 16) | uint32_t(__bfloat16_as_ushort(v.x));
}

// x0 = hi + mid + lo for each of the pair, packed as bf16x2 (x0 in the low half). Exact for normal floats:
// each remainder is representable in float32 and the three terms carry 8 significant bits each.
__device__ __forceinline__ void split3(float x0, float x1, uint32_t& hi, uint32_t& mid, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  x0 -= __low2float(h);
  x1 -= __high2float(h);
  const __nv_bfloat162 m = __floats2bfloat162_rn(x0, x1);
  x0 -= __low2float(m);
  x1 -= __high2float(m);
  hi = bf2_bits(h);
  mid = bf2_bits(m);
  lo = bf2_bits(__floats2bfloat162_rn(x0, x1));
}

// c[16x8] += A[16x16] * B[16x8], bf16 operands, float32 accumulation.
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
#ifndef DS4_CUDA_EMU
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else  // CPU emulator only (tools/cuda-emu, never nvcc): its warp-wide stand-in of the same instruction (emu.h)
  emu_mma_bf16_16816(c, a0, a1, a2, a3, b0, b1);
#endif
}

// The activations of one lane's step split into bf16 terms: [term][register], term 0 = hi.
struct XTerms {
  uint32_t t[3][4];
};

// Eight float32 activations at p (null: zeros), split. vec: p is 16-byte aligned.
__device__ __forceinline__ void load_split_x8(const float* p, bool vec, XTerms& s) {
  float v[8];
  if (p == nullptr) {
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = 0.0f;
  } else if (vec) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(p)), b = __ldg(reinterpret_cast<const float4*>(p) + 1);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = __ldg(p + i);
  }
#pragma unroll
  for (int q = 0; q < 4; q++) split3(v[2 * q], v[2 * q + 1], s.t[0][q], s.t[1][q], s.t[2][q]);
}

}  // namespace ds4::cuda::detail
