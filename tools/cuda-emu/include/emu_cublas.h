// Fake cuBLAS / cuBLASLt for the emulation harness: column-major GEMM as the documentation defines it,
// D = alpha op(A) op(B) + beta C, with A, B bf16 or float and C/D float.
#pragma once
#include <cuda_bf16.h>
#include <library_types.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include "emu_runtime.h"

typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum { CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4 } cublasLtMatmulDescAttributes_t;
typedef enum {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
} cublasLtMatmulPreferenceAttributes_t;
struct emu_lt_handle {};
typedef emu_lt_handle* cublasLtHandle_t;
struct emu_handle {};
typedef emu_handle* cublasHandle_t;
struct emu_desc { cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N; };
typedef emu_desc* cublasLtMatmulDesc_t;
struct emu_layout { cudaDataType t; uint64_t rows, cols; int64_t ld; };
typedef emu_layout* cublasLtMatrixLayout_t;
struct emu_pref {};
typedef emu_pref* cublasLtMatmulPreference_t;
struct cublasLtMatmulAlgo_t { uint64_t data[8]; };
struct cublasLtMatmulHeuristicResult_t { cublasLtMatmulAlgo_t algo; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]; };

namespace emu {
inline bool& lt_has_algo() { static bool b = std::getenv("EMU_NO_LT") == nullptr; return b; }
inline float elem(const void* p, cudaDataType t, int64_t i) {
  return t == CUDA_R_16BF ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
}
// Column-major: element (r, c) of a matrix with leading dimension ld is at r + c * ld.
inline void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, float alpha,
                 const void* A, cudaDataType at, int64_t lda, const void* B, cudaDataType bt, int64_t ldb, float beta,
                 float* C, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) {
        const float a = ta == CUBLAS_OP_N ? elem(A, at, i + p * lda) : elem(A, at, p + i * lda);
        const float b = tb == CUBLAS_OP_N ? elem(B, bt, p + j * ldb) : elem(B, bt, j + p * ldb);
        s += double(a) * double(b);
      }
      C[i + j * ldc] = float(alpha * s + (beta != 0.0f ? beta * C[i + j * ldc] : 0.0));
    }
}
}  // namespace emu

inline const char* cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_ERROR"; }
inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) { *h = new emu_lt_handle; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasCreate(cublasHandle_t* h) { *h = new emu_handle; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasDestroy(cublasHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetWorkspace(cublasHandle_t, void*, size_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t c, cudaDataType s) {
  if (c != CUBLAS_COMPUTE_32F || s != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  *d = new emu_desc; return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { delete d; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* v, size_t n) {
  if (n != sizeof(cublasOperation_t)) return CUBLAS_STATUS_INVALID_VALUE;
  if (a == CUBLASLT_MATMUL_DESC_TRANSA) std::memcpy(&d->ta, v, n);
  else if (a == CUBLASLT_MATMUL_DESC_TRANSB) std::memcpy(&d->tb, v, n);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType t, uint64_t r, uint64_t c, int64_t ld) {
  if (ld < int64_t(r)) return CUBLAS_STATUS_INVALID_VALUE;  // column-major: ld >= rows
  *l = new emu_layout{t, r, c, ld}; return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { delete l; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) { *p = new emu_pref; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { delete p; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t a,
                                                           const void*, size_t n) {
  // The workspace size is a uint64, the alignments uint32 (cublasLt.h).
  const size_t want = a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES ? sizeof(uint64_t) : sizeof(uint32_t);
  return n == want ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t, int req,
                                                     cublasLtMatmulHeuristicResult_t* r, int* found) {
  // Shapes must agree: op(A) m x k, op(B) k x n, C/D m x n.
  const uint64_t m = op->ta == CUBLAS_OP_N ? a->rows : a->cols, ka = op->ta == CUBLAS_OP_N ? a->cols : a->rows;
  const uint64_t kb = op->tb == CUBLAS_OP_N ? b->rows : b->cols, n = op->tb == CUBLAS_OP_N ? b->cols : b->rows;
  if (ka != kb || c->rows != m || c->cols != n || d->rows != m || d->cols != n || req < 1) return CUBLAS_STATUS_INVALID_VALUE;
  *found = emu::lt_has_algo() ? 1 : 0;
  std::memset(r, 0, sizeof *r);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t op, const void* alpha, const void* A, cublasLtMatrixLayout_t a,
                                     const void* B, cublasLtMatrixLayout_t b, const void* beta, const void* C, cublasLtMatrixLayout_t c,
                                     void* D, cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  if (C != D || c->t != CUDA_R_32F || d->t != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  const int64_t m = int64_t(d->rows), n = int64_t(d->cols), k = int64_t(op->ta == CUBLAS_OP_N ? a->cols : a->rows);
  emu::gemm(op->ta, op->tb, m, n, k, *static_cast<const float*>(alpha), A, a->t, a->ld, B, b->t, b->ld,
            *static_cast<const float*>(beta), static_cast<float*>(D), d->ld);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
                                   const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, const void* beta,
                                   void* C, cudaDataType ct, int ldc, cublasComputeType_t, cublasGemmAlgo_t) {
  if (ct != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  emu::gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha), A, at, lda, B, bt, ldb, *static_cast<const float*>(beta),
            static_cast<float*>(C), ldc);
  return CUBLAS_STATUS_SUCCESS;
}
