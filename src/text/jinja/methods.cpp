// Methods of str, dict, list and tuple as Python defines them, bound to their receiver when a template
// looks them up (`message.content.strip()`, `tool.get('name')`).
#include <algorithm>
#include <map>

#include "text/jinja/args.h"
#include "text/jinja/builtins.h"
#include "text/jinja/ops.h"
#include "text/jinja/pyformat.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

using Method = Value (*)(const Value& self, CallArgs& args);

const std::string& need_str(const Value& v, const std::string& what) {
  if (v.is_string()) return v.as_string();
  fail(what + " must be str, not " + type_name(v));
}

Value str_list(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.emplace_back(p);
  return Value::list(std::move(out));
}

// startswith / endswith take a str or a tuple of str, and optional start/end code point bounds.
Value affix_test(const Value& self, CallArgs& args, const char* name, bool prefix) {
  BoundArgs a(name, args, {"prefix", "start", "end"}, 1);
  std::string s = self.as_string();
  if (a.has(1) || a.has(2)) {
    Value sliced = get_slice(self, a.get(1), a.get(2), Value::none());
    s = sliced.as_string();
  }
  const Value& p = a.get(0);
  auto test = [&](const Value& x) {
    if (!x.is_string())
      fail(std::string(name) + " first arg must be str or a tuple of str, not " + type_name(x));
    return prefix ? pystr::starts_with(s, x.as_string()) : pystr::ends_with(s, x.as_string());
  };
  if (p.is_list() && p.as_list().kind == SeqKind::Tuple) {
    for (const auto& x : p.as_list().items)
      if (test(x)) return Value(true);
    return Value(false);
  }
  return Value(test(p));
}

Value strip_method(const Value& self, CallArgs& args, const char* name, bool left, bool right) {
  BoundArgs a(name, args, {"chars"});
  return Value(pystr::strip(self.as_string(), a.get_opt_string(0), left, right));
}

Value find_method(const Value& self, CallArgs& args, const char* name, bool reverse, bool raise) {
  BoundArgs a(name, args, {"sub", "start", "end"}, 1);
  const std::string& sub = need_str(a.get(0), std::string(name) + "() argument");
  std::optional<int64_t> end;
  if (a.has(2) && !a.get(2).is_none()) end = a.get_int(2, 0);
  int64_t start = a.has(1) && !a.get(1).is_none() ? a.get_int(1, 0) : 0;
  int64_t r = pystr::find(self.as_string(), sub, start, end, reverse);
  if (r < 0 && raise) fail("substring not found");
  return Value(r);
}

Value justify(const Value& self, CallArgs& args, const char* name, char align) {
  BoundArgs a(name, args, {"width", "fillchar"}, 1);
  char32_t fill = ' ';
  if (a.has(1)) {
    const std::string& f = need_str(a.get(1), "The fill character");
    if (pystr::length(f) != 1) fail("The fill character must be exactly one character long");
    fill = pystr::decode(f)[0];
  }
  return Value(pystr::pad(self.as_string(), a.get_int(0, 0), fill, align));
}

Value partition(const Value& self, CallArgs& args, const char* name, bool reverse) {
  BoundArgs a(name, args, {"sep"}, 1);
  const std::string& s = self.as_string();
  const std::string& sep = need_str(a.get(0), "sep");
  if (sep.empty()) fail("empty separator");
  size_t at = reverse ? s.rfind(sep) : s.find(sep);
  if (at == std::string::npos)
    return reverse ? Value::tuple({Value(""), Value(""), Value(s)}) : Value::tuple({Value(s), Value(""), Value("")});
  return Value::tuple({Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))});
}

Value no_arg(const char* name, CallArgs& args, std::string (*f)(std::string_view), const Value& self) {
  expect_no_args(name, args);
  return Value(f(self.as_string()));
}

Value predicate(const char* name, CallArgs& args, bool (*pred)(char32_t), const Value& self) {
  expect_no_args(name, args);
  return Value(pystr::pred_all(self.as_string(), pred));
}

bool is_ascii_cp(char32_t c) { return c < 0x80; }

