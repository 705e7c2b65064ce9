// Fake WMMA (tools/cuda-emu): lane 0 of each warp holds and computes the whole tile, the other lanes skip the
// work (their fragments are never stored). Checks the documented rules: 256-bit aligned pointers, ldm a multiple
// of 16 bytes. Semantics as documented: row_major A (i, k) at p[i*ldm + k], col_major B (k, n) at p[n*ldm + k],
// D = A B + C in float.
#pragma once
#include <cuda_bf16.h>
#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace nvcuda::wmma {
inline bool idle_lane() { return (::emu::tlin & 31) != 0; }
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int R = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int C = std::is_same_v<Use, matrix_a> ? K : N;
  float x[R * C];
};

inline void check(const void* p, unsigned ldm, size_t esize) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0 || (ldm * esize) % 16 != 0) {
    std::fprintf(stderr, "EMU wmma: misaligned pointer %p or ldm %u\n", p, ldm);
    std::abort();
  }
}
inline float tof(float v) { return v; }
inline float tof(__nv_bfloat16 v) { return __bfloat162float(v); }

template <int M, int N, int K, class T, class L>
void load_matrix_sync(fragment<matrix_a, M, N, K, T, L>& f, const T* p, unsigned ldm) {
  check(p, ldm, sizeof(T));
  if (idle_lane()) return;
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++) f.x[i * K + k] = tof(std::is_same_v<L, row_major> ? p[i * ldm + k] : p[k * ldm + i]);
}
template <int M, int N, int K, class T, class L>
void load_matrix_sync(fragment<matrix_b, M, N, K, T, L>& f, const T* p, unsigned ldm) {
  check(p, ldm, sizeof(T));
  if (idle_lane()) return;
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n++) f.x[k * N + n] = tof(std::is_same_v<L, row_major> ? p[k * ldm + n] : p[n * ldm + k]);
}
template <int M, int N, int K>
void fill_fragment(fragment<accumulator, M, N, K, float>& f, float v) {
  for (auto& e : f.x) e = v;
}
template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
  if (idle_lane()) return;
  float out[M * N];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = c.x[i * N + j];
      for (int k = 0; k < K; k++) s += a.x[i * K + k] * b.x[k * N + j];
      out[i * N + j] = s;
    }
  for (int i = 0; i < M * N; i++) d.x[i] = out[i];
}
template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t l) {
  check(p, ldm, sizeof(float));
  if (idle_lane()) return;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) (l == mem_row_major ? p[i * ldm + j] : p[j * ldm + i]) = f.x[i * N + j];
}
}  // namespace nvcuda::wmma
