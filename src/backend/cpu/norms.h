// RMSNorm variants of the qwen hybrid family.
#pragma once
#include <cstdint>

namespace ds4::cpu {

enum class Act { None, Silu, Sigmoid };

float silu(float x);
float sigmoid(float x);
float softplus(float x);
float apply_act(Act a, float x);

// Zero-centred RMSNorm: y = x / rms(x over each group of `group` elements) * (1 + w). w has `dim` entries
// (all groups); group == dim is the plain form. Rows are independent.
void rms_norm_offset(const float* x, const float* w, float* y, int64_t rows, int64_t dim, int64_t group, float eps);

// Gated RMSNorm (the GDN output norm): y = (x / rms(x)) * w * act(z), w applied as is (ones-initialised).
void rms_norm_gated(const float* x, const float* z, const float* w, float* y, int64_t rows, int64_t dim, float eps,
                    Act act);

// In-place L2 normalisation x / sqrt(sum(x^2) + eps) of each row.
void l2_norm(float* x, int64_t rows, int64_t dim, float eps);

}  // namespace ds4::cpu