const std::map<std::string, Method>& str_methods() {
  static const std::map<std::string, Method> m = {
      {"strip", [](const Value& s, CallArgs& a) { return strip_method(s, a, "strip", true, true); }},
      {"lstrip", [](const Value& s, CallArgs& a) { return strip_method(s, a, "lstrip", true, false); }},
      {"rstrip", [](const Value& s, CallArgs& a) { return strip_method(s, a, "rstrip", false, true); }},
      {"lower", [](const Value& s, CallArgs& a) { return no_arg("lower", a, pystr::lower, s); }},
      {"casefold", [](const Value& s, CallArgs& a) { return no_arg("casefold", a, pystr::lower, s); }},
      {"upper", [](const Value& s, CallArgs& a) { return no_arg("upper", a, pystr::upper, s); }},
      {"title", [](const Value& s, CallArgs& a) { return no_arg("title", a, pystr::title, s); }},
      {"capitalize", [](const Value& s, CallArgs& a) { return no_arg("capitalize", a, pystr::capitalize, s); }},
      {"swapcase", [](const Value& s, CallArgs& a) { return no_arg("swapcase", a, pystr::swapcase, s); }},
      {"startswith", [](const Value& s, CallArgs& a) { return affix_test(s, a, "startswith", true); }},
      {"endswith", [](const Value& s, CallArgs& a) { return affix_test(s, a, "endswith", false); }},
      {"find", [](const Value& s, CallArgs& a) { return find_method(s, a, "find", false, false); }},
      {"rfind", [](const Value& s, CallArgs& a) { return find_method(s, a, "rfind", true, false); }},
      {"index", [](const Value& s, CallArgs& a) { return find_method(s, a, "index", false, true); }},
      {"rindex", [](const Value& s, CallArgs& a) { return find_method(s, a, "rindex", true, true); }},
      {"center", [](const Value& s, CallArgs& a) { return justify(s, a, "center", 'c'); }},
      {"ljust", [](const Value& s, CallArgs& a) { return justify(s, a, "ljust", '<'); }},
      {"rjust", [](const Value& s, CallArgs& a) { return justify(s, a, "rjust", '>'); }},
      {"partition", [](const Value& s, CallArgs& a) { return partition(s, a, "partition", false); }},
      {"rpartition", [](const Value& s, CallArgs& a) { return partition(s, a, "rpartition", true); }},
      {"isalnum", [](const Value& s, CallArgs& a) { return predicate("isalnum", a, pystr::is_alnum, s); }},
      {"isalpha", [](const Value& s, CallArgs& a) { return predicate("isalpha", a, pystr::is_alpha, s); }},
      {"isdecimal", [](const Value& s, CallArgs& a) { return predicate("isdecimal", a, pystr::is_decimal, s); }},
      {"isdigit", [](const Value& s, CallArgs& a) { return predicate("isdigit", a, pystr::is_digit, s); }},
      {"isnumeric", [](const Value& s, CallArgs& a) { return predicate("isnumeric", a, pystr::is_numeric, s); }},
      {"isspace", [](const Value& s, CallArgs& a) { return predicate("isspace", a, pystr::is_space, s); }},
      {"isprintable",
       [](const Value& s, CallArgs& a) {
         expect_no_args("isprintable", a);
         for (char32_t c : pystr::decode(s.as_string()))
           if (!pystr::is_printable(c)) return Value(false);
         return Value(true);
       }},
      {"isascii",
       [](const Value& s, CallArgs& a) {
         expect_no_args("isascii", a);
         return Value(s.as_string().empty() || pystr::pred_all(s.as_string(), is_ascii_cp));
       }},
      {"islower", [](const Value& s, CallArgs& a) { expect_no_args("islower", a); return Value(pystr::is_lower(s.as_string())); }},
      {"isupper", [](const Value& s, CallArgs& a) { expect_no_args("isupper", a); return Value(pystr::is_upper(s.as_string())); }},
      {"istitle", [](const Value& s, CallArgs& a) { expect_no_args("istitle", a); return Value(pystr::is_title(s.as_string())); }},
      {"split",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("split", args, {"sep", "maxsplit"});
         return str_list(pystr::split(s.as_string(), a.get_opt_string(0), a.get_int(1, -1)));
       }},
      {"rsplit",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("rsplit", args, {"sep", "maxsplit"});
         return str_list(pystr::rsplit(s.as_string(), a.get_opt_string(0), a.get_int(1, -1)));
       }},
      {"splitlines",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("splitlines", args, {"keepends"});
         return str_list(pystr::splitlines(s.as_string(), a.get_bool(0, false)));
       }},
      {"replace",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("replace", args, {"old", "new", "count"}, 2);
         std::string out = pystr::replace(s.as_string(), need_str(a.get(0), "replace() argument 1"),
                                          need_str(a.get(1), "replace() argument 2"), a.get_int(2, -1));
         check_size(out.size());
         return Value(std::move(out));
       }},
      {"count",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("count", args, {"sub", "start", "end"}, 1);
         Value hay = (a.has(1) || a.has(2)) ? get_slice(s, a.get(1), a.get(2), Value::none()) : s;
         return Value(pystr::count(hay.as_string(), need_str(a.get(0), "count() argument")));
       }},
      {"join",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("join", args, {"iterable"}, 1);
         std::string out;
         bool first = true;
         for (const auto& item : iterate(a.get(0))) {
           if (!item.is_string()) fail("sequence item: expected str instance, " + type_name(item) + " found");
           if (!first) out += s.as_string();
           first = false;
           out += item.as_string();
           check_size(out.size());
         }
         return Value(std::move(out));
       }},
      {"removeprefix",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("removeprefix", args, {"prefix"}, 1);
         const std::string& p = need_str(a.get(0), "removeprefix() argument");
         return pystr::starts_with(s.as_string(), p) ? Value(s.as_string().substr(p.size())) : s;
       }},
      {"removesuffix",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("removesuffix", args, {"suffix"}, 1);
         const std::string& p = need_str(a.get(0), "removesuffix() argument");
         if (p.empty() || !pystr::ends_with(s.as_string(), p)) return s;
         return Value(s.as_string().substr(0, s.as_string().size() - p.size()));
       }},
      {"zfill",
       [](const Value& s, CallArgs& args) {
         BoundArgs a("zfill", args, {"width"}, 1);
         std::string str = s.as_string();
         int64_t width = a.get_int(0, 0), len = static_cast<int64_t>(pystr::length(str));
         if (len >= width) return s;
         std::string sign;
         if (!str.empty() && (str[0] == '+' || str[0] == '-')) {
           sign = str.substr(0, 1);
           str = str.substr(1);
         }
         return Value(sign + std::string(static_cast<size_t>(width - len), '0') + str);
       }},
      {"format", [](const Value& s, CallArgs& args) { return Value(brace_format(s.as_string(), args)); }},
  };
  return m;
}

