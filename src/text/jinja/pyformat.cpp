#include "text/jinja/pyformat.h"

#include <cmath>
#include <cstdio>

#include "text/jinja/ops.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

std::string c_format(const std::string& spec, double v) {
  int n = std::snprintf(nullptr, 0, spec.c_str(), v);
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, spec.c_str(), v);
  return out;
}

std::string c_format_int(const std::string& spec, long long v) {
  int n = std::snprintf(nullptr, 0, spec.c_str(), v);
  std::string out(static_cast<size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, spec.c_str(), v);
  return out;
}

// The number a %d/%f conversion or a numeric format spec reads, with Python's TypeError otherwise.
double need_real(const Value& v, const std::string& what) {
  if (v.is_number()) return v.as_double();
  if (v.is_undefined()) fail_undefined(v);
  fail(what + " format: a real number is required, not " + type_name(v));
}

int64_t need_int(const Value& v, const std::string& what) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_undefined()) fail_undefined(v);
  fail(what + " format: an integer is required, not " + type_name(v));
}

std::string to_base(uint64_t v, int base, bool upper) {
  if (v == 0) return "0";
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  while (v) {
    out.insert(out.begin(), digits[v % static_cast<uint64_t>(base)]);
    v /= static_cast<uint64_t>(base);
  }
  return out;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i && (n - i) % 3 == 0) out += sep;
    out += digits[static_cast<size_t>(i)];
  }
  return out;
}

}  // namespace

// ---- printf-style ----

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const DictData* mapping = nullptr;
  // Python treats a non-tuple argument with __getitem__ (dict, list) as a possible mapping: it is then
  // not an error if it is not consumed.
  bool mapping_like = false;
  if (args.is_list() && args.as_list().kind == SeqKind::Tuple) {
    positional = args.as_list().items;
  } else {
    positional.push_back(args);
    if (args.is_dict()) mapping = &args.as_dict();
    mapping_like = args.is_dict() || args.is_list();
  }
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> Value {
    if (next >= positional.size()) fail("not enough arguments for format string");
    return positional[next++];
  };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    Value arg;
    bool have_arg = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) fail("incomplete format key");
      if (!mapping) fail("format requires a mapping");
      const Value* v = mapping->find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (!v) fail("KeyError: '" + fmt.substr(i + 1, close - i - 1) + "'");
      arg = *v;
      have_arg = true;
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    int64_t width = -1, prec = -1;
    if (i < fmt.size() && fmt[i] == '*') {
      width = need_int(take(), "*");
      ++i;
    } else {
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
        width = (width < 0 ? 0 : width) * 10 + (fmt[i++] - '0');
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = 0;
      if (i < fmt.size() && fmt[i] == '*') {
        prec = need_int(take(), "*");
        ++i;
      } else {
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) prec = prec * 10 + (fmt[i++] - '0');
      }
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) fail("incomplete format");
    char type = fmt[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!have_arg) arg = take();
    bool left = flags.find('-') != std::string::npos;
    std::string body;
    std::string cflags;
    for (char f : flags)
      if (f != '#' || (type != 'o')) cflags += f;
    std::string w = width >= 0 ? std::to_string(width) : "";
    std::string p = prec >= 0 ? "." + std::to_string(prec) : "";
    switch (type) {
      case 's': case 'r': case 'a': {
        body = type == 's' ? py_str(arg) : py_repr(arg);
        if (prec >= 0 && static_cast<int64_t>(pystr::length(body)) > prec)
          body = body.substr(0, pystr::byte_offset(body, static_cast<size_t>(prec)));
        body = pystr::pad(body, width, ' ', left ? '<' : '>');
        break;
      }
      case 'd': case 'i': case 'u': {
        double d = need_real(arg, "%" + std::string(1, type));
        long long n = arg.is_float() ? static_cast<long long>(std::trunc(d)) : static_cast<long long>(arg.as_int());
        body = c_format_int("%" + cflags + w + p + "lld", n);
        break;
      }
      case 'x': case 'X': case 'o': {
        int64_t n = need_int(arg, "%" + std::string(1, type));
        std::string digits = to_base(static_cast<uint64_t>(n < 0 ? -n : n), type == 'o' ? 8 : 16, type == 'X');
        if (prec >= 0 && static_cast<int64_t>(digits.size()) < prec)
          digits.insert(0, static_cast<size_t>(prec) - digits.size(), '0');
        std::string sign = n < 0 ? "-" : flags.find('+') != std::string::npos ? "+"
                                       : flags.find(' ') != std::string::npos ? " " : "";
        std::string prefix;
        if (flags.find('#') != std::string::npos) prefix = type == 'o' ? "0o" : type == 'x' ? "0x" : "0X";
        std::string head = sign + prefix;
        if (!left && flags.find('0') != std::string::npos && width > static_cast<int64_t>(head.size() + digits.size()))
          digits.insert(0, static_cast<size_t>(width) - head.size() - digits.size(), '0');
        body = pystr::pad(head + digits, width, ' ', left ? '<' : '>');
        break;
      }
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        double d = need_real(arg, "%" + std::string(1, type));
        body = c_format("%" + cflags + w + p + std::string(1, type), d);
        break;
      }
      case 'c': {
        if (arg.is_string() && pystr::length(arg.as_string()) == 1) {
          body = arg.as_string();
        } else {
          int64_t n = need_int(arg, "%c");
          if (n < 0 || n > 0x10FFFF) fail("%c arg not in range(0x110000)");
          pystr::append_utf8(body, static_cast<char32_t>(n));
        }
        body = pystr::pad(body, width, ' ', left ? '<' : '>');
        break;
      }
      default: fail(std::string("unsupported format character '") + type + "'");
    }
    out += body;
    check_size(out.size());
  }
  if (!used_mapping && !mapping_like && next < positional.size())
    fail("not all arguments converted during string formatting");
  return out;
}

