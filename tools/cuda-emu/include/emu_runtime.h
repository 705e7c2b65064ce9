// Fake CUDA runtime over host memory for the emulation harness (tools/cuda-emu): device memory is malloc'd,
// copies are memcpy, streams are synchronous, one device with the H200's multiprocessor count and limits.
// Stream capture records the stream's work (emu_state.h) and a graph replays it; events hold host times.
#pragma once
#define __CUDA_RUNTIME_API_H__  // keeps the real runtime header out (vector_functions.h includes it by quotes)
#include <driver_types.h>
#include <vector_types.h>
#include "emu_state.h"
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <algorithm>
#include <chrono>
#include <functional>
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
// A synchronous call while a stream is being captured is an error (and ends the capture's usefulness) on the GPU.
inline bool emu_capturing() { return emu::capture != nullptr; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  if (emu_capturing()) return cudaErrorStreamCaptureUnsupported;
  std::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* d, int v, size_t n) {
  if (emu_capturing()) return cudaErrorStreamCaptureUnsupported;
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t = nullptr) {
  emu::enqueue([=] { std::memmove(d, s, n); });
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t = nullptr) {
  emu::enqueue([=] { std::memset(d, v, n); });
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind, cudaStream_t = nullptr) {
  if (w > dp || w > sp) return cudaErrorInvalidPitchValue;
  emu::enqueue([=] {
    for (size_t r = 0; r < h; r++) std::memcpy(static_cast<char*>(d) + r * dp, static_cast<const char*>(s) + r * sp, w);
  });
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return emu_capturing() ? cudaErrorStreamCaptureUnsupported : cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return emu_capturing() ? cudaErrorStreamCaptureUnsupported : cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { static int dummy; *s = reinterpret_cast<cudaStream_t>(&dummy); return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  if (a == cudaDevAttrMultiProcessorCount) *v = 132;
  else if (a == cudaDevAttrMaxSharedMemoryPerBlockOptin) *v = 232448;
  else if (a == cudaDevAttrMaxSharedMemoryPerMultiprocessor) *v = 233472;
  else if (a == cudaDevAttrMaxThreadsPerMultiProcessor) *v = 2048;
  else if (a == cudaDevAttrMemoryClockRate) *v = 3201000;  // kHz; with the bus below about 4.9 TB/s
  else if (a == cudaDevAttrGlobalMemoryBusWidth) *v = 6144;
  else *v = 0;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d != 0) return cudaErrorInvalidDevice;
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "CUDA emulator (CPU, H200 limits)");
  p->totalGlobalMem = emu::mem_limit();
  p->major = 9;
  p->minor = 0;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->multiProcessorCount = 132;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 232448;
  p->sharedMemPerMultiprocessor = 233472;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->memoryBusWidth = 6144;
  return cudaSuccess;
}
inline cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) { *p = std::malloc(n); return cudaSuccess; }
inline cudaError_t cudaMallocHost(void** p, size_t n) { *p = std::malloc(n ? n : 1); return cudaSuccess; }
inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) { *d = h; return cudaSuccess; }
inline cudaError_t cudaFreeHost(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaGetLastError() { const int e = emu::last_error; emu::last_error = 0; return cudaError_t(e); }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
  }
}
inline const char* cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
// The emulator keeps no static shared-memory sizes: every kernel reports none.
template <class T>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* fa, T*) {
  *fa = cudaFuncAttributes{};
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaFuncSetAttribute(T* k, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v > 232448) return cudaErrorInvalidValue;
    emu::set_smem_limit(reinterpret_cast<const void*>(k), v);
  }
  if (a == cudaFuncAttributeNonPortableClusterSizeAllowed && v) emu::allow_large_clusters(reinterpret_cast<const void*>(k));
  return cudaSuccess;
}

// Blocks per multiprocessor for a launch of this kernel: an estimate from the H200's thread, block and shared
// memory limits (the emulator knows no register counts). Only the host-side heuristics read it.
template <class T>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, T*, int block, size_t smem) {
  if (block < 1 || block > 1024) return cudaErrorInvalidValue;
  int b = std::min(32, 2048 / block);
  if (smem) b = std::min<int>(b, int(233472 / (smem + 1024)));
  *n = b;
  return cudaSuccess;
}

// ----- events: host time when the stream reaches them -----
struct CUevent_st {
  std::chrono::steady_clock::time_point t;
  bool recorded = false;
};
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new CUevent_st; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  emu::enqueue([e] { e->t = std::chrono::steady_clock::now(), e->recorded = true; });
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return emu_capturing() ? cudaErrorStreamCaptureUnsupported : cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!a || !b || !a->recorded || !b->recorded) return cudaErrorInvalidResourceHandle;
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}

// ----- stream capture and graphs: the captured work, replayed in order -----
struct CUgraph_st {
  std::vector<std::function<void()>> ops;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};
namespace emu {
inline CUgraph_st*& capture_graph() { static CUgraph_st* g = nullptr; return g; }
}
inline cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (emu_capturing()) return cudaErrorIllegalState;
  emu::capture_graph() = new CUgraph_st;
  emu::capture = &emu::capture_graph()->ops;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  if (!emu_capturing()) return cudaErrorIllegalState;
  *g = emu::capture_graph();
  emu::capture_graph() = nullptr;
  emu::capture = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* s) {
  *s = emu_capturing() ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) { delete g; return cudaSuccess; }
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long = 0) {
  *e = new CUgraphExec_st{g->ops};
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
  for (auto& op : e->ops) emu::enqueue(op);
  return cudaSuccess;
}
