// What a template can call without defining it: Jinja2's filters and tests (with transformers' `tojson`),
// the methods of str, dict and list that the immutable sandbox allows, and the globals (range, dict,
// namespace, cycler, joiner, raise_exception, strftime_now).
#pragma once
#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace ds4::text::jinja {

class Interpreter;

using FilterFn = Value (*)(Interpreter& in, const Value& value, CallArgs& args);
using TestFn = bool (*)(Interpreter& in, const Value& value, CallArgs& args);

// nullptr when no filter / test has this name.
FilterFn find_filter(const std::string& name);
TestFn find_test(const std::string& name);

// obj.name for str, dict and list receivers: a bound method, an undefined that refuses a mutating method
// ("access to attribute 'append' of 'list' object is unsafe."), or nullopt when Python has no such attribute.
std::optional<Value> builtin_method(const Value& obj, const std::string& name);

// The global names a template sees unless the context overrides them.
DictData make_globals();

}  // namespace ds4::text::jinja
