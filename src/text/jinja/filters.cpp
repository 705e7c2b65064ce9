// Jinja2's built-in filters (jinja2/filters.py) with transformers' `tojson` in place of Jinja2's. Filters
// that return generators in Jinja2 (map, select, items, unique, batch, ...) return a Generator here, so
// `|length` on them fails and `{% if xs|select(...) %}` is always true, exactly as in Python.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "text/jinja/args.h"
#include "text/jinja/builtins.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/json_dump.h"
#include "text/jinja/ops.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

// ---- helpers ----

std::string soft_str(const Value& v) { return py_str(v); }

const std::string& need_string(const Value& v, const char* filter) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("the '") + filter + "' filter needs a string, not " + type_name(v));
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(pystr::lower(v.as_string())) : v; }

// Jinja2's attribute path "a.b.0": each part looked up with getitem, digit parts as integers.
std::vector<Value> attribute_parts(const Value& attribute) {
  std::vector<Value> parts;
  if (attribute.is_none() || attribute.is_undefined()) return parts;
  if (!attribute.is_string()) return {attribute};
  for (const auto& p : pystr::split(attribute.as_string(), std::string("."), -1)) {
    bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    parts.push_back(digits ? Value(static_cast<int64_t>(std::stoll(p))) : Value(p));
  }
  return parts;
}

Value lookup_parts(Value item, const std::vector<Value>& parts, const Value* dflt = nullptr) {
  for (const auto& part : parts) {
    item = get_item(item, part);
    if (dflt && item.is_undefined()) item = *dflt;
  }
  return item;
}

// Sorting key per item: one value, or a list of values for "attr1,attr2".
std::vector<Value> multi_parts_key(const Value& item, const std::vector<std::vector<Value>>& parts, bool icase) {
  std::vector<Value> key;
  for (const auto& p : parts) {
    Value v = lookup_parts(item, p);
    key.push_back(icase ? ignore_case(v) : v);
  }
  return key;
}

int compare_keys(const std::vector<Value>& a, const std::vector<Value>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (py_equal(a[i], b[i])) continue;
    return py_compare(a[i], b[i]);
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// Python's sorted(values, key=..., reverse=...): stable in both directions.
std::vector<Value> sorted_by(std::vector<Value> values, const std::vector<std::vector<Value>>& keys, bool reverse) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int c = compare_keys(keys[a], keys[b]);
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> out;
  out.reserve(values.size());
  for (size_t i : order) out.push_back(std::move(values[i]));
  return out;
}

void check_hashable(const Value& v) {
  if (v.is_dict() || (v.is_list() && v.as_list().kind != SeqKind::Tuple))
    fail("unhashable type: '" + type_name(v) + "'");
  if (v.is_list())
    for (const auto& x : v.as_list().items) check_hashable(x);
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

// ---- filters ----

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
  return Value::undefined("'" + object_type_repr(v) + "' has no attribute '" + name + "'");
}

Value f_batch(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"}, 1);
  int64_t n = a.get_int(0, 1);
  std::vector<Value> out, cur;
  for (auto& item : iterate(v)) {
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
    cur.push_back(item);
  }
  if (!cur.empty()) {
    if (a.has(1) && !a.get(1).is_none())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(a.get(1));
    out.push_back(Value::list(std::move(cur)));
  }
  return make_generator(std::move(out));
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

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) fail("'" + type_name(v) + "' object has no attribute 'items'");
  bool cs = a.get_bool(0, false);
  std::string by = a.has(1) ? py_str(a.get(1)) : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  size_t pos = by == "key" ? 0 : 1;
  std::vector<Value> items;
  std::vector<std::vector<Value>> keys;
  for (const auto& [k, val] : v.as_dict().entries) {
    items.push_back(Value::tuple({k, val}));
    const Value& key = pos == 0 ? k : val;
    keys.push_back({cs ? key : ignore_case(key)});
  }
  return Value::list(sorted_by(std::move(items), keys, a.get_bool(2, false)));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("escape", args);
  return Value(html_escape(soft_str(v)));
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("first", args);
  if (auto* g = v.object_as<Generator>()) {
    if (auto item = g->next()) return *item;
    return Value::undefined("No first item, sequence was empty.");
  }
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
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