// ---- format spec mini-language ----

std::string format_value(const Value& v, const std::string& spec) {
  if (spec.empty()) return py_str(v);
  // [[fill]align][sign][z][#][0][width][grouping][.precision][type]
  auto cps = pystr::decode(spec);
  size_t i = 0;
  char32_t fill = ' ';
  char align = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    fill = cps[0];
    align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    align = static_cast<char>(cps[0]);
    i = 1;
  }
  char sign = '-';
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) sign = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == 'z') ++i;
  bool alt = false;
  if (i < cps.size() && cps[i] == '#') {
    alt = true;
    ++i;
  }
  if (i < cps.size() && cps[i] == '0') {
    if (!align) {
      fill = '0';
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') width = width * 10 + (cps[i++] - '0');
  char grouping = 0;
  if (i < cps.size() && (cps[i] == ',' || cps[i] == '_')) grouping = static_cast<char>(cps[i++]);
  int64_t prec = -1;
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    prec = 0;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') prec = prec * 10 + (cps[i++] - '0');
  }
  char type = 0;
  if (i < cps.size()) type = static_cast<char>(cps[i++]);
  if (i != cps.size()) fail("Invalid format specifier '" + spec + "'");

  auto finish = [&](std::string sign_str, std::string body, char default_align) {
    char a = align ? align : default_align;
    int64_t len = static_cast<int64_t>(pystr::length(sign_str) + pystr::length(body));
    if (a == '=') {
      std::string f;
      pystr::append_utf8(f, fill);
      std::string pad;
      for (int64_t k = len; k < width; ++k) pad += f;
      return sign_str + pad + body;
    }
    return pystr::pad(sign_str + body, width, fill, a);
  };

  if (v.is_string()) {
    if (type && type != 's') fail(std::string("Unknown format code '") + type + "' for object of type 'str'");
    std::string s = v.as_string();
    if (prec >= 0 && static_cast<int64_t>(pystr::length(s)) > prec)
      s = s.substr(0, pystr::byte_offset(s, static_cast<size_t>(prec)));
    return finish("", s, '<');
  }
  if (!v.is_number()) {
    if (v.is_undefined()) return finish("", "", '<');
    fail("unsupported format string passed to " + type_name(v) + ".__format__");
  }
  bool as_int = (v.is_int() || v.is_bool()) && (type == 0 || type == 'd' || type == 'b' || type == 'o' ||
                                                type == 'x' || type == 'X' || type == 'c' || type == 'n');
  if (as_int) {
    int64_t n = v.as_int();
    std::string sign_str = n < 0 ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
    uint64_t mag = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
    std::string digits;
    if (type == 'c') {
      pystr::append_utf8(digits, static_cast<char32_t>(n));
      return finish("", digits, '<');
    }
    int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
    digits = to_base(mag, base, type == 'X');
    if (grouping) digits = group_digits(digits, grouping);
    if (alt && base != 10) sign_str += type == 'b' ? "0b" : type == 'o' ? "0o" : type == 'x' ? "0x" : "0X";
    return finish(sign_str, digits, '>');
  }
  double d = v.as_double();
  std::string sign_str = std::signbit(d) && !std::isnan(d) ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
  double mag = std::fabs(d);
  std::string body;
  char t = type;
  if (t == 0 && prec < 0) {
    body = pystr::float_repr(mag);
  } else {
    bool percent = t == '%';
    if (percent) mag *= 100;
    char ct = t == 0 ? 'g' : percent ? 'f' : (t == 'n' ? 'g' : t);
    if (std::string("eEfFgG").find(ct) == std::string::npos)
      fail(std::string("Unknown format code '") + t + "' for object of type 'float'");
    int p = static_cast<int>(prec < 0 ? 6 : prec);
    if (t == 0 && p == 0) p = 1;
    body = c_format(std::string("%") + (alt ? "#" : "") + "." + std::to_string(p) + ct, mag);
    if (t == 0 && body.find_first_of(".eEn") == std::string::npos) body += ".0";
    if (percent) body += '%';
  }
  if (grouping) {
    size_t end = body.find_first_not_of("0123456789");
    body = group_digits(body.substr(0, end), grouping) + (end == std::string::npos ? "" : body.substr(end));
  }
  return finish(sign_str, body, '>');
}

