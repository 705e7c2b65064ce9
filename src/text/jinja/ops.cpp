#include "text/jinja/ops.h"

#include <cmath>

#include "text/jinja/builtins.h"
#include "text/jinja/pyformat.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "** or pow()";
    default: return "?";
  }
}

[[noreturn]] void unsupported(BinaryOp op, const Value& a, const Value& b) {
  fail(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + type_name(a) + "' and '" +
       type_name(b) + "'");
}

[[noreturn]] void overflow() { fail("integer result does not fit in 64 bits (only 64-bit integers are supported)"); }

bool is_plain_seq(const Value& v) {
  return v.is_list() && (v.as_list().kind == SeqKind::List || v.as_list().kind == SeqKind::Tuple);
}

// CPython's float floor division and modulo (sign of the divisor, exact rounding).
std::pair<double, double> float_divmod(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return {floordiv, mod};
}

Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    check_size(s.size() * static_cast<size_t>(n));
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& l = seq.as_list();
  check_size(l.items.size() * static_cast<size_t>(n) * sizeof(Value));
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), l.items.begin(), l.items.end());
  return Value::list(std::move(out), l.kind);
}

int64_t int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked_mul(result, base);
    exp >>= 1;
    if (exp) base = checked_mul(base, base);
  }
  return result;
}

}  // namespace

bool is_hashable(const Value& v) {
  if (v.is_dict()) return false;
  if (v.is_list()) {
    if (v.as_list().kind != SeqKind::Tuple) return false;
    for (const auto& x : v.as_list().items)
      if (!is_hashable(x)) return false;
  }
  return true;
}

