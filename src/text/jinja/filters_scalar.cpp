// Filters on single values: strings, numbers, `default`, `attr`, and transformers' `tojson`, as
// jinja2/filters.py defines them.
#include <cmath>
#include <cstdlib>

#include "text/jinja/args.h"
#include "text/jinja/builtins.h"
#include "text/jinja/filter_tables.h"
#include "text/jinja/ops.h"
#include "text/jinja/pystr.h"
#include "text/jinja/json_dump.h"

namespace ds4::text::jinja {

namespace {

std::string soft_str(const Value& v) { return py_str(v); }

const std::string& need_string(const Value& v, const char* filter) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("the '") + filter + "' filter needs a string, not " + type_name(v));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Python int(str, base): surrounding whitespace, sign, underscores between digits, base prefixes.

// Python int(str, base): surrounding whitespace, sign, underscores between digits, base prefixes.
std::optional<int64_t> parse_int(const std::string& text, int64_t base) {
  std::string s = pystr::strip(text, std::nullopt, true, true);
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  std::string body = s.substr(i);
  auto lower_prefix = [&](const char* p) {
    return body.size() > 2 && body[0] == '0' && std::tolower(static_cast<unsigned char>(body[1])) == p[1];
  };
  if (base == 0) {
    if (lower_prefix("0x")) base = 16;
    else if (lower_prefix("0o")) base = 8;
    else if (lower_prefix("0b")) base = 2;
    else base = 10;
    if (base != 10) body = body.substr(2);
    else if (body.size() > 1 && body[0] == '0' && body.find_first_not_of("0_") != std::string::npos) return std::nullopt;
  } else if ((base == 16 && lower_prefix("0x")) || (base == 8 && lower_prefix("0o")) || (base == 2 && lower_prefix("0b"))) {
    body = body.substr(2);
    if (!body.empty() && body[0] == '_') body = body.substr(1);
  }
  if (base < 2 || base > 36 || body.empty() || body.front() == '_' || body.back() == '_') return std::nullopt;
  std::string digits;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] == '_') {
      if (body[k + 1] == '_') return std::nullopt;
      continue;
    }
    digits += body[k];
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
  if (*end != '\0' || digits.empty()) return std::nullopt;
  if (errno == ERANGE) fail("integer does not fit in 64 bits (only 64-bit integers are supported)");
  return neg ? -v : v;
}

// Python float(str).

// Python float(str).
std::optional<double> parse_float(const std::string& text) {
  std::string s = pystr::strip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '_') {
      if (k == 0 || k + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[k - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[k + 1])))
        return std::nullopt;
      continue;
    }
    clean += s[k];
  }
  std::string l = pystr::lower(clean);
  std::string body = (!l.empty() && (l[0] == '+' || l[0] == '-')) ? l.substr(1) : l;
  if (body == "inf" || body == "infinity" || body == "nan") return std::strtod(l.c_str(), nullptr);
  if (clean.empty() || clean.find_first_not_of("0123456789+-.eE") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(clean.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return d;
}

// Python round(x, n) for floats: correctly rounded, ties to even on the exact binary value.

// Python round(x, n) for floats: correctly rounded, ties to even on the exact binary value.
double round_float(double x, int64_t n) {
  if (!std::isfinite(x)) return x;
  if (n >= 0) {
    if (n > 300) return x;
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(n), x);
    return std::strtod(buf, nullptr);
  }
  double p = std::pow(10.0, static_cast<double>(-n));
  return std::nearbyint(x / p) * p;
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("abs", args);
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) fail("integer result does not fit in 64 bits");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) fail_undefined(v);
  fail("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("attr", args, {"name"}, 1);
  const std::string name = py_str(a.get(0));
  if (v.is_object()) {
    if (auto attr = v.as_object().get_attr(name)) return *attr;
  } else if (!v.is_undefined()) {
    if (auto m = builtin_method(v, name)) return *m;
  }
  if (v.is_undefined()) fail_undefined(v);
  return Value::undefined(str_cat({"'", object_type_repr(v), "' has no attribute '", name, "'"}));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("capitalize", args);
  return Value(pystr::capitalize(soft_str(v)));
}

Value f_center(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("center", args, {"width"});
  return Value(pystr::pad(soft_str(v), a.get_int(0, 80), ' ', 'c'));
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (a.get_bool(1, false) && !truthy(v))) return a.get_or(0, Value(""));
  return v;
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("escape", args);
  return Value(html_escape(soft_str(v)));
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  Value dflt = a.get_or(0, Value(0.0));
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    if (auto d = parse_float(v.as_string())) return Value(*d);
  }
  return dflt;
}

Value f_format(Interpreter&, const Value& v, CallArgs& args) {
  if (!args.pos.empty() && !args.kw.empty()) fail("can't handle positional and keyword arguments at the same time");
  Value fargs;
  if (!args.kw.empty()) {
    DictData d;
    for (auto& [k, val] : args.kw) d.set(Value(k), val);
    fargs = Value::dict(std::move(d));
  } else {
    fargs = Value::tuple(args.pos);
  }
  return binary_op(BinaryOp::Mod, Value(soft_str(v)), fargs);
}

