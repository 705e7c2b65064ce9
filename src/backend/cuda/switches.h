// Measurement switches of the CUDA backend: environment variables that turn a default path off, read once by each
// caller (a function-local static), so that an A/B on the GPU needs no second build.
#pragma once
#include <cstdlib>
#include <string>

namespace ds4::cuda::detail {

// On unless the environment sets `name` to "0".
inline bool switch_on(const char* name) {
  const char* v = std::getenv(name);
  return !(v && std::string(v) == "0");
}

// Off unless the environment sets `name` to "1": a variant kept for an A/B before it replaces the default.
inline bool switch_set(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

// An integer setting: `fallback` unless the environment sets `name` to a number.
inline int switch_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end ? fallback : int(n);
}

}  // namespace ds4::cuda::detail
