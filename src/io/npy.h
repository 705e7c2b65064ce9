// float32 .npy files (the logits CLI output and the oracle's reference logits).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4 {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape);
NpyArray read_npy_f32(const std::string& path);  // little-endian '<f4', C order; throws Error(Io|Format)

}  // namespace ds4
