#include "text/jinja/args.h"

namespace ds4::text::jinja {

BoundArgs::BoundArgs(const std::string& function, CallArgs& args, const std::vector<std::string>& names,
                     size_t required)
    : function_(function), names_(names), values_(names.size()) {
  if (args.pos.size() > names.size())
    fail(function + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
         std::to_string(args.pos.size()) + " given)");
  for (size_t i = 0; i < args.pos.size(); ++i) values_[i] = args.pos[i];
  for (auto& [key, value] : args.kw) {
    size_t i = 0;
    while (i < names.size() && names[i] != key) ++i;
    if (i == names.size()) fail(function + "() got an unexpected keyword argument '" + key + "'");
    if (values_[i]) fail(function + "() got multiple values for argument '" + key + "'");
    values_[i] = value;
  }
  for (size_t i = 0; i < required; ++i)
    if (!values_[i]) fail(function + "() missing required argument '" + names[i] + "'");
}

const Value& BoundArgs::get(size_t i) const {
  static const Value undefined;
  return values_[i] ? *values_[i] : undefined;
}

int64_t BoundArgs::get_int(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const Value& v = *values_[i];
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_undefined()) fail_undefined(v);
  fail(not_an_integer(v));
}

std::optional<std::string> BoundArgs::get_opt_string(size_t i) const {
  if (!has(i) || values_[i]->is_none()) return std::nullopt;
  const Value& v = *values_[i];
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) fail_undefined(v);
  fail(function_ + "() argument '" + names_[i] + "' must be str or None, not " + type_name(v));
}

bool BoundArgs::get_bool(size_t i, bool fallback) const { return has(i) ? truthy(*values_[i]) : fallback; }

void expect_no_args(const std::string& function, const CallArgs& args) {
  if (!args.pos.empty() || !args.kw.empty()) fail(function + "() takes no arguments");
}

}  // namespace ds4::text::jinja
