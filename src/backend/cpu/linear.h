// Dense projections of the CPU reference backend: y[T,N] = x[T,K] · W[N,K]^T (torch's Linear layout).
// Each output element is one dot product whose order does not depend on T, so a chunked prefill gives the
// same bits as a whole one.
#pragma once
#include <cstdint>

namespace ds4::cpu {

void linear(const float* x, int64_t T, int64_t K, const float* W, int64_t N, float* y);

// y[t] += scale[t] * (x[t] · W^T) : accumulate form used by expert outputs.
void dot_rows(const float* x, const float* w, int64_t K, float* out);

}  // namespace ds4::cpu
