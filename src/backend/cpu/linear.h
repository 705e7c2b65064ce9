// Dense projections of the CPU reference backend: y[T,N] = x[T,K] · W[N,K]^T (torch's Linear layout).
// Each output element is one dot product whose order does not depend on T, so a chunked prefill gives the
// same bits as a whole one.
#pragma once
#include <cstdint>

namespace ds4::cpu {

void linear(const float* x, int64_t T, int64_t K, const float* W, int64_t N, float* y);

}  // namespace ds4::cpu
