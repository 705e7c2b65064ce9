// Owning device allocation (cudaMalloc/cudaFree) with move semantics, plus blocking host copies for loading
// weights and for tests. Kernels take raw pointers from get(); the buffer only owns the memory.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/check.h"

namespace ds4::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n == 0) return;
    const cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T));
    if (e != cudaSuccess) {
      p_ = nullptr;
      throw Error(ErrorKind::Internal, "cudaMalloc of " + std::to_string(n * sizeof(T)) +
                                           " bytes failed: " + cudaGetErrorString(e));
    }
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

  // Blocking copies: they return once the device holds the data. cudaMemcpy runs on the legacy default
  // stream, which is not ordered with the Context's non-blocking stream, hence the device-wide waits.
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  void upload(const T* host, size_t n) {
    if (n > n_) throw Error(ErrorKind::Internal, "DeviceBuffer::upload of " + std::to_string(n) + " elements into " +
                                                     std::to_string(n_));
    if (!n) return;
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
    DS4_CUDA_CHECK(cudaMemcpy(p_, host, n * sizeof(T), cudaMemcpyHostToDevice));
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<T> download() const {
    std::vector<T> out(n_);
    if (n_) DS4_CUDA_CHECK(cudaDeviceSynchronize());
    if (n_) DS4_CUDA_CHECK(cudaMemcpy(out.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
  // Every byte set to `byte` (0xFF makes every float and bf16 a NaN, every int -1).
  void fill_bytes(int byte) {
    if (!n_) return;
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
    DS4_CUDA_CHECK(cudaMemset(p_, byte, n_ * sizeof(T)));
    DS4_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  void reset() {
    if (p_) cudaFree(p_);  // no throw from a destructor; a failed free leaks, nothing more
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace ds4::cuda
