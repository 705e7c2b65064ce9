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

void gdn_forward(const GdnWeights& w, const Config& c, GdnState& s, const float* x, int64_t T, float* out) {
  const int64_t H = c.hidden_size, KH = c.lin_k_heads, VH = c.lin_v_heads, dk = c.lin_k_dim, dv = c.lin_v_dim;
  const int64_t kd = KH * dk, vd = VH * dv, conv_dim = 2 * kd + vd, rep = VH / KH;
  std::vector<float> qkv(static_cast<size_t>(T * conv_dim)), z(static_cast<size_t>(T * vd)), b(static_cast<size_t>(T * VH)), a(static_cast<size_t>(T * VH));
  cpu::linear(x, T, H, w.in_qkv.p(), conv_dim, qkv.data());
  cpu::linear(x, T, H, w.in_z.p(), vd, z.data());
  cpu::linear(x, T, H, w.in_b.p(), VH, b.data());
  cpu::linear(x, T, H, w.in_a.p(), VH, a.data());
  std::vector<float> conv(static_cast<size_t>(T * conv_dim));
  cpu::causal_conv1d(qkv.data(), T, conv_dim, w.conv.p(), c.conv_kernel, 1, s.conv.data(), conv.data(), cpu::Act::Silu);

  // Split, expand key heads to value heads (repeat_interleave), L2-normalise, scale queries.
  std::vector<float> q(static_cast<size_t>(T * VH * dk)), k(static_cast<size_t>(T * VH * dk)), v(static_cast<size_t>(T * vd)), g(static_cast<size_t>(T * VH)),
      beta(static_cast<size_t>(T * VH));
  const float qscale = 1.0f / std::sqrt(float(dk));
  for (int64_t t = 0; t < T; t++) {
    const float* row = conv.data() + t * conv_dim;
    for (int64_t h = 0; h < VH; h++) {
      const int64_t kh = h / rep;
      for (int64_t e = 0; e < dk; e++) {
        q[size_t((t * VH + h) * dk + e)] = row[kh * dk + e];
        k[size_t((t * VH + h) * dk + e)] = row[kd + kh * dk + e];
      }
      for (int64_t e = 0; e < dv; e++) v[size_t((t * VH + h) * dv + e)] = row[2 * kd + h * dv + e];
      beta[size_t(t * VH + h)] = cpu::sigmoid(b[size_t(t * VH + h)]);
      g[size_t(t * VH + h)] = -std::exp(w.a_log.v[size_t(h)]) * cpu::softplus(a[size_t(t * VH + h)] + w.dt_bias.v[size_t(h)]);
    }
  }
  cpu::l2_norm(q.data(), T * VH, dk, 1e-6f);
  cpu::l2_norm(k.data(), T * VH, dk, 1e-6f);
  for (auto& e : q) e *= qscale;

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
