#include "text/jinja/value.h"

#include <cmath>

#include "core/error.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {
const std::string kEmpty;
}

void fail(const std::string& message) { throw Error(ErrorKind::Template, message); }

void fail_undefined(const Value& v) { fail(v.undefined_message()); }

std::string not_an_integer(const Value& v) {
  std::string msg = "'";
  msg += type_name(v);
  msg += "' object cannot be interpreted as an integer";
  return msg;
}

// ---- DictData ----

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries)
    if (py_equal(k, key)) return &v;
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (py_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

// ---- Value ----

Value::Value() : kind_(Kind::Undefined) {}
Value::Value(bool b) : kind_(Kind::Bool), b_(b), i_(b ? 1 : 0) {}
Value::Value(int64_t v) : kind_(Kind::Int), i_(v) {}
Value::Value(double v) : kind_(Kind::Float), f_(v) {}
Value::Value(std::string s) : kind_(Kind::String), ptr_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::undefined(std::string message) {
  Value v;
  v.ptr_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::list(std::vector<Value> items, SeqKind kind) {
  Value v;
  v.kind_ = Kind::List;
  v.ptr_ = std::make_shared<const ListData>(ListData{std::move(items), kind});
  return v;
}

Value Value::dict(DictData d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.ptr_ = std::make_shared<const DictData>(std::move(d));
  return v;
}

Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = Kind::Object;
  v.obj_ = std::move(o);
  return v;
}

double Value::as_double() const {
  if (kind_ == Kind::Float) return f_;
  return static_cast<double>(i_);
}

const std::string& Value::as_string() const { return *static_cast<const std::string*>(ptr_.get()); }

const std::string& Value::undefined_message() const {
  static const std::string generic = "value is undefined";
  return ptr_ ? *static_cast<const std::string*>(ptr_.get()) : generic;
}

const ListData& Value::as_list() const { return *static_cast<const ListData*>(ptr_.get()); }
const DictData& Value::as_dict() const { return *static_cast<const DictData*>(ptr_.get()); }
Object& Value::as_object() const { return *obj_; }

bool Value::same_as(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined: case Kind::None: return true;
    case Kind::Bool: return b_ == o.b_;
    case Kind::Int: return i_ == o.i_;
    case Kind::Float: return f_ == o.f_;
    case Kind::String: return ptr_ == o.ptr_ || as_string() == o.as_string();
    case Kind::List: case Kind::Dict: return ptr_ == o.ptr_;
    case Kind::Object: return obj_ == o.obj_;
  }
  return false;
}

// ---- Object ----

std::optional<Value> Object::get_attr(const std::string&) const { return std::nullopt; }

Value Object::call(Interpreter&, CallArgs&) const { fail("'" + type_name() + "' object is not callable"); }

std::string Namespace::repr() const { return "<Namespace " + py_repr(Value::dict(attrs_)) + ">"; }

std::optional<Value> Namespace::get_attr(const std::string& name) const {
  if (const Value* v = attrs_.find(std::string_view(name))) return *v;
  return std::nullopt;
}

Value make_generator(std::vector<Value> items) {
  return Value::object(std::make_shared<Generator>(std::move(items)));
}

Value make_builtin(std::string name, Builtin::Fn fn) {
  return Value::object(std::make_shared<Builtin>(std::move(name), std::move(fn)));
}

// ---- Python semantics ----

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_float() != 0.0;
    case Value::Kind::String: return !v.as_string().empty();
    case Value::Kind::List: return !v.as_list().items.empty();
    case Value::Kind::Dict: return !v.as_dict().entries.empty();
    case Value::Kind::Object: return v.as_object().truthy();
  }
  return false;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List:
      switch (v.as_list().kind) {
        case SeqKind::List: return "list";
        case SeqKind::Tuple: return "tuple";
        case SeqKind::DictKeys: return "dict_keys";
        case SeqKind::DictValues: return "dict_values";
        case SeqKind::DictItems: return "dict_items";
      }
      return "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Object: return v.as_object().type_name();
  }
  return "object";
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::String: return v.as_string();
    default: return py_repr(v);
  }
}

namespace {
std::string join_repr(const std::vector<Value>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += py_repr(items[i]);
  }
  return out;
}
}  // namespace

std::string py_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return pystr::float_repr(v.as_float());
    case Value::Kind::String: return pystr::repr(v.as_string());
    case Value::Kind::List: {
      const auto& l = v.as_list();
      switch (l.kind) {
        case SeqKind::List: return str_cat({"[", join_repr(l.items), "]"});
        case SeqKind::Tuple:
          return l.items.size() == 1 ? str_cat({"(", py_repr(l.items[0]), ",)"}) : str_cat({"(", join_repr(l.items), ")"});
        case SeqKind::DictKeys: return str_cat({"dict_keys([", join_repr(l.items), "])"});
        case SeqKind::DictValues: return str_cat({"dict_values([", join_repr(l.items), "])"});
        case SeqKind::DictItems: return str_cat({"dict_items([", join_repr(l.items), "])"});
      }
      return "";
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(k) + ": " + py_repr(val);
      }
      return out + "}";
    }
    case Value::Kind::Object: return v.as_object().repr();
  }
  return "";
}

bool py_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined: case K::None: return true;
    case K::String: return a.as_string() == b.as_string();
    case K::List: {
      const auto& x = a.as_list();
      const auto& y = b.as_list();
      if (x.kind != y.kind || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!py_equal(x.items[i], y.items[i])) return false;
      return true;
    }
    case K::Dict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    case K::Object:
      if (auto* x = a.object_as<BigInt>())
        if (auto* y = b.object_as<BigInt>()) return x->digits() == y->digits();
      return a.same_as(b);
    default: return false;
  }
}

int py_compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.as_list().kind == b.as_list().kind &&
      (a.as_list().kind == SeqKind::List || a.as_list().kind == SeqKind::Tuple)) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  fail(std::string("'") + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) +
       "'");
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::String: {
      std::vector<Value> out;
      const std::string& s = v.as_string();
      size_t i = 0;
      while (i < s.size()) {
        size_t j = i + 1;
        while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
        out.emplace_back(s.substr(i, j - i));
        i = j;
      }
      return out;
    }
    case Value::Kind::List: return v.as_list().items;
    case Value::Kind::Dict: {
      std::vector<Value> out;
      for (const auto& kv : v.as_dict().entries) out.push_back(kv.first);
      return out;
    }
    case Value::Kind::Object:
      if (auto* g = v.object_as<Generator>()) return g->take();
      break;
    default: break;
  }
  fail("'" + type_name(v) + "' object is not iterable");
}

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(pystr::length(v.as_string()));
    case Value::Kind::List: return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().entries.size());
    default: break;
  }
  fail("object of type '" + type_name(v) + "' has no len()");
}

}  // namespace ds4::text::jinja