// ---- str.format ----

std::string brace_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    // Find the matching '}' allowing one level of nested fields in the spec.
    size_t j = i + 1;
    int depth = 1;
    for (; j < fmt.size(); ++j) {
      if (fmt[j] == '{') ++depth;
      if (fmt[j] == '}' && --depth == 0) break;
    }
    if (j >= fmt.size()) fail("expected '}' before end of string");
    std::string field = fmt.substr(i + 1, j - i - 1);
    i = j;
    std::string spec;
    char conversion = 0;
    size_t colon = std::string::npos, bang = std::string::npos;
    for (size_t k = 0; k < field.size(); ++k) {
      if (field[k] == '[') {
        k = field.find(']', k);
        if (k == std::string::npos) fail("expected '}' before end of string");
        continue;
      }
      if (field[k] == '!' && bang == std::string::npos) bang = k;
      if (field[k] == ':') {
        colon = k;
        break;
      }
    }
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (bang != std::string::npos && bang < field.size()) {
      if (bang + 2 != field.size()) fail("expected ':' after conversion specifier");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (spec.find('{') != std::string::npos) spec = brace_format(spec, args);
    // field name: [index|name] then .attr / [key] parts
    size_t k = 0;
    while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
    std::string head = field.substr(0, k);
    Value v;
    if (head.empty()) {
      if (auto_index >= args.pos.size()) fail("Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      v = args.pos[auto_index++];
    } else if (std::isdigit(static_cast<unsigned char>(head[0]))) {
      size_t idx = std::stoul(head);
      if (idx >= args.pos.size()) fail("Replacement index " + head + " out of range for positional args tuple");
      v = args.pos[idx];
    } else {
      bool found = false;
      for (const auto& [name, val] : args.kw) {
        if (name == head) {
          v = val;
          found = true;
        }
      }
      if (!found) fail("KeyError: '" + head + "'");
    }
    while (k < field.size()) {
      if (field[k] == '.') {
        size_t e = k + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
        v = get_attr(v, field.substr(k + 1, e - k - 1));
        k = e;
      } else {
        size_t e = field.find(']', k);
        std::string key = field.substr(k + 1, e - k - 1);
        bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        v = numeric ? get_item(v, Value(static_cast<int64_t>(std::stoll(key)))) : get_item(v, Value(key));
        k = e + 1;
      }
    }
    if (conversion == 'r' || conversion == 'a')
      v = Value(py_repr(v));
    else if (conversion == 's')
      v = Value(py_str(v));
    else if (conversion)
      fail(std::string("Unknown conversion specifier ") + conversion);
    out += format_value(v, spec);
    check_size(out.size());
  }
  return out;
}

}  // namespace ds4::text::jinja