Value f_indent(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  std::string indention;
  if (a.has(0) && a.get(0).is_string())
    indention = a.get(0).as_string();
  else
    indention = std::string(static_cast<size_t>(std::max<int64_t>(0, a.get_int(0, 4))), ' ');
  std::string s = need_string(v, "indent") + "\n";
  auto lines = pystr::splitlines(s, false);
  std::string rv;
  if (a.get_bool(2, false)) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    if (lines.size() > 1) {
      rv += "\n";
      for (size_t i = 1; i < lines.size(); ++i) {
        if (i > 1) rv += "\n";
        if (!lines[i].empty()) rv += indention;
        rv += lines[i];
      }
    }
  }
  if (a.get_bool(1, false)) rv = indention + rv;
  return Value(std::move(rv));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  Value dflt = a.get_or(0, Value(int64_t{0}));
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d)) fail(std::isnan(d) ? "cannot convert float NaN to integer" : "cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) fail("integer does not fit in 64 bits (only 64-bit integers are supported)");
    return Value(static_cast<int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    // int(value, base) with a base that is not an int is a TypeError, which the filter turns into the default
    // after trying float(value).
    bool int_base = !a.has(1) || a.get(1).is_int() || a.get(1).is_bool();
    if (int_base)
      if (auto i = parse_int(v.as_string(), a.get_int(1, 10))) return Value(*i);
    if (auto d = parse_float(v.as_string())) {
      if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value(static_cast<int64_t>(std::trunc(*d)));
    }
  }
  return dflt;
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("lower", args);
  return Value(pystr::lower(soft_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("upper", args);
  return Value(pystr::upper(soft_str(v)));
}

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  int64_t count = a.has(2) && !a.get(2).is_none() ? a.get_int(2, -1) : -1;
  std::string out = pystr::replace(soft_str(v), py_str(a.get(0)), py_str(a.get(1)), count);
  check_size(out.size());
  return Value(std::move(out));
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  int64_t precision = a.get_int(0, 0);
  std::string method = a.has(1) ? py_str(a.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) {
      if (precision >= 0) return Value(v.as_int());
      return Value(static_cast<int64_t>(round_float(static_cast<double>(v.as_int()), precision)));
    }
    return Value(round_float(v.as_float(), precision));
  }
  double p = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * p;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / p);
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("safe", args);
  return v.is_string() ? v : Value(soft_str(v));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("string", args);
  return Value(soft_str(v));
}

Value f_title(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("title", args);
  // Jinja2's own title(): words start after runs of - whitespace ( { [ <.
  auto cps = pystr::decode(soft_str(v));
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || pystr::is_space(c); };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    bool sep = is_sep(cps[i]);
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    std::string item = pystr::encode(std::u32string_view(cps).substr(i, j - i));
    if (sep) {
      out += item;
    } else {
      std::string first = pystr::encode(std::u32string_view(cps).substr(i, 1));
      out += pystr::upper(first) + pystr::lower(pystr::encode(std::u32string_view(cps).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return Value(std::move(out));
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.get_bool(0, false);
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& ind = a.get(1);
    if (ind.is_string())
      o.indent = ind.as_string();
    else
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, a.get_int(1, 0))), ' ');
  }
  if (a.has(2) && !a.get(2).is_none()) {
    auto seps = iterate(a.get(2));
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
      fail("tojson separators must be a pair of strings");
    o.item_separator = seps[0].as_string();
    o.key_separator = seps[1].as_string();
  }
  o.sort_keys = a.get_bool(3, false);
  return Value(json_dumps(v, o));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("trim", args, {"chars"});
  return Value(pystr::strip(soft_str(v), a.get_opt_string(0), true, true));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("truncate", args, {"length", "killwords", "end", "leeway"});
  int64_t length = a.get_int(0, 255), leeway = a.has(3) && !a.get(3).is_none() ? a.get_int(3, 5) : 5;
  if (!v.is_string()) {
    // Python measures any sized value and returns it unchanged when it is short enough.
    if (py_len(v) <= length + leeway) return v;
    fail("'" + type_name(v) + "' object has no attribute 'rsplit'");
  }
  const std::string& s = v.as_string();
  std::string end = a.has(2) ? py_str(a.get(2)) : "...";
  auto end_len = static_cast<int64_t>(pystr::length(end));
  if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (static_cast<int64_t>(pystr::length(s)) <= length + leeway) return v;
  std::string head = s.substr(0, pystr::byte_offset(s, static_cast<size_t>(length - end_len)));
  if (a.get_bool(1, false)) return Value(head + end);
  return Value(pystr::rsplit(head, std::string(" "), 1)[0] + end);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("wordcount", args);
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : pystr::decode(soft_str(v))) {
    bool w = pystr::is_word(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

}  // namespace

void add_scalar_filters(FilterTable& t) {
  t["abs"] = f_abs;
  t["attr"] = f_attr;
  t["capitalize"] = f_capitalize;
  t["center"] = f_center;
  t["d"] = f_default;
  t["default"] = f_default;
  t["e"] = f_escape;
  t["escape"] = f_escape;
  t["float"] = f_float;
  t["forceescape"] = f_escape;
  t["format"] = f_format;
  t["indent"] = f_indent;
  t["int"] = f_int;
  t["lower"] = f_lower;
  t["replace"] = f_replace;
  t["round"] = f_round;
  t["safe"] = f_safe;
  t["string"] = f_string;
  t["title"] = f_title;
  t["tojson"] = f_tojson;
  t["trim"] = f_trim;
  t["truncate"] = f_truncate;
  t["upper"] = f_upper;
  t["wordcount"] = f_wordcount;
}

}  // namespace ds4::text::jinja
