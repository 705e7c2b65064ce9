// Random bfloat16 weights generated on the device, so that full-size shapes can be timed without checkpoint
// files or host memory: element i of a tensor is a counter-based hash of (stream, i), uniform in [-scale, scale).
#pragma once
#include <cstdint>

#include "backend/cuda/bf16.h"
#include "backend/cuda/context.h"

namespace ds4::cuda {

void fill_uniform_bf16(Context& ctx, bf16* dst, int64_t n, uint64_t stream, float scale);
void fill_uniform_f32(Context& ctx, float* dst, int64_t n, uint64_t stream, float scale);

}  // namespace ds4::cuda
