// Python string formatting: `"%s" % args` (and the `format` filter, which uses it) and str.format with
// the format-spec mini-language, for the cases templates use (s r d i f F e E g G x X o c %, fill, align,
// sign, width, precision, grouping).
#pragma once
#include <string>

#include "text/jinja/value.h"

namespace ds4::text::jinja {

// fmt % args: `args` is a tuple of values, a dict for %(name)s, or a single value.
std::string percent_format(const std::string& fmt, const Value& args);

// fmt.format(*args, **kwargs)
std::string brace_format(const std::string& fmt, const CallArgs& args);

// format(value, spec), the spec after ':' in a replacement field.
std::string format_value(const Value& v, const std::string& spec);

}  // namespace ds4::text::jinja
