#include "backend/cpu/linear.h"

namespace ds4::cpu {

static inline float dot(const float* a, const float* b, int64_t K) {
  // Eight independent partial sums let the compiler keep a vector accumulator without -ffast-math.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8)
    for (int j = 0; j < 8; j++) acc[j] += a[k + j] * b[k + j];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; k < K; k++) s += a[k] * b[k];
  return s;
}

void linear(const float* x, int64_t T, int64_t K, const float* W, int64_t N, float* y) {
  if (T == 1) {
#pragma omp parallel for schedule(static) if (N * K > 32768)
    for (int64_t n = 0; n < N; n++) y[n] = dot(x, W + n * K, K);
    return;
  }
  // Blocks of weight rows stay in cache while every token of the chunk passes over them.
  const int64_t NB = 16;
#pragma omp parallel for schedule(static) if (T * N * K > 32768)
  for (int64_t nb = 0; nb < N; nb += NB) {
    const int64_t ne = nb + NB < N ? nb + NB : N;
    for (int64_t t = 0; t < T; t++)
      for (int64_t n = nb; n < ne; n++) y[t * N + n] = dot(x + t * K, W + n * K, K);
  }
}

void dot_rows(const float* x, const float* w, int64_t K, float* out) { *out = dot(x, w, K); }

}  // namespace ds4::cpu
