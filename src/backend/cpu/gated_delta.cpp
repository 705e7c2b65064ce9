#include "backend/cpu/gated_delta.h"

#include <cmath>
#include <vector>

namespace ds4::cpu {

void gated_delta_recurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                           DeltaShape s, float* state, float* out) {
  const int64_t H = s.H, dk = s.dk, dv = s.dv;
#pragma omp parallel for schedule(static) if (H * dk * dv > 16384)
  for (int64_t h = 0; h < H; h++) {
    float* S = state + h * dk * dv;
    std::vector<float> mem(static_cast<size_t>(dv), 0.0f);
    for (int64_t t = 0; t < s.T; t++) {
      const float* qt = q + (t * H + h) * dk;
      const float* kt = k + (t * H + h) * dk;
      const float* vt = v + (t * H + h) * dv;
      const float decay = std::exp(g[t * H + h]), b = beta[t * H + h];
      for (int64_t i = 0; i < dk * dv; i++) S[i] *= decay;
      std::fill(mem.begin(), mem.end(), 0.0f);
      for (int64_t i = 0; i < dk; i++)
        for (int64_t j = 0; j < dv; j++) mem[size_t(j)] += S[i * dv + j] * kt[i];
      for (int64_t j = 0; j < dv; j++) mem[size_t(j)] = (vt[j] - mem[size_t(j)]) * b;
      for (int64_t i = 0; i < dk; i++)
        for (int64_t j = 0; j < dv; j++) S[i * dv + j] += kt[i] * mem[size_t(j)];
      float* ot = out + (t * H + h) * dv;
      for (int64_t j = 0; j < dv; j++) ot[j] = 0.0f;
      for (int64_t i = 0; i < dk; i++)
        for (int64_t j = 0; j < dv; j++) ot[j] += S[i * dv + j] * qt[i];
    }
  }
}

void gated_delta_chunked(const float* q, const float* k, const float* v, const float* g, const float* beta,
                         DeltaShape s, float* state, float* out, int64_t C) {
  const int64_t H = s.H, dk = s.dk, dv = s.dv, T = s.T;
#pragma omp parallel for schedule(static) if (H * T * dk * dv > 65536)
  for (int64_t h = 0; h < H; h++) {
    float* S = state + h * dk * dv;
    std::vector<float> cum(static_cast<size_t>(C)), A(static_cast<size_t>(C * C)), U(static_cast<size_t>(C * dv)), W(static_cast<size_t>(C * dk)), vn(static_cast<size_t>(C * dv));
    for (int64_t c0 = 0; c0 < T; c0 += C) {
      const int64_t L = std::min(C, T - c0);
      auto Q = [&](int64_t i) { return q + ((c0 + i) * H + h) * dk; };
      auto K = [&](int64_t i) { return k + ((c0 + i) * H + h) * dk; };
      auto V = [&](int64_t i) { return v + ((c0 + i) * H + h) * dv; };
      float acc = 0.0f;
      for (int64_t i = 0; i < L; i++) cum[size_t(i)] = acc += g[(c0 + i) * H + h];
      // Unit lower-triangular system: A[i][j] = beta_i (k_i·k_j) exp(cum_i - cum_j), j < i.
      for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < i; j++) {
          float d = 0.0f;
          for (int64_t e = 0; e < dk; e++) d += K(i)[e] * K(j)[e];
          A[size_t(i * C + j)] = beta[(c0 + i) * H + h] * d * std::exp(cum[size_t(i)] - cum[size_t(j)]);
        }
      // Forward substitution: U = A^-1 (beta v), W = A^-1 (beta k exp(cum)).
      for (int64_t i = 0; i < L; i++) {
        const float b = beta[(c0 + i) * H + h], ec = std::exp(cum[size_t(i)]);
        for (int64_t e = 0; e < dv; e++) U[size_t(i * dv + e)] = b * V(i)[e];
        for (int64_t e = 0; e < dk; e++) W[size_t(i * dk + e)] = b * K(i)[e] * ec;
        for (int64_t j = 0; j < i; j++) {
          const float a = A[size_t(i * C + j)];
          for (int64_t e = 0; e < dv; e++) U[size_t(i * dv + e)] -= a * U[size_t(j * dv + e)];
          for (int64_t e = 0; e < dk; e++) W[size_t(i * dk + e)] -= a * W[size_t(j * dk + e)];
        }
      }
      // v_new = U - W S (the part of each value the incoming state does not already predict).
      for (int64_t i = 0; i < L; i++)
        for (int64_t e = 0; e < dv; e++) {
          float d = U[size_t(i * dv + e)];
          for (int64_t a = 0; a < dk; a++) d -= W[size_t(i * dk + a)] * S[a * dv + e];
          vn[size_t(i * dv + e)] = d;
        }
      // Outputs: the decayed query reads the incoming state plus the intra-chunk attention over v_new.
      for (int64_t i = 0; i < L; i++) {
        float* o = out + ((c0 + i) * H + h) * dv;
        const float eq = std::exp(cum[size_t(i)]);
        for (int64_t e = 0; e < dv; e++) {
          float d = 0.0f;
          for (int64_t a = 0; a < dk; a++) d += Q(i)[a] * eq * S[a * dv + e];
          o[e] = d;
        }
        for (int64_t j = 0; j <= i; j++) {
          float qk = 0.0f;
          for (int64_t a = 0; a < dk; a++) qk += Q(i)[a] * K(j)[a];
          const float w = qk * std::exp(cum[size_t(i)] - cum[size_t(j)]);
          for (int64_t e = 0; e < dv; e++) o[e] += w * vn[size_t(j * dv + e)];
        }
      }
      // State update: S exp(cum_last) + sum_j (k_j exp(cum_last - cum_j)) ⊗ v_new_j.
      const float last = cum[size_t(L - 1)], el = std::exp(last);
      for (int64_t i = 0; i < dk * dv; i++) S[i] *= el;
      for (int64_t j = 0; j < L; j++) {
        const float dj = std::exp(last - cum[size_t(j)]);
        for (int64_t a = 0; a < dk; a++) {
          const float ka = K(j)[a] * dj;
          for (int64_t e = 0; e < dv; e++) S[a * dv + e] += ka * vn[size_t(j * dv + e)];
        }
      }
    }
  }
}

}  // namespace ds4::cpu
