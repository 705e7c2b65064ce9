#include "models/qwen_hybrid/hyper_connection.h"

#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"

namespace ds4::qwen {

void hc_mix(const HyperConnWeights& w, const Config& c, const float* x, int64_t T, float* mixed, float* inject) {
  const int64_t H = c.hidden_size, S = c.hc_count, D = S * H, R = c.hc_lowrank;
  std::vector<float> normed(static_cast<size_t>(T * D)), low(static_cast<size_t>(T * R)), mix(static_cast<size_t>(T * D));
  cpu::rms_norm_offset(x, w.norm.p(), normed.data(), T, D, H, float(c.rms_eps));
  cpu::linear(normed.data(), T, D, w.down.p(), R, low.data());
  for (auto& v : low) v = cpu::silu(v / float(S));
  cpu::linear(low.data(), T, R, w.up.p(), D, mix.data());
  for (int64_t t = 0; t < T; t++)
    for (int64_t h = 0; h < H; h++) {
      float acc = 0.0f;
      for (int64_t s = 0; s < S; s++) {
        const size_t i = size_t(t * D + s * H + h);
        acc += cpu::sigmoid(mix[i]) * normed[i];
      }
      mixed[t * H + h] = acc / float(S);
    }
  if (inject && w.has_inject) {
    cpu::linear(normed.data(), T, D, w.inject.p(), S, inject);
    for (int64_t i = 0; i < T * S; i++) inject[i] = 2.0f * cpu::sigmoid(inject[i] / float(S));
  }
}

void hc_inject(float* x, const float* out, const float* inject, int64_t T, const Config& c) {
  const int64_t H = c.hidden_size, S = c.hc_count;
  for (int64_t t = 0; t < T; t++)
    for (int64_t s = 0; s < S; s++)
      for (int64_t h = 0; h < H; h++) x[(t * S + s) * H + h] += out[t * H + h] * inject[t * S + s];
}

}  // namespace ds4::qwen