Value f_groupby(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("groupby", args, {"attribute", "default", "case_sensitive"}, 1);
  auto parts = attribute_parts(a.get(0));
  bool cs = a.get_bool(2, false);
  const Value* dflt = a.has(1) && !a.get(1).is_none() ? &a.get(1) : nullptr;
  std::vector<Value> items = iterate(v);
  std::vector<std::vector<Value>> keys;
  for (const auto& item : items) {
    Value k = lookup_parts(item, parts, dflt);
    keys.push_back({cs ? k : ignore_case(k)});
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return compare_keys(keys[x], keys[y]) < 0; });
  std::vector<Value> out;
  size_t i = 0;
  while (i < order.size()) {
    size_t j = i;
    std::vector<Value> group;
    while (j < order.size() && py_equal(keys[order[j]][0], keys[order[i]][0])) group.push_back(items[order[j++]]);
    Value grouper = cs ? keys[order[i]][0] : lookup_parts(group.front(), parts, dflt);
    out.push_back(Value::tuple({grouper, Value::list(std::move(group))}));
    i = j;
  }
  return Value::list(std::move(out));
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
  int64_t base = a.get_int(1, 10);
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d)) fail(std::isnan(d) ? "cannot convert float NaN to integer" : "cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) fail("integer does not fit in 64 bits (only 64-bit integers are supported)");
    return Value(static_cast<int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.as_string(), base)) return Value(*i);
    if (auto d = parse_float(v.as_string())) {
      if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value(static_cast<int64_t>(std::trunc(*d)));
    }
  }
  return dflt;
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("items", args);
  if (v.is_undefined()) return make_generator({});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::tuple({k, val}));
  return make_generator(std::move(out));
}

