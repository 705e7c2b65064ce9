// Fake CUDA runtime over host memory for the emulation harness (tools/cuda-emu): device memory is malloc'd,
// copies are memcpy, streams are synchronous, one device with the H200's multiprocessor count and limits.
#pragma once
#define __CUDA_RUNTIME_API_H__  // keeps the real runtime header out (vector_functions.h includes it by quotes)
#include <driver_types.h>
#include <vector_types.h>
#include "emu_state.h"
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <algorithm>
#include <utility>
#include <vector>

namespace emu {
inline size_t& mem_limit() { static size_t l = size_t(64) << 30; return l; }
}

inline cudaError_t cudaMalloc(void** p, size_t n) {
  if (n > emu::mem_limit()) { *p = nullptr; return cudaErrorMemoryAllocation; }
  *p = std::malloc(n ? n : 1);
  // Fresh device memory holds garbage: make it NaN-like so tests notice reads of unwritten memory.
  std::memset(*p, 0xA5, n);
  return cudaSuccess;
}
template <class T> inline cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memmove(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
inline cudaError_t cudaMemcpy2DAsync(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind, cudaStream_t = nullptr) {
  if (w > dp || w > sp) return cudaErrorInvalidPitchValue;
  for (size_t r = 0; r < h; r++) std::memcpy(static_cast<char*>(d) + r * dp, static_cast<const char*>(s) + r * sp, w);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { static int dummy; *s = reinterpret_cast<cudaStream_t>(&dummy); return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  if (a == cudaDevAttrMultiProcessorCount) *v = 132;
  else if (a == cudaDevAttrMaxSharedMemoryPerBlockOptin) *v = 232448;
  else *v = 0;
  return cudaSuccess;
}
inline cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) { *p = std::malloc(n); return cudaSuccess; }
inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) { *d = h; return cudaSuccess; }
inline cudaError_t cudaFreeHost(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaGetLastError() { const int e = emu::last_error; emu::last_error = 0; return cudaError_t(e); }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    default: return "cudaErrorUnknown";
  }
}
inline const char* cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
template <class T>
inline cudaError_t cudaFuncSetAttribute(T* k, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v > 232448) return cudaErrorInvalidValue;
    emu::set_smem_limit(reinterpret_cast<const void*>(k), v);
  }
  return cudaSuccess;
}
