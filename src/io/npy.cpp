#include "io/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "core/error.h"

namespace ds4 {

void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  std::string dims;
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); i++) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    n *= shape[i];
  }
  if (shape.size() == 1) dims += ",";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Header padded with spaces so that data starts at a multiple of 64 bytes, ending in '\n'.
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict += std::string(pad, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorKind::Io, path + ": cannot open for writing");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t hlen = uint16_t(dict.size());
  out.write(reinterpret_cast<const char*>(&hlen), 2);
  out.write(dict.data(), std::streamsize(dict.size()));
  out.write(reinterpret_cast<const char*>(data), std::streamsize(n * 4));
  if (!out) throw Error(ErrorKind::Io, path + ": write failed");
}

NpyArray read_npy_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, path + ": cannot open");
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw Error(ErrorKind::Format, path + ": not a .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    uint16_t h;
    in.read(reinterpret_cast<char*>(&h), 2);
    hlen = h;
  } else {
    in.read(reinterpret_cast<char*>(&hlen), 4);
  }
  std::string header(hlen, '\0');
  in.read(header.data(), hlen);
  if (!in) throw Error(ErrorKind::Format, path + ": truncated header");
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    throw Error(ErrorKind::Format, path + ": only little-endian float32 C-order arrays are supported");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'shape': \\(([0-9, ]*)\\)")))
    throw Error(ErrorKind::Format, path + ": no shape in header");
  NpyArray a;
  std::string dims = m[1];
  int64_t n = 1;
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    a.shape.push_back(std::stoll(it->str()));
    n *= a.shape.back();
  }
  a.data.resize(static_cast<size_t>(n));
  in.read(reinterpret_cast<char*>(a.data.data()), std::streamsize(n * 4));
  if (!in) throw Error(ErrorKind::Format, path + ": truncated data");
  return a;
}

}  // namespace ds4
