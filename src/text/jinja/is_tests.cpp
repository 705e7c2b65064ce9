// Jinja2's built-in tests (`x is defined`, `x is divisibleby 3`, ...) from jinja2/tests.py.
#include <map>

#include "text/jinja/args.h"
#include "text/jinja/builtins.h"
#include "text/jinja/ops.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

const Value& one_arg(const char* name, CallArgs& args) {
  if (args.pos.size() + args.kw.size() != 1)
    fail(std::string("test_") + name + "() takes 2 positional arguments but " +
         std::to_string(args.pos.size() + args.kw.size() + 1) + " were given");
  return args.pos.empty() ? args.kw[0].second : args.pos[0];
}

void no_arg(const char* name, CallArgs& args) {
  if (!args.pos.empty() || !args.kw.empty())
    fail(std::string("test_") + name + "() takes 1 positional argument but " +
         std::to_string(args.pos.size() + args.kw.size() + 1) + " were given");
}

bool t_defined(Interpreter&, const Value& v, CallArgs& a) { no_arg("defined", a); return !v.is_undefined(); }
bool t_undefined(Interpreter&, const Value& v, CallArgs& a) { no_arg("undefined", a); return v.is_undefined(); }
bool t_none(Interpreter&, const Value& v, CallArgs& a) { no_arg("none", a); return v.is_none(); }
bool t_boolean(Interpreter&, const Value& v, CallArgs& a) { no_arg("boolean", a); return v.is_bool(); }
bool t_true(Interpreter&, const Value& v, CallArgs& a) { no_arg("true", a); return v.is_bool() && v.as_bool(); }
bool t_false(Interpreter&, const Value& v, CallArgs& a) { no_arg("false", a); return v.is_bool() && !v.as_bool(); }
bool t_integer(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("integer", a);
  return v.is_int() || v.object_as<BigInt>();
}
bool t_float(Interpreter&, const Value& v, CallArgs& a) { no_arg("float", a); return v.is_float(); }
bool t_number(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("number", a);
  return v.is_number() || v.object_as<BigInt>();
}
bool t_string(Interpreter&, const Value& v, CallArgs& a) { no_arg("string", a); return v.is_string(); }
bool t_mapping(Interpreter&, const Value& v, CallArgs& a) { no_arg("mapping", a); return v.is_dict(); }
bool t_escaped(Interpreter&, const Value&, CallArgs& a) { no_arg("escaped", a); return false; }

bool t_sequence(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("sequence", a);
  if (v.is_undefined() || v.is_string() || v.is_dict()) return true;
  return v.is_list() && (v.as_list().kind == SeqKind::List || v.as_list().kind == SeqKind::Tuple);
}

bool t_iterable(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("iterable", a);
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.object_as<Generator>() != nullptr;
}

bool t_callable(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("callable", a);
  return v.is_undefined() || (v.is_object() && v.as_object().is_callable());
}

bool t_odd(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("odd", a);
  return py_equal(binary_op(BinaryOp::Mod, v, Value(int64_t{2})), Value(int64_t{1}));
}

bool t_even(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("even", a);
  return py_equal(binary_op(BinaryOp::Mod, v, Value(int64_t{2})), Value(int64_t{0}));
}

bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  return py_equal(binary_op(BinaryOp::Mod, v, one_arg("divisibleby", a)), Value(int64_t{0}));
}

bool t_lower(Interpreter&, const Value& v, CallArgs& a) { no_arg("lower", a); return pystr::is_lower(py_str(v)); }
bool t_upper(Interpreter&, const Value& v, CallArgs& a) { no_arg("upper", a); return pystr::is_upper(py_str(v)); }

bool t_in(Interpreter&, const Value& v, CallArgs& a) { return contains(one_arg("in", a), v); }
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) { return v.same_as(one_arg("sameas", a)); }

bool t_eq(Interpreter&, const Value& v, CallArgs& a) { return py_equal(v, one_arg("eq", a)); }
bool t_ne(Interpreter&, const Value& v, CallArgs& a) { return !py_equal(v, one_arg("ne", a)); }
bool t_lt(Interpreter&, const Value& v, CallArgs& a) { return py_compare(v, one_arg("lt", a), "<") < 0; }
bool t_le(Interpreter&, const Value& v, CallArgs& a) { return py_compare(v, one_arg("le", a), "<=") <= 0; }
bool t_gt(Interpreter&, const Value& v, CallArgs& a) { return py_compare(v, one_arg("gt", a), ">") > 0; }
bool t_ge(Interpreter&, const Value& v, CallArgs& a) { return py_compare(v, one_arg("ge", a), ">=") >= 0; }

bool t_filter(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("filter", a);
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}

bool t_test(Interpreter&, const Value& v, CallArgs& a) {
  no_arg("test", a);
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::map<std::string, TestFn>& registry() {
  static const std::map<std::string, TestFn> r = {
      {"odd", t_odd},           {"even", t_even},         {"divisibleby", t_divisibleby},
      {"defined", t_defined},   {"undefined", t_undefined}, {"filter", t_filter},
      {"test", t_test},         {"none", t_none},         {"boolean", t_boolean},
      {"false", t_false},       {"true", t_true},         {"integer", t_integer},
      {"float", t_float},       {"lower", t_lower},       {"upper", t_upper},
      {"string", t_string},     {"mapping", t_mapping},   {"number", t_number},
      {"sequence", t_sequence}, {"iterable", t_iterable}, {"callable", t_callable},
      {"sameas", t_sameas},     {"escaped", t_escaped},   {"in", t_in},
      {"==", t_eq},             {"eq", t_eq},             {"equalto", t_eq},
      {"!=", t_ne},             {"ne", t_ne},             {">", t_gt},
      {"gt", t_gt},             {"greaterthan", t_gt},    {"ge", t_ge},
      {">=", t_ge},             {"<", t_lt},              {"lt", t_lt},
      {"lessthan", t_lt},       {"<=", t_le},             {"le", t_le},
  };
  return r;
}

}  // namespace

TestFn find_test(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace ds4::text::jinja