Value f_join(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  std::string sep = a.has(0) ? py_str(a.get(0)) : "";
  auto parts = attribute_parts(a.get(1));
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += py_str(a.has(1) && !a.get(1).is_none() ? lookup_parts(item, parts) : item);
    check_size(out.size());
  }
  return Value(std::move(out));
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("last", args);
  if (v.object_as<Generator>()) fail("'generator' object is not reversible");
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("length", args);
  return Value(py_len(v));
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("list", args);
  return Value::list(iterate(v));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("lower", args);
  return Value(pystr::lower(soft_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("upper", args);
  return Value(pystr::upper(soft_str(v)));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  if (!truthy(v)) return make_generator({});
  std::vector<Value> out;
  bool by_attr = args.pos.empty() && std::any_of(args.kw.begin(), args.kw.end(), [](auto& kv) { return kv.first == "attribute"; });
  if (by_attr) {
    Value attribute, dflt = Value::none();
    for (auto& [k, val] : args.kw) {
      if (k == "attribute") attribute = val;
      else if (k == "default") dflt = val;
      else fail("Unexpected keyword argument '" + k + "'");
    }
    auto parts = attribute_parts(attribute);
    for (const auto& item : iterate(v)) out.push_back(lookup_parts(item, parts, dflt.is_none() ? nullptr : &dflt));
    return make_generator(std::move(out));
  }
  if (args.pos.empty()) fail("map requires a filter argument");
  std::string name = py_str(args.pos[0]);
  CallArgs rest{std::vector<Value>(args.pos.begin() + 1, args.pos.end()), args.kw};
  for (const auto& item : iterate(v)) {
    CallArgs each = rest;
    out.push_back(in.call_filter(name, item, each));
  }
  return make_generator(std::move(out));
}

Value min_or_max(const Value& v, CallArgs& args, const char* name, bool want_max) {
  BoundArgs a(name, args, {"case_sensitive", "attribute"});
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool cs = a.get_bool(0, false);
  auto parts = attribute_parts(a.get(1));
  auto key = [&](const Value& item) {
    Value k = lookup_parts(item, parts);
    return cs ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    int c = py_compare(k, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value f_max(Interpreter&, const Value& v, CallArgs& args) { return min_or_max(v, args, "max", true); }
Value f_min(Interpreter&, const Value& v, CallArgs& args) { return min_or_max(v, args, "min", false); }

Value select_or_reject(Interpreter& in, const Value& v, CallArgs& args, bool select, bool by_attr) {
  if (!truthy(v)) return make_generator({});
  size_t off = 0;
  std::vector<Value> attr_parts;
  if (by_attr) {
    if (args.pos.empty()) fail("Missing parameter for attribute name");
    attr_parts = attribute_parts(args.pos[0]);
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (args.pos.size() > off) {
    test = py_str(args.pos[off]);
    rest.pos.assign(args.pos.begin() + static_cast<long>(off) + 1, args.pos.end());
  }
  rest.kw = args.kw;
  std::vector<Value> out;
  for (const auto& item : iterate(v)) {
    Value x = by_attr ? lookup_parts(item, attr_parts) : item;
    bool ok;
    if (test) {
      CallArgs each = rest;
      ok = in.call_test(*test, x, each);
    } else {
      ok = truthy(x);
    }
    if (ok == select) out.push_back(item);
  }
  return make_generator(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, false); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, true); }

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  int64_t count = a.has(2) && !a.get(2).is_none() ? a.get_int(2, -1) : -1;
  std::string out = pystr::replace(soft_str(v), py_str(a.get(0)), py_str(a.get(1)), count);
  check_size(out.size());
  return Value(std::move(out));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("reverse", args);
  if (v.is_string()) return get_slice(v, Value(), Value(), Value(int64_t{-1}));
  if (v.is_undefined()) return make_generator({});
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  // reversed() of a list is an iterator, not a list; a generator's items come back as a list.
  if (v.object_as<Generator>()) return Value::list(std::move(items));
  return make_generator(std::move(items));
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

Value f_slice(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("slice", args, {"slices", "fill_with"}, 1);
  auto seq = iterate(v);
  int64_t slices = a.get_int(0, 1);
  if (slices <= 0) fail("integer division or modulo by zero");
  auto length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices, extra = length % slices, offset = 0;
  std::vector<Value> out;
  for (int64_t n = 0; n < slices; ++n) {
    int64_t start = offset + n * per;
    if (n < extra) ++offset;
    int64_t end = offset + (n + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (a.has(1) && !a.get(1).is_none() && n >= extra) tmp.push_back(a.get(1));
    out.push_back(Value::list(std::move(tmp)));
  }
  return make_generator(std::move(out));
}

Value f_sort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool icase = !a.get_bool(1, false);
  std::vector<std::vector<Value>> parts;
  if (a.has(2) && a.get(2).is_string()) {
    for (const auto& p : pystr::split(a.get(2).as_string(), std::string(","), -1)) parts.push_back(attribute_parts(Value(p)));
  } else {
    parts.push_back(attribute_parts(a.get(2)));
  }
  auto items = iterate(v);
  std::vector<std::vector<Value>> keys;
  for (const auto& item : items) keys.push_back(multi_parts_key(item, parts, icase));
  return Value::list(sorted_by(std::move(items), keys, a.get_bool(0, false)));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("string", args);
  return Value(soft_str(v));
}

Value f_sum(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  auto parts = attribute_parts(a.get(0));
  Value total = a.get_or(1, Value(int64_t{0}));
  for (const auto& item : iterate(v)) {
    Value x = a.has(0) && !a.get(0).is_none() ? lookup_parts(item, parts) : item;
    if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
    total = binary_op(BinaryOp::Add, total, x);
  }
  return total;
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
  std::string s = soft_str(v);
  int64_t length = a.get_int(0, 255), leeway = a.has(3) && !a.get(3).is_none() ? a.get_int(3, 5) : 5;
  std::string end = a.has(2) ? py_str(a.get(2)) : "...";
  auto end_len = static_cast<int64_t>(pystr::length(end));
  if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (static_cast<int64_t>(pystr::length(s)) <= length + leeway) return Value(s);
  std::string head = s.substr(0, pystr::byte_offset(s, static_cast<size_t>(length - end_len)));
  if (a.get_bool(1, false)) return Value(head + end);
  return Value(pystr::rsplit(head, std::string(" "), 1)[0] + end);
}

Value f_unique(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  bool cs = a.get_bool(0, false);
  auto parts = attribute_parts(a.get(1));
  std::vector<Value> out, seen;
  for (const auto& item : iterate(v)) {
    Value k = lookup_parts(item, parts);
    if (!cs) k = ignore_case(k);
    check_hashable(k);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, k); })) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return make_generator(std::move(out));
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

const std::map<std::string, FilterFn>& registry() {
  static const std::map<std::string, FilterFn> r = {
      {"abs", f_abs},           {"attr", f_attr},
      {"batch", f_batch},       {"capitalize", f_capitalize},
      {"center", f_center},     {"count", f_length},
      {"d", f_default},         {"default", f_default},
      {"dictsort", f_dictsort}, {"e", f_escape},
      {"escape", f_escape},     {"first", f_first},
      {"float", f_float},       {"forceescape", f_escape},
      {"format", f_format},     {"groupby", f_groupby},
      {"indent", f_indent},     {"int", f_int},
      {"items", f_items},       {"join", f_join},
      {"last", f_last},         {"length", f_length},
      {"list", f_list},         {"lower", f_lower},
      {"map", f_map},           {"max", f_max},
      {"min", f_min},           {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"replace", f_replace},
      {"reverse", f_reverse},   {"round", f_round},
      {"safe", f_safe},         {"select", f_select},
      {"selectattr", f_selectattr}, {"slice", f_slice},
      {"sort", f_sort},         {"string", f_string},
      {"sum", f_sum},           {"title", f_title},
      {"tojson", f_tojson},     {"trim", f_trim},
      {"truncate", f_truncate}, {"unique", f_unique},
      {"upper", f_upper},       {"wordcount", f_wordcount},
  };
  return r;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace ds4::text::jinja
