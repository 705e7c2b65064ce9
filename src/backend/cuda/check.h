// CUDA error checking: every failed runtime call becomes a ds4::Error (kind Internal) that names the call,
// where it was made and the CUDA error string, so a failing kernel surfaces as an ordinary typed error.
#pragma once
#include <cuda_runtime_api.h>

#include "core/error.h"

namespace ds4::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, what, file, line);
}

}  // namespace ds4::cuda

#define DS4_CUDA_CHECK(expr) ::ds4::cuda::check((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors (too much shared memory, bad grid) surface here.
#define DS4_CUDA_CHECK_LAUNCH() ::ds4::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
