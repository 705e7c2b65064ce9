// The values a template computes with: Python's None, bool, int, float, str, list/tuple, dict, Jinja's
// Undefined, and objects (namespace, macro, loop, bound methods, generators). Containers are immutable
// once built (transformers renders in an ImmutableSandboxedEnvironment, where list.append and friends are
// refused), so values share their storage and copying one is cheap.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::text::jinja {

class Value;
class Object;
class Interpreter;

// Joins pieces into one string. (Chains of `"literal" + f()` trip a false -Wrestrict warning in GCC 12.)
inline std::string str_cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts) out.append(p);
  return out;
}

// What a Python sequence prints as and what it supports: views of a dict print as dict_keys([...]) and
// cannot be indexed.
enum class SeqKind : uint8_t { List, Tuple, DictKeys, DictValues, DictItems };

struct ListData {
  std::vector<Value> items;
  SeqKind kind = SeqKind::List;
};

// Insertion-ordered like a Python dict. Dicts in chat templates are small, so lookup is a linear scan.
struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);  // replaces an equal key in place, else appends
};

// Arguments of a call: positional, then keyword in source order.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

  Value();  // Undefined
  Value(bool b);
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v);
  Value(double v);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value none();
  // An undefined value that raises `message` when it is used in a way Jinja's Undefined refuses.
  static Value undefined(std::string message);
  static Value list(std::vector<Value> items, SeqKind kind = SeqKind::List);
  static Value tuple(std::vector<Value> items) { return list(std::move(items), SeqKind::Tuple); }
  static Value dict(DictData d);
  static Value object(std::shared_ptr<Object> o);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_object() const { return kind_ == Kind::Object; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }     // Int, or Bool as 0/1
  double as_float() const { return f_; }    // Float only
  double as_double() const;                 // any number
  const std::string& as_string() const;     // String
  const std::string& undefined_message() const;
  const ListData& as_list() const;
  const DictData& as_dict() const;
  Object& as_object() const;
  template <class T>
  T* object_as() const {
    return kind_ == Kind::Object ? dynamic_cast<T*>(obj_.get()) : nullptr;
  }

  // Identity for Jinja's `sameas` test: the same container or object, or equal scalars.
  bool same_as(const Value& o) const;

 private:
  Kind kind_;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const void> ptr_;  // the string, undefined message, ListData or DictData
  std::shared_ptr<Object> obj_;
};

// Objects that are not plain data. Their type names appear in error messages as Python spells them.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  virtual std::string repr() const { return str_cat({"<", type_name(), " object>"}); }
  // Attribute lookup; nullopt when there is no such attribute.
  virtual std::optional<Value> get_attr(const std::string& name) const;
  virtual bool is_callable() const { return false; }
  virtual Value call(Interpreter& in, CallArgs& args) const;
  virtual bool truthy() const { return true; }
};

// A Python generator: filters such as select and map return one. It is always true, has no len(), cannot
// be indexed and is exhausted by the first iteration, all of which templates can observe.
class Generator : public Object {
 public:
  explicit Generator(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "generator"; }
  std::string repr() const override { return "<generator object>"; }
  // The items not yet consumed; consumes them all.
  std::vector<Value> take() {
    std::vector<Value> out(items_.begin() + static_cast<std::ptrdiff_t>(pos_), items_.end());
    pos_ = items_.size();
    return out;
  }
  // Python's next(): the next item, consuming only it.
  std::optional<Value> next() {
    if (pos_ >= items_.size()) return std::nullopt;
    return items_[pos_++];
  }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

// An integer outside 64 bits from the JSON context (ids in tool arguments, say). Python keeps such ints
// exact; here they print and serialize exactly and compare equal by value, but arithmetic refuses them.
class BigInt : public Object {
 public:
  explicit BigInt(std::string digits) : digits_(std::move(digits)) {}
  std::string type_name() const override { return "int"; }
  std::string repr() const override { return digits_; }
  const std::string& digits() const { return digits_; }

 private:
  std::string digits_;
};

// A function implemented in C++ (globals, bound methods of str/dict/list, loop.cycle, ...).
class Builtin : public Object {
 public:
  using Fn = std::function<Value(Interpreter&, CallArgs&)>;
  Builtin(std::string name, Fn fn, std::string type = "builtin_function_or_method")
      : name_(std::move(name)), type_(std::move(type)), fn_(std::move(fn)) {}
  std::string type_name() const override { return type_; }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }
  bool is_callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) const override { return fn_(in, args); }
  const std::string& name() const { return name_; }

 private:
  std::string name_, type_;
  Fn fn_;
};

// jinja2.utils.Namespace: the one mutable object templates have, assigned with {% set ns.attr = ... %}.
class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override;
  std::optional<Value> get_attr(const std::string& name) const override;
  void set_attr(const std::string& name, Value v) { attrs_.set(Value(name), std::move(v)); }
  DictData& attrs() { return attrs_; }

 private:
  DictData attrs_;
};

// Python semantics shared by the interpreter, filters and tests.
bool truthy(const Value& v);
std::string type_name(const Value& v);
std::string py_str(const Value& v);   // str(): what {{ v }} prints
std::string py_repr(const Value& v);  // repr(): how v prints inside a container
bool py_equal(const Value& a, const Value& b);
// a < b and friends: -1, 0 or 1; throws the TypeError Python raises for unorderable operands.
int py_compare(const Value& a, const Value& b, const char* op = "<");
// Items of an iterable (for loops, filters); throws for non-iterables. Exhausts generators.
std::vector<Value> iterate(const Value& v);
// len(); throws for values without a length.
int64_t py_len(const Value& v);
// Wraps an exhausted-on-read sequence as a Python generator.
Value make_generator(std::vector<Value> items);
Value make_builtin(std::string name, Builtin::Fn fn);

// Throws the UndefinedError an undefined value carries.
[[noreturn]] void fail_undefined(const Value& v);
// Throws a Template error.
[[noreturn]] void fail(const std::string& message);
// Python's TypeError text for a non-integer where an integer is needed.
std::string not_an_integer(const Value& v);

}  // namespace ds4::text::jinja