void check_size(size_t bytes) {
  if (bytes > kMaxStringBytes) fail("template produced a value larger than the 256 MiB limit");
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.object_as<BigInt>() || b.object_as<BigInt>()) overflow();
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && !a.is_float() && !b.is_float();
  switch (op) {
    case BinaryOp::Add:
      if (ints) return Value(checked_add(a.as_int(), b.as_int()));
      if (nums) return Value(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) {
        check_size(a.as_string().size() + b.as_string().size());
        return Value(a.as_string() + b.as_string());
      }
      if (is_plain_seq(a) && is_plain_seq(b) && a.as_list().kind == b.as_list().kind) {
        std::vector<Value> out = a.as_list().items;
        out.insert(out.end(), b.as_list().items.begin(), b.as_list().items.end());
        return Value::list(std::move(out), a.as_list().kind);
      }
      if (a.is_string() || is_plain_seq(a))
        fail("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
      unsupported(op, a, b);
    case BinaryOp::Sub:
      if (ints) {
        int64_t r;
        if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
        return Value(r);
      }
      if (nums) return Value(a.as_double() - b.as_double());
      unsupported(op, a, b);
    case BinaryOp::Mul:
      if (ints) return Value(checked_mul(a.as_int(), b.as_int()));
      if (nums) return Value(a.as_double() * b.as_double());
      if ((a.is_string() || is_plain_seq(a)) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
      if ((b.is_string() || is_plain_seq(b)) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
      if (a.is_string() || is_plain_seq(a)) fail("can't multiply sequence by non-int of type '" + type_name(b) + "'");
      if (b.is_string() || is_plain_seq(b)) fail("can't multiply sequence by non-int of type '" + type_name(a) + "'");
      unsupported(op, a, b);
    case BinaryOp::Div:
      if (nums) {
        if (b.as_double() == 0.0) fail(ints ? "division by zero" : "float division by zero");
        return Value(a.as_double() / b.as_double());
      }
      unsupported(op, a, b);
    case BinaryOp::FloorDiv:
      if (ints) {
        int64_t x = a.as_int(), y = b.as_int();
        if (y == 0) fail("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) overflow();
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value(q);
      }
      if (nums) {
        if (b.as_double() == 0.0) fail("float floor division by zero");
        return Value(float_divmod(a.as_double(), b.as_double()).first);
      }
      unsupported(op, a, b);
    case BinaryOp::Mod:
      if (a.is_string()) return Value(percent_format(a.as_string(), b));
      if (ints) {
        int64_t x = a.as_int(), y = b.as_int();
        if (y == 0) fail("integer division or modulo by zero");
        if (y == -1) return Value(int64_t{0});
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value(r);
      }
      if (nums) {
        if (b.as_double() == 0.0) fail("float modulo");
        return Value(float_divmod(a.as_double(), b.as_double()).second);
      }
      unsupported(op, a, b);
    case BinaryOp::Pow:
      if (ints && b.as_int() >= 0) return Value(int_pow(a.as_int(), b.as_int()));
      if (nums) {
        double x = a.as_double(), y = b.as_double();
        if (x == 0.0 && y < 0) fail("0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y)) fail("a negative number raised to a fractional power gives a complex number (unsupported)");
        return Value(std::pow(x, y));
      }
      unsupported(op, a, b);
    default: break;
  }
  fail("unsupported operator");
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value(-v.as_float());
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) overflow();
    return Value(-v.as_int());
  }
  fail("bad operand type for unary -: '" + type_name(v) + "'");
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return v;
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  fail("bad operand type for unary +: '" + type_name(v) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) {
        if (item.is_undefined()) fail_undefined(item);
        fail("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const auto& v : container.as_list().items)
        if (py_equal(v, item)) return true;
      return false;
    case Value::Kind::Dict:
      if (!is_hashable(item)) fail("unhashable type: '" + type_name(item) + "'");
      return container.as_dict().find(item) != nullptr;
    case Value::Kind::Undefined: return false;
    case Value::Kind::Object:
      if (auto* g = container.object_as<Generator>()) {
        while (auto v = g->next())  // consumes up to the match, like Python's `in` on an iterator
          if (py_equal(*v, item)) return true;
        return false;
      }
      break;
    default: break;
  }
  fail("argument of type '" + type_name(container) + "' is not iterable");
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_object()) {
    if (v.object_as<Namespace>()) return "jinja2.utils.Namespace object";
  }
  return type_name(v) + " object";
}

namespace {

Value missing_attr(const Value& obj, const std::string& name) {
  return Value::undefined(str_cat({"'", object_type_repr(obj), "' has no attribute '", name, "'"}));
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attr(obj, key.as_string());
  return Value::undefined(object_type_repr(obj) + " has no element " + py_repr(key));
}

// Python's attribute namespace of the value (methods, namespace attributes); nullopt when absent.
std::optional<Value> python_attr(const Value& obj, const std::string& name) {
  if (obj.is_object()) return obj.as_object().get_attr(name);
  return builtin_method(obj, name);
}

std::optional<Value> index_sequence(const Value& obj, const Value& key) {
  if (!(key.is_int() || key.is_bool())) return std::nullopt;
  int64_t i = key.as_int();
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    auto n = static_cast<int64_t>(pystr::length(s));
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;
    size_t b = pystr::byte_offset(s, static_cast<size_t>(i));
    size_t e = b + 1;
    while (e < s.size() && (static_cast<unsigned char>(s[e]) & 0xC0) == 0x80) ++e;
    return Value(s.substr(b, e - b));
  }
  const auto& items = obj.as_list().items;
  auto n = static_cast<int64_t>(items.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return items[static_cast<size_t>(i)];
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  // Names starting with an underscore are private to the sandbox.
  if (!name.empty() && name[0] == '_') {
    if (python_attr(obj, name)) return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) +
                                                        "' object is unsafe.");
  } else if (auto attr = python_attr(obj, name)) {
    return *attr;
  }
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(std::string_view(name))) return *v;
  }
  return missing_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (!is_hashable(key)) return missing_item(obj, key);  // TypeError in Python, which getitem catches
    if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if (obj.is_string() || is_plain_seq(obj)) {
    if (auto v = index_sequence(obj, key)) return *v;
  }
  if (key.is_string()) {
    const std::string& name = key.as_string();
    if (auto attr = python_attr(obj, name)) {
      if (!name.empty() && name[0] == '_')
        return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
      return *attr;
    }
  }
  return missing_item(obj, key);
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto bound = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (v.is_int() || v.is_bool()) return v.as_int();
    fail("slice indices must be integers or None or have an __index__ method");
  };
  // Jinja2 compiles a[b:c] to a plain Python subscript (not its getitem), so errors are not turned into
  // undefined values.
  if (obj.is_dict()) fail("unhashable type: 'slice'");
  if (!obj.is_string() && !is_plain_seq(obj)) fail("'" + type_name(obj) + "' object is not subscriptable");
  std::optional<int64_t> b = bound(start), e = bound(stop), s = bound(step);
  int64_t st = s.value_or(1);
  if (st == 0) fail("slice step cannot be zero");
  // slice.indices(len)
  std::u32string cps;
  int64_t len;
  if (obj.is_string()) {
    cps = pystr::decode(obj.as_string());
    len = static_cast<int64_t>(cps.size());
  } else {
    len = static_cast<int64_t>(obj.as_list().items.size());
  }
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < lo) x = lo;
    } else if (x > hi) {
      x = hi;
    }
    return x;
  };
  int64_t from, to;
  if (st > 0) {
    from = adjust(b, 0, 0, len);
    to = adjust(e, len, 0, len);
  } else {
    from = adjust(b, len - 1, -1, len - 1);
    to = adjust(e, -1, -1, len - 1);
  }
  std::vector<int64_t> idx;
  if (st > 0)
    for (int64_t i = from; i < to; i += st) idx.push_back(i);
  else
    for (int64_t i = from; i > to; i += st) idx.push_back(i);
  if (obj.is_string()) {
    std::u32string out;
    for (int64_t i : idx) out += cps[static_cast<size_t>(i)];
    return Value(pystr::encode(out));
  }
  std::vector<Value> out;
  for (int64_t i : idx) out.push_back(obj.as_list().items[static_cast<size_t>(i)]);
  return Value::list(std::move(out), obj.as_list().kind);
}

}  // namespace ds4::text::jinja
