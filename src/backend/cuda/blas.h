// The cuBLAS/cuBLASLt state a Context owns (private to the CUDA backend's sources).
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

#include "backend/cuda/context.h"

namespace ds4::cuda {

struct Context::Blas {
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;  // fallback when cuBLASLt's heuristic offers no algorithm for a shape
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

[[noreturn]] void throw_cublas_error(int status, const char* what, const char* file, int line);

}  // namespace ds4::cuda

#define DS4_CUBLAS_CHECK(expr)                                                         \
  do {                                                                                 \
    const int ds4_st_ = int(expr);                                                     \
    if (ds4_st_ != 0) ::ds4::cuda::throw_cublas_error(ds4_st_, #expr, __FILE__, __LINE__); \
  } while (0)
