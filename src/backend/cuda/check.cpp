#include "backend/cuda/check.h"

#include <string>

namespace ds4::cuda {

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  // Clear a sticky launch error so the next check reports its own failure, not this one.
  (void)cudaGetLastError();
  throw Error(ErrorKind::Internal, std::string("CUDA error in ") + what + " at " + file + ":" + std::to_string(line) +
                                       ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace ds4::cuda
