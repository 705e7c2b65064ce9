// Binding call arguments to a Python-style signature, for the built-in filters, tests, methods and
// globals, with Python's messages for missing, duplicate and unexpected arguments.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "text/jinja/value.h"

namespace ds4::text::jinja {

class BoundArgs {
 public:
  // `names` are the parameters in order; the first `required` of them must be given.
  BoundArgs(const std::string& function, CallArgs& args, const std::vector<std::string>& names,
            size_t required = 0);

  bool has(size_t i) const { return values_[i].has_value(); }
  const Value& get(size_t i) const;  // an absent optional argument reads as undefined
  Value get_or(size_t i, Value fallback) const { return has(i) ? *values_[i] : std::move(fallback); }

  // Argument checks with Python's TypeError wording.
  int64_t get_int(size_t i, int64_t fallback) const;
  std::optional<std::string> get_opt_string(size_t i) const;  // None and absent read as nullopt
  bool get_bool(size_t i, bool fallback) const;

 private:
  std::string function_;
  std::vector<std::string> names_;
  std::vector<std::optional<Value>> values_;
};

// Arguments for functions that take no parameters at all.
void expect_no_args(const std::string& function, const CallArgs& args);

}  // namespace ds4::text::jinja
