#include "models/qwen_hybrid/ple.h"

#include <cmath>

#include "backend/cpu/conv1d.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"

namespace ds4::qwen {

void init_ple_state(PleState& s, const Config& c) {
  const int64_t D = c.hc_count * c.hidden_size;
  s.conv.assign(static_cast<size_t>((c.ple_conv_kernel - 1) * c.ngram_size * D), 0.0f);
  s.context.assign(static_cast<size_t>(c.ngram_size - 1), c.eos_for_ple());
}

std::vector<int64_t> ple_ngram_rows(const PleWeights& w, const Config& c, PleState& s, const int32_t* tokens, int64_t T) {
  const int64_t N = c.ngram_size, ctx = N - 1, eos = c.eos_for_ple(), HPN = c.heads_per_ngram;
  std::vector<int64_t> hist(s.context);
  for (int64_t t = 0; t < T; t++) hist.push_back(tokens[t]);
  // last_eos[i]: index of the last eos strictly before i in the history, or -1.
  std::vector<int64_t> last_eos(hist.size());
  int64_t seen = -1;
  for (size_t i = 0; i < hist.size(); i++) {
    last_eos[i] = seen;
    if (hist[i] == eos) seen = int64_t(i);
  }
  std::vector<int64_t> rows(static_cast<size_t>(T * ctx * HPN));
  std::vector<int64_t> shifted(static_cast<size_t>(N));
  for (int64_t t = 0; t < T; t++) {
    const int64_t i = ctx + t;
    for (int64_t sh = 0; sh < N; sh++) {
      // A token sh places back counts only inside the current eos-delimited segment; eos stands in otherwise.
      const bool valid = i - (last_eos[size_t(i)] + 1) >= sh && i - sh >= 0;
      shifted[size_t(sh)] = valid ? hist[size_t(i - sh)] : eos;
    }
    for (int64_t n = 2; n <= N; n++) {
      // int64 products wrap exactly as torch's do; unsigned arithmetic makes that well defined here.
      uint64_t mixed = uint64_t(shifted[0]) * uint64_t(w.multipliers[0]);
      for (int64_t p = 1; p < n; p++) mixed ^= uint64_t(shifted[size_t(p)]) * uint64_t(w.multipliers[size_t(p)]);
      const int64_t m = int64_t(mixed);
      for (int64_t h = 0; h < HPN; h++) {
        const int64_t head = (n - 2) * HPN + h, size = w.head_sizes[size_t(head)];
        int64_t r = m % size;
        if (r < 0) r += size;  // torch.remainder takes the divisor's sign
        rows[size_t((t * ctx + (n - 2)) * HPN + h)] = r + w.head_offsets[size_t(head)];
      }
    }
  }
  s.context.assign(hist.end() - ctx, hist.end());
  return rows;
}

void ple_forward(const PleWeights& w, const Config& c, PleState& s, const float* x, const int32_t* tokens, int64_t T,
                 float* out) {
  const int64_t H = c.hidden_size, S = c.hc_count, D = S * H, E = c.ple_embed_dim;
  const int64_t heads = (c.ngram_size - 1) * c.heads_per_ngram, hd = E / heads;
  const float eps = float(c.rms_eps);
  const auto rows = ple_ngram_rows(w, c, s, tokens, T);
  std::vector<float> emb(static_cast<size_t>(T * E));
  for (int64_t t = 0; t < T; t++)
    for (int64_t h = 0; h < heads; h++) {
      const float* src = w.table.p() + rows[size_t(t * heads + h)] * hd;
      std::copy(src, src + hd, emb.begin() + t * E + h * hd);
    }
  std::vector<float> key(static_cast<size_t>(T * D)), value(static_cast<size_t>(T * H)), query(static_cast<size_t>(T * D));
  cpu::linear(emb.data(), T, E, w.key.p(), D, key.data());
  cpu::rms_norm_offset(key.data(), w.norm_key.p(), key.data(), T, D, H, eps);
  cpu::linear(emb.data(), T, E, w.value.p(), H, value.data());
  cpu::rms_norm_offset(x, w.norm_query.p(), query.data(), T, D, H, eps);
  std::vector<float> gated(static_cast<size_t>(T * D)), normed(static_cast<size_t>(T * D)), conv(static_cast<size_t>(T * D));
  const float inv_sqrt = 1.0f / std::sqrt(float(H));
  for (int64_t t = 0; t < T; t++)
    for (int64_t st = 0; st < S; st++) {
      float g = 0.0f;
      for (int64_t h = 0; h < H; h++) g += key[size_t(t * D + st * H + h)] * query[size_t(t * D + st * H + h)];
      g *= inv_sqrt;
      // Signed square root keeps the gate's sign while compressing its range.
      const float sgn = g > 0.0f ? 1.0f : g < 0.0f ? -1.0f : 0.0f;
      g = std::sqrt(std::max(std::fabs(g), 1e-6f)) * sgn;
      const float sg = cpu::sigmoid(g);
      for (int64_t h = 0; h < H; h++) gated[size_t(t * D + st * H + h)] = sg * value[size_t(t * H + h)];
    }
  cpu::rms_norm_offset(gated.data(), w.norm_conv.p(), normed.data(), T, D, H, eps);
  cpu::causal_conv1d(normed.data(), T, D, w.conv.p(), c.ple_conv_kernel, c.ngram_size, s.conv.data(), conv.data(),
                     cpu::Act::Silu);
  for (size_t i = 0; i < gated.size(); i++) out[i] = gated[i] + conv[i];
}

}  // namespace ds4::qwen
