#include "models/qwen_hybrid/gated_deltanet.h"

#include <cmath>
#include <vector>

#include "backend/cpu/conv1d.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"

namespace ds4::qwen {

void init_gdn_state(GdnState& s, const Config& c) {
  const int64_t conv_dim = 2 * c.lin_k_heads * c.lin_k_dim + c.lin_v_heads * c.lin_v_dim;
  s.conv.assign(static_cast<size_t>((c.conv_kernel - 1) * conv_dim), 0.0f);
  s.recurrent.assign(static_cast<size_t>(c.lin_v_heads * c.lin_k_dim * c.lin_v_dim), 0.0f);
}

void gdn_prepare(const float* conv_out, const float* a, const float* b, const float* A_log, const float* dt_bias,
                 int64_t T, int64_t KH, int64_t VH, int64_t dk, int64_t dv, std::vector<float>& q,
                 std::vector<float>& k, std::vector<float>& v, std::vector<float>& g, std::vector<float>& beta) {
  const int64_t kd = KH * dk, conv_dim = 2 * kd + VH * dv, rep = VH / KH;
  q.resize(size_t(T * VH * dk));
  k.resize(q.size());
  v.resize(size_t(T * VH * dv));
  g.resize(size_t(T * VH));
  beta.resize(g.size());
  // Split, expand key heads to value heads (repeat_interleave), L2-normalise, scale queries.
  for (int64_t t = 0; t < T; t++) {
    const float* row = conv_out + t * conv_dim;
    for (int64_t h = 0; h < VH; h++) {
      const int64_t kh = h / rep;
      for (int64_t e = 0; e < dk; e++) {
        q[size_t((t * VH + h) * dk + e)] = row[kh * dk + e];
        k[size_t((t * VH + h) * dk + e)] = row[kd + kh * dk + e];
      }
      for (int64_t e = 0; e < dv; e++) v[size_t((t * VH + h) * dv + e)] = row[2 * kd + h * dv + e];
      beta[size_t(t * VH + h)] = cpu::sigmoid(b[size_t(t * VH + h)]);
      g[size_t(t * VH + h)] = -std::exp(A_log[size_t(h)]) * cpu::softplus(a[size_t(t * VH + h)] + dt_bias[size_t(h)]);
    }
  }
  cpu::l2_norm(q.data(), T * VH, dk, 1e-6f);
  cpu::l2_norm(k.data(), T * VH, dk, 1e-6f);
  const float qscale = 1.0f / std::sqrt(float(dk));
  for (auto& e : q) e *= qscale;
}

void gdn_forward(const GdnWeights& w, const Config& c, GdnState& s, const float* x, int64_t T, float* out) {
  const int64_t H = c.hidden_size, KH = c.lin_k_heads, VH = c.lin_v_heads, dk = c.lin_k_dim, dv = c.lin_v_dim;
  const int64_t vd = VH * dv, conv_dim = 2 * KH * dk + vd;
  std::vector<float> qkv(static_cast<size_t>(T * conv_dim)), z(static_cast<size_t>(T * vd)), b(static_cast<size_t>(T * VH)), a(static_cast<size_t>(T * VH));
  cpu::linear(x, T, H, w.in_qkv.p(), conv_dim, qkv.data());
  cpu::linear(x, T, H, w.in_z.p(), vd, z.data());
  cpu::linear(x, T, H, w.in_b.p(), VH, b.data());
  cpu::linear(x, T, H, w.in_a.p(), VH, a.data());
  std::vector<float> conv(static_cast<size_t>(T * conv_dim));
  cpu::causal_conv1d(qkv.data(), T, conv_dim, w.conv.p(), c.conv_kernel, 1, s.conv.data(), conv.data(), cpu::Act::Silu);

  std::vector<float> q, k, v, g, beta;
  gdn_prepare(conv.data(), a.data(), b.data(), w.a_log.p(), w.dt_bias.p(), T, KH, VH, dk, dv, q, k, v, g, beta);

  std::vector<float> core(static_cast<size_t>(T * vd));
  const cpu::DeltaShape shape{T, VH, dk, dv};
  // Decode steps and short verification chunks (speculative decoding) take the recurrent form, so their rows
  // have the same bits as token-by-token decoding; prefill chunks take the chunked form.
  if (T <= kRecurrentMaxTokens)
    cpu::gated_delta_recurrent(q.data(), k.data(), v.data(), g.data(), beta.data(), shape, s.recurrent.data(), core.data());
  else
    cpu::gated_delta_chunked(q.data(), k.data(), v.data(), g.data(), beta.data(), shape, s.recurrent.data(), core.data());

  const cpu::Act act = c.gdn_gate_act == "sigmoid" ? cpu::Act::Sigmoid : cpu::Act::Silu;
  std::vector<float> normed(static_cast<size_t>(T * vd));
  cpu::rms_norm_gated(core.data(), z.data(), w.norm.p(), normed.data(), T * VH, dv, float(c.rms_eps), act);
  cpu::linear(normed.data(), T, vd, w.out.p(), H, out);
}

}  // namespace ds4::qwen
