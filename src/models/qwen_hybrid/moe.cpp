#include "models/qwen_hybrid/moe.h"

#include <cmath>
#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cpu/norms.h"
#include "backend/cpu/topk.h"

namespace ds4::qwen {
namespace {

// SwiGLU MLP over the rows of x: down(silu(gate x) * up x).
void swiglu(const Mat& gate, const Mat& up, const Mat& down, const float* x, int64_t T, int64_t H, int64_t I, float* y) {
  std::vector<float> g(static_cast<size_t>(T * I)), u(static_cast<size_t>(T * I));
  cpu::linear(x, T, H, gate.p(), I, g.data());
  cpu::linear(x, T, H, up.p(), I, u.data());
  for (size_t i = 0; i < g.size(); i++) g[i] = cpu::silu(g[i]) * u[i];
  cpu::linear(g.data(), T, I, down.p(), H, y);
}

}  // namespace

void moe_forward(const MoeWeights& w, const Config& c, const float* x, int64_t T, float* out) {
  const int64_t H = c.hidden_size, E = c.num_experts, K = c.top_k;
  std::vector<float> logits(static_cast<size_t>(T * E));
  cpu::linear(x, T, H, w.router.p(), E, logits.data());
  // Route: per token, the top-k of the softmax, optionally renormalised.
  std::vector<std::vector<std::pair<int64_t, float>>> by_expert(static_cast<size_t>(E));  // (token, weight)
  for (int64_t t = 0; t < T; t++) {
    float* l = logits.data() + t * E;
    float mx = l[0];
    for (int64_t e = 1; e < E; e++) mx = std::max(mx, l[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < E; e++) sum += (l[e] = std::exp(l[e] - mx));
    for (int64_t e = 0; e < E; e++) l[e] /= sum;
    auto top = cpu::topk_indices(l, E, K);
    float norm = 0.0f;
    for (auto e : top) norm += l[e];
    for (auto e : top) by_expert[size_t(e)].push_back({t, c.norm_topk_prob ? l[e] / norm : l[e]});
  }
  // Shared expert first, then each routed expert's tokens in expert order (the reference's index_add order).
  std::vector<float> routed(static_cast<size_t>(T * H), 0.0f);
  std::vector<float> xe, ye;
  for (int64_t e = 0; e < E; e++) {
    const auto& toks = by_expert[size_t(e)];
    if (toks.empty()) continue;
    const int64_t n = int64_t(toks.size());
    xe.resize(static_cast<size_t>(n * H));
    ye.resize(static_cast<size_t>(n * H));
    for (int64_t i = 0; i < n; i++)
      std::copy(x + toks[size_t(i)].first * H, x + (toks[size_t(i)].first + 1) * H, xe.begin() + i * H);
    swiglu(w.gate[size_t(e)], w.up[size_t(e)], w.down[size_t(e)], xe.data(), n, H, c.moe_inter, ye.data());
    for (int64_t i = 0; i < n; i++)
      for (int64_t h = 0; h < H; h++) routed[size_t(toks[size_t(i)].first * H + h)] += ye[size_t(i * H + h)] * toks[size_t(i)].second;
  }
  std::vector<float> shared(static_cast<size_t>(T * H)), sg(static_cast<size_t>(T));
  swiglu(w.sh_gate, w.sh_up, w.sh_down, x, T, H, c.shared_inter, shared.data());
  cpu::linear(x, T, H, w.sh_gate_w.p(), 1, sg.data());
  for (int64_t t = 0; t < T; t++) {
    const float gate = cpu::sigmoid(sg[size_t(t)]);
    for (int64_t h = 0; h < H; h++) out[t * H + h] = routed[size_t(t * H + h)] + gate * shared[size_t(t * H + h)];
  }
}

}  // namespace ds4::qwen
