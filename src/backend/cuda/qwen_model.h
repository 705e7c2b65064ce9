// The qwen4_exp text model on the CUDA backend: the same blocks as models/qwen_hybrid (the CPU reference),
// composed from the ops of backend/cuda/ops.h, with bfloat16 weights, float32 activations and float32
// recurrent state, and the sequence state on the GPU. Decode steps (one token) are captured once per state
// in a CUDA graph and replayed: every op that depends on the position reads it from device memory. A released
// state's buffers and graphs serve the next new state.
#pragma once
#include <memory>
#include <string>

#include "models/model.h"
#include "models/qwen_hybrid/config.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::cuda {

struct CudaModelOptions {
  int device = 0;
  bool graphs = true;            // replay decode steps from CUDA graphs
  int64_t prefill_chunk = 2048;  // longer inputs run in chunks of this many tokens (bounds the scratch memory)
};

// The model with the checkpoint's weights (as the CPU loader read them) copied to the device.
std::unique_ptr<Model> make_cuda_qwen_model(const qwen::Config& c, const qwen::Weights& w, const CudaModelOptions& o = {});
// The model with random weights generated on the device (full-size shapes for benchmarks).
std::unique_ptr<Model> random_cuda_qwen_model(const qwen::Config& c, uint64_t seed, const CudaModelOptions& o = {});

}  // namespace ds4::cuda
