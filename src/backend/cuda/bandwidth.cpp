#include "backend/cuda/bandwidth.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "backend/cuda/check.h"
#include "backend/cuda/device_buffer.h"

namespace ds4::cuda {

Bandwidth measure_bandwidth(int device) {
  Bandwidth b;
  DS4_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  DS4_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  b.device = prop.name;
  int clock_khz = 0, bus_bits = 0;
  DS4_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  DS4_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  b.spec_gbs = 2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0 / 1e9;
  const size_t bytes = size_t(1) << 31;
  DeviceBuffer<char> src(bytes), dst(bytes);
  cudaEvent_t e0, e1;
  DS4_CUDA_CHECK(cudaEventCreate(&e0));
  DS4_CUDA_CHECK(cudaEventCreate(&e1));
  float best_ms = 1e30f;
  for (int i = 0; i < 6; i++) {
    DS4_CUDA_CHECK(cudaEventRecord(e0));
    DS4_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));
    DS4_CUDA_CHECK(cudaEventRecord(e1));
    DS4_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    DS4_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0) best_ms = std::min(best_ms, ms);  // the first copy warms up
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  b.copy_gbs = 2.0 * double(bytes) / (double(best_ms) / 1e3) / 1e9;
  return b;
}

}  // namespace ds4::cuda
