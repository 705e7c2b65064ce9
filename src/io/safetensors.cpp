#include "io/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

namespace ds4 {
namespace fs = std::filesystem;
using nlohmann::json;

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(std::make_shared<MappedFile>(path)) {
  const size_t size = file_->size();
  const uint8_t* base = file_->data();
  auto fail = [&](const std::string& what) { throw Error(ErrorKind::Format, path + ": " + what); };
  if (size < 8) fail("truncated: shorter than the 8-byte header length");
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | base[i];
  if (hlen > size - 8) fail("truncated: header length " + std::to_string(hlen) + " exceeds file size " +
                            std::to_string(size));
  json header;
  try {
    header = json::parse(base + 8, base + 8 + hlen);
  } catch (const json::exception& e) {
    fail(std::string("malformed header JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is not a JSON object");
  const uint8_t* data = base + 8 + hlen;
  const size_t data_size = size - 8 - hlen;
  for (auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& what) { fail("tensor '" + name + "': " + what); };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      bad("entry needs dtype, shape and data_offsets");
    if (!v["dtype"].is_string()) bad("dtype is not a string");
    TensorView t;
    t.name = name;
    t.file = path;
    if (!parse_dtype(v["dtype"].get<std::string>(), &t.dtype))
      throw Error(ErrorKind::Unsupported, path + ": tensor '" + name + "': unsupported dtype " +
                                              v["dtype"].get<std::string>());
    if (!v["shape"].is_array()) bad("shape is not an array");
    uint64_t numel = 1;
    for (auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) bad("shape has a non-integer or negative dimension");
      uint64_t dim = d.get<uint64_t>();
      if (dim > (uint64_t(1) << 40) || (dim && numel > (uint64_t(1) << 48) / dim)) bad("shape is too large");
      numel *= dim;
      t.shape.push_back(int64_t(dim));
    }
    auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad("data_offsets must be two non-negative integers");
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e) bad("data_offsets are reversed");
    if (e > data_size)
      bad("truncated: data ends at byte " + std::to_string(e) + " but the file holds " + std::to_string(data_size));
    if (e - b != numel * dtype_size(t.dtype))
      bad("byte size " + std::to_string(e - b) + " does not match shape " + t.shape_str() + " of " +
          dtype_name(t.dtype));
    t.data = data + b;
    t.nbytes = size_t(e - b);
    tensors_.emplace(name, std::move(t));
  }
}

TensorStore TensorStore::open_dir(const std::string& dir) {
  TensorStore st;
  st.dir_ = dir;
  fs::path single = fs::path(dir) / "model.safetensors";
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    json j;
    std::ifstream in(index);
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(ErrorKind::Format, index.string() + ": malformed JSON: " + e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(ErrorKind::Format, index.string() + ": no weight_map object");
    std::map<std::string, SafetensorsFile*> by_file;
    std::set<std::string> shard_names;
    for (auto& [name, f] : j["weight_map"].items()) {
      if (!f.is_string()) throw Error(ErrorKind::Format, index.string() + ": weight_map['" + name + "'] is not a string");
      std::string fn = f.get<std::string>();
      if (fn.find('/') != std::string::npos || fn.find("..") != std::string::npos)
        throw Error(ErrorKind::Format, index.string() + ": shard name '" + fn + "' must be a plain file name");
      shard_names.insert(fn);
    }
    for (auto& fn : shard_names) {
      st.files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir) / fn).string()));
      by_file[fn] = st.files_.back().get();
    }
    for (auto& [name, f] : j["weight_map"].items()) {
      auto* file = by_file[f.get<std::string>()];
      auto it = file->tensors().find(name);
      if (it == file->tensors().end())
        throw Error(ErrorKind::MissingTensor, file->path() + ": tensor '" + name +
                                                  "' is listed in model.safetensors.index.json but absent from the shard");
      st.index_[name] = &it->second;
    }
  } else if (fs::exists(single)) {
    st.files_.push_back(std::make_unique<SafetensorsFile>(single.string()));
    for (auto& [name, t] : st.files_.back()->tensors()) st.index_[name] = &t;
  } else {
    throw Error(ErrorKind::Io, dir + ": no model.safetensors or model.safetensors.index.json");
  }
  return st;
}

const TensorView* TensorStore::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const TensorView& TensorStore::get(const std::string& name) const {
  if (auto* t = find(name)) return *t;
  throw Error(ErrorKind::MissingTensor, dir_ + ": missing tensor '" + name + "'");
}

std::vector<std::string> TensorStore::names() const {
  std::vector<std::string> out;
  for (auto& [n, _] : index_) out.push_back(n);
  return out;
}

std::vector<float> tensor_to_f32(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const size_t n = out.size();
  switch (t.dtype) {
    case DType::F32:
      std::memcpy(out.data(), t.data, n * 4);
      break;
    case DType::BF16:
      for (size_t i = 0; i < n; i++) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    case DType::F16:
      for (size_t i = 0; i < n; i++) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    default:
      throw Error(ErrorKind::Unsupported, t.file + ": tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) +
                                              " where a float tensor (F32, BF16, F16) is needed");
  }
  return out;
}

std::vector<int64_t> tensor_to_i64(const TensorView& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::I64) {
    std::memcpy(out.data(), t.data, out.size() * 8);
  } else if (t.dtype == DType::I32) {
    for (size_t i = 0; i < out.size(); i++) {
      int32_t v;
      std::memcpy(&v, t.data + 4 * i, 4);
      out[i] = v;
    }
  } else {
    throw Error(ErrorKind::Unsupported, t.file + ": tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) +
                                            " where an integer tensor is needed");
  }
  return out;
}

}  // namespace ds4
