#include "models/qwen_hybrid/mtp.h"

#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"
#include "models/qwen_hybrid/moe.h"
#include "models/qwen_hybrid/sparse_attention.h"

namespace ds4::qwen {

void mtp_forward(const MtpWeights& w, const Config& c, const cpu::RopeTable& rope, const Mat& embed, AttnState& s,
                 const float* h, const int32_t* next_tokens, int64_t T, int64_t pos0, float* out) {
  const int64_t H = c.hidden_size;
  const float eps = float(c.rms_eps);
  // [normed embedding of x_{s+1} ; normed h_s], the embedding first (fc's input columns 0..H-1).
  std::vector<float> cat(static_cast<size_t>(T * 2 * H));
  for (int64_t t = 0; t < T; t++) {
    cpu::rms_norm_offset(embed.p() + next_tokens[t] * H, w.pre_norm_embed.p(), cat.data() + t * 2 * H, 1, H, H, eps);
    cpu::rms_norm_offset(h + t * H, w.pre_norm_hidden.p(), cat.data() + t * 2 * H + H, 1, H, H, eps);
  }
  std::vector<float> u(static_cast<size_t>(T * H)), a(u.size()), o(u.size());
  cpu::linear(cat.data(), T, 2 * H, w.fc.p(), H, u.data());
  // Pre-norm attention block with a residual, then the pre-norm MoE block with a residual.
  cpu::rms_norm_offset(u.data(), w.input_norm.p(), a.data(), T, H, H, eps);
  gated_attention(w.attn, c, rope, s, a.data(), T, pos0, causal_selection(T, pos0), o.data());
  for (size_t i = 0; i < u.size(); i++) u[i] += o[i];
  cpu::rms_norm_offset(u.data(), w.post_norm.p(), a.data(), T, H, H, eps);
  moe_forward(w.moe, c, a.data(), T, o.data());
  for (size_t i = 0; i < u.size(); i++) u[i] += o[i];
  cpu::rms_norm_offset(u.data(), w.norm.p(), out, T, H, H, eps);
}

}  // namespace ds4::qwen
