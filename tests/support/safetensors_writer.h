// Writes safetensors files for tests, so malformed and modified checkpoints can be made from real fixtures.
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace ds4::test {

struct RawTensor {
  std::string dtype;  // safetensors spelling
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

inline void write_safetensors(const std::string& path, const std::map<std::string, RawTensor>& tensors,
                              const std::string& header_override = "") {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (auto& [name, t] : tensors) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string header = header_override.empty() ? h.dump() : header_override;
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), std::streamsize(header.size()));
  for (auto& [name, t] : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
}

// Every tensor of a checkpoint directory as raw bytes.
inline std::map<std::string, RawTensor> read_all(const std::string& dir) {
  auto store = TensorStore::open_dir(dir);
  std::map<std::string, RawTensor> out;
  for (auto& n : store.names()) {
    const auto& t = store.get(n);
    out[n] = RawTensor{dtype_name(t.dtype), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)};
  }
  return out;
}

}  // namespace ds4::test
