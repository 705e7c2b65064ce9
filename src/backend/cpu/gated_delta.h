// The gated delta rule (Gated DeltaNet's recurrence), per value head h with state S_h [dk, dv]:
//   S <- S * exp(g_t);  S <- S + k_t ⊗ beta_t (v_t - S^T k_t);  o_t = S^T q_t
// q and k arrive L2-normalised with q already scaled by 1/sqrt(dk). Prefill uses the chunked (UT-transform)
// form, decode the recurrent form; both compute the same function.
#pragma once
#include <cstdint>

namespace ds4::cpu {

struct DeltaShape {
  int64_t T, H, dk, dv;  // tokens, value heads, key dim, value dim
};

// q,k [T, H, dk]; v [T, H, dv]; g, beta [T, H]; state [H, dk, dv] updated in place; out [T, H, dv].
void gated_delta_chunked(const float* q, const float* k, const float* v, const float* g, const float* beta,
                         DeltaShape s, float* state, float* out, int64_t chunk = 64);
void gated_delta_recurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                           DeltaShape s, float* state, float* out);

}  // namespace ds4::cpu
