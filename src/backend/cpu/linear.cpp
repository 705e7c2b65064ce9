#include "backend/cpu/linear.h"

#include <cstring>

namespace ds4::cpu {
namespace {

// Eight float lanes (one AVX register). Every output element is computed by the same expression in every
// code path below (lane-wise products summed over k in blocks of 8, then one fixed reduction tree, then
// the scalar tail), so a token's projection has the same bits whatever the chunk size or blocking.
typedef float v8f __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline float finish(v8f a, const float* x, const float* w, int64_t k, int64_t K) {
  float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
  for (; k < K; k++) s += x[k] * w[k];
  return s;
}

inline float dot(const float* a, const float* b, int64_t K) {
  v8f acc = {};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) acc += load8(a + k) * load8(b + k);
  return finish(acc, a, b, k, K);
}

// Two tokens against four weight rows: each weight block loaded once feeds two dot products, each token
// block four.
inline void dot_2x4(const float* x0, const float* x1, const float* W, int64_t K, float* y0, float* y1) {
  const float* w0 = W;
  const float* w1 = W + K;
  const float* w2 = W + 2 * K;
  const float* w3 = W + 3 * K;
  v8f a00 = {}, a01 = {}, a02 = {}, a03 = {}, a10 = {}, a11 = {}, a12 = {}, a13 = {};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    const v8f p = load8(x0 + k), q = load8(x1 + k);
    const v8f b0 = load8(w0 + k), b1 = load8(w1 + k), b2 = load8(w2 + k), b3 = load8(w3 + k);
    a00 += p * b0;
    a01 += p * b1;
    a02 += p * b2;
    a03 += p * b3;
    a10 += q * b0;
    a11 += q * b1;
    a12 += q * b2;
    a13 += q * b3;
  }
  y0[0] = finish(a00, x0, w0, k, K);
  y0[1] = finish(a01, x0, w1, k, K);
  y0[2] = finish(a02, x0, w2, k, K);
  y0[3] = finish(a03, x0, w3, k, K);
  y1[0] = finish(a10, x1, w0, k, K);
  y1[1] = finish(a11, x1, w1, k, K);
  y1[2] = finish(a12, x1, w2, k, K);
  y1[3] = finish(a13, x1, w3, k, K);
}

}  // namespace

void linear(const float* x, int64_t T, int64_t K, const float* W, int64_t N, float* y) {
  if (T == 1) {
#pragma omp parallel for schedule(static) if (N * K > 32768)
    for (int64_t n = 0; n < N; n++) y[n] = dot(x, W + n * K, K);
    return;
  }
  // Blocks of 64 weight rows stay in cache while every token of the chunk passes over them.
  const int64_t NB = 64;
#pragma omp parallel for schedule(static) if (T * N * K > 32768)
  for (int64_t nb = 0; nb < N; nb += NB) {
    const int64_t ne = nb + NB < N ? nb + NB : N;
    int64_t t = 0;
    for (; t + 2 <= T; t += 2) {
      const float* x0 = x + t * K;
      const float* x1 = x0 + K;
      int64_t n = nb;
      float r0[4], r1[4];
      for (; n + 4 <= ne; n += 4) {
        dot_2x4(x0, x1, W + n * K, K, r0, r1);
        for (int j = 0; j < 4; j++) {
          y[t * N + n + j] = r0[j];
          y[(t + 1) * N + n + j] = r1[j];
        }
      }
      for (; n < ne; n++) {
        y[t * N + n] = dot(x0, W + n * K, K);
        y[(t + 1) * N + n] = dot(x1, W + n * K, K);
      }
    }
    for (; t < T; t++)
      for (int64_t n = nb; n < ne; n++) y[t * N + n] = dot(x + t * K, W + n * K, K);
  }
}

}  // namespace ds4::cpu
