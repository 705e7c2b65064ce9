#include "io/dtype.h"

namespace ds4 {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::I8: case DType::U8: case DType::F8_E4M3: case DType::Bool: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::F8_E4M3: return "F8_E4M3";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
  static const struct { const char* n; DType t; } table[] = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"I64", DType::I64},
      {"I32", DType::I32}, {"I8", DType::I8},   {"U8", DType::U8},     {"F8_E4M3", DType::F8_E4M3},
      {"BOOL", DType::Bool}};
  for (auto& e : table)
    if (s == e.n) { *out = e.t; return true; }
  return false;
}

}  // namespace ds4