const std::map<std::string, Method>& dict_methods() {
  static const std::map<std::string, Method> m = {
      {"get",
       [](const Value& d, CallArgs& args) {
         BoundArgs a("get", args, {"key", "default"}, 1);
         if (const Value* v = d.as_dict().find(a.get(0))) return *v;
         return a.get_or(1, Value::none());
       }},
      {"keys",
       [](const Value& d, CallArgs& args) {
         expect_no_args("keys", args);
         std::vector<Value> out;
         for (const auto& kv : d.as_dict().entries) out.push_back(kv.first);
         return Value::list(std::move(out), SeqKind::DictKeys);
       }},
      {"values",
       [](const Value& d, CallArgs& args) {
         expect_no_args("values", args);
         std::vector<Value> out;
         for (const auto& kv : d.as_dict().entries) out.push_back(kv.second);
         return Value::list(std::move(out), SeqKind::DictValues);
       }},
      {"items",
       [](const Value& d, CallArgs& args) {
         expect_no_args("items", args);
         std::vector<Value> out;
         for (const auto& kv : d.as_dict().entries) out.push_back(Value::tuple({kv.first, kv.second}));
         return Value::list(std::move(out), SeqKind::DictItems);
       }},
      {"copy", [](const Value& d, CallArgs& args) { expect_no_args("copy", args); return d; }},
  };
  return m;
}

const std::map<std::string, Method>& seq_methods() {
  static const std::map<std::string, Method> m = {
      {"count",
       [](const Value& l, CallArgs& args) {
         BoundArgs a("count", args, {"value"}, 1);
         int64_t n = 0;
         for (const auto& v : l.as_list().items)
           if (py_equal(v, a.get(0))) ++n;
         return Value(n);
       }},
      {"index",
       [](const Value& l, CallArgs& args) {
         BoundArgs a("index", args, {"value"}, 1);
         const auto& items = l.as_list().items;
         for (size_t i = 0; i < items.size(); ++i)
           if (py_equal(items[i], a.get(0))) return Value(static_cast<int64_t>(i));
         fail(py_repr(a.get(0)) + " is not in " + type_name(l));
       }},
      {"copy", [](const Value& l, CallArgs& args) { expect_no_args("copy", args); return l; }},
  };
  return m;
}

Value bind(const Value& self, const std::string& name, Method m) {
  return make_builtin(name, [self, m](Interpreter&, CallArgs& args) { return m(self, args); });
}

Value unsafe(const Value& self, const std::string& name) {
  return Value::undefined("access to attribute '" + name + "' of '" + type_name(self) + "' object is unsafe.");
}

}  // namespace

std::optional<Value> builtin_method(const Value& obj, const std::string& name) {
  const std::map<std::string, Method>* table = nullptr;
  if (obj.is_string()) {
    table = &str_methods();
  } else if (obj.is_dict()) {
    static const char* kMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};
    for (const char* m : kMutators)
      if (name == m) return unsafe(obj, name);
    table = &dict_methods();
  } else if (obj.is_list() && (obj.as_list().kind == SeqKind::List || obj.as_list().kind == SeqKind::Tuple)) {
    if (obj.as_list().kind == SeqKind::List) {
      static const char* kMutators[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
      for (const char* m : kMutators)
        if (name == m) return unsafe(obj, name);
    } else if (name == "copy") {
      return std::nullopt;  // tuples have no copy()
    }
    table = &seq_methods();
  }
  if (!table) return std::nullopt;
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return bind(obj, name, it->second);
}

}  // namespace ds4::text::jinja
