#include "backend/cuda/context.h"

#include "backend/cuda/blas.h"
#include "backend/cuda/check.h"

namespace ds4::cuda {

void throw_cublas_error(int status, const char* what, const char* file, int line) {
  throw Error(ErrorKind::Internal, std::string("cuBLAS error in ") + what + " at " + file + ":" + std::to_string(line) +
                                       ": " + cublasGetStatusString(cublasStatus_t(status)));
}

Context::Context(int device, size_t scratch_bytes) : device_(device), blas_(std::make_unique<Blas>()) {
  DS4_CUDA_CHECK(cudaSetDevice(device));
  DS4_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  int optin = 0;
  DS4_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  smem_optin_ = size_t(optin);
  DS4_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (scratch_bytes) DS4_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&scratch_base_), scratch_bytes));
  scratch_ = Scratch(scratch_base_, scratch_bytes);
  DS4_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&counters_), kCounters * sizeof(int)));
  DS4_CUDA_CHECK(cudaMemsetAsync(counters_, 0, kCounters * sizeof(int), stream_));
  DS4_CUDA_CHECK(cudaStreamSynchronize(stream_));
  DS4_CUBLAS_CHECK(cublasLtCreate(&blas_->lt));
  DS4_CUBLAS_CHECK(cublasCreate(&blas_->blas));
  DS4_CUBLAS_CHECK(cublasSetStream(blas_->blas, stream_));
  // 32 MiB lets cuBLASLt pick split-K and stream-K kernels for prefill shapes.
  blas_->workspace_bytes = size_t(32) << 20;
  DS4_CUDA_CHECK(cudaMalloc(&blas_->workspace, blas_->workspace_bytes));
  DS4_CUBLAS_CHECK(cublasSetWorkspace(blas_->blas, blas_->workspace, blas_->workspace_bytes));
}

Context::~Context() {
  // Best effort: destructors do not throw, and the device may already be in an error state.
  if (stream_) cudaStreamSynchronize(stream_);
  if (blas_) {
    if (blas_->blas) cublasDestroy(blas_->blas);
    if (blas_->lt) cublasLtDestroy(blas_->lt);
    if (blas_->workspace) cudaFree(blas_->workspace);
  }
  if (scratch_base_) cudaFree(scratch_base_);
  if (counters_) cudaFree(counters_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Context::synchronize() const { DS4_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace ds4::cuda
