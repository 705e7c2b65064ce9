// Registers the CUDA backend ("--backend cuda") when the binary is built with it (DS4_WITH_CUDA: CMake found
// nvcc). The core library cannot name it itself, since the CUDA library depends on the core.
#ifdef DS4_WITH_CUDA
#include "backend/cuda/qwen_model.h"
#include "models/backends.h"

namespace {

const bool registered = [] {
  ds4::BackendFactories f;
  f.qwen_load = [](const ds4::qwen::Config& c, const ds4::qwen::Weights& w) { return ds4::cuda::make_cuda_qwen_model(c, w); };
  f.qwen_random = [](const ds4::qwen::Config& c, uint64_t seed) { return ds4::cuda::random_cuda_qwen_model(c, seed); };
  ds4::register_backend("cuda", std::move(f));
  return true;
}();

}  // namespace
#endif
