// Everything a CUDA op needs besides its operands: the stream every op enqueues on, cuBLAS(Lt) handles and
// workspace, the device's limits, and a scratch arena for temporaries.
//
// Scratch is a bump allocator over one cudaMalloc made at construction: an op takes what it needs and gives
// it back when it returns (ScratchScope). That is safe because all work is ordered on the one stream: the
// next op's kernels start after the previous op's kernels have finished reading their temporaries. No op
// allocates device memory or synchronises the host, so a sequence of ops can be captured in a CUDA graph.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace ds4::cuda {

class Scratch {
 public:
  Scratch() = default;
  Scratch(char* base, size_t capacity) : base_(base), cap_(capacity) {}
  // n elements of T, 256-byte aligned; throws Error(Internal) when the arena is exhausted.
  template <class T>
  T* take(size_t n) {
    const size_t start = (used_ + 255) & ~size_t(255), bytes = n * sizeof(T);
    if (start + bytes > cap_)
      throw Error(ErrorKind::Internal, "CUDA scratch arena exhausted: need " + std::to_string(start + bytes) +
                                           " bytes of " + std::to_string(cap_) + "; construct the Context with more");
    used_ = start + bytes;
    if (used_ > peak_) peak_ = used_;
    return reinterpret_cast<T*>(base_ + start);
  }
  size_t mark() const { return used_; }
  void release(size_t mark) { used_ = mark; }
  size_t peak() const { return peak_; }
  size_t capacity() const { return cap_; }

 private:
  char* base_ = nullptr;
  size_t cap_ = 0, used_ = 0, peak_ = 0;
};

// Returns what was taken from the arena inside its scope.
class ScratchScope {
 public:
  explicit ScratchScope(Scratch& s) : s_(s), mark_(s.mark()) {}
  ~ScratchScope() { s_.release(mark_); }
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;

 private:
  Scratch& s_;
  size_t mark_;
};

class Context {
 public:
  // Makes `device` current, creates a non-blocking stream, cuBLAS handles and the scratch arena.
  explicit Context(int device = 0, size_t scratch_bytes = size_t(512) << 20);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  void synchronize() const;  // waits for the stream; throws on an asynchronous kernel error
  Scratch& scratch() { return scratch_; }

  int device() const { return device_; }
  int sm_count() const { return sm_count_; }
  size_t smem_optin() const { return smem_optin_; }  // largest dynamic shared memory one block may opt into

  // kCounters device ints, zero between kernels: a kernel that splits a sum over blocks counts finished blocks
  // here and the last one adds the partials (gemv.cuh: last_block_of); that block leaves its counter at zero.
  static constexpr int64_t kCounters = 65536;
  int* counters() const { return counters_; }

  struct Blas;  // cuBLAS and cuBLASLt handles and workspace (context.cpp)
  Blas& blas() { return *blas_; }

 private:
  int device_ = 0, sm_count_ = 0;
  size_t smem_optin_ = 0;
  cudaStream_t stream_ = nullptr;
  char* scratch_base_ = nullptr;
  int* counters_ = nullptr;
  Scratch scratch_;
  std::unique_ptr<Blas> blas_;
};

}  // namespace ds4::cuda
