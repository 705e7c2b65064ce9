// Expressions: names, literals, attribute and item access, calls, filters, tests, operators.
#include "core/error.h"
#include "text/jinja/builtins.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/ops.h"

namespace ds4::text::jinja {

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  line_ = e.line;
  Value v = eval_node(e, scope);
  line_ = e.line;  // errors after a nested call report this expression's line, not the callee's
  return v;
}

CallArgs Interpreter::eval_args(const ArgsExpr& a, const ScopePtr& scope) {
  CallArgs args;
  for (const auto& p : a.pos) args.pos.push_back(eval(*p, scope));
  for (const auto& [k, v] : a.kw) args.kw.emplace_back(k, eval(*v, scope));
  if (a.dyn_args) {
    for (auto& v : iterate(eval(*a.dyn_args, scope))) args.pos.push_back(std::move(v));
  }
  if (a.dyn_kwargs) {
    Value d = eval(*a.dyn_kwargs, scope);
    if (!d.is_dict()) fail("argument after ** must be a mapping, not " + type_name(d));
    for (const auto& [k, v] : d.as_dict().entries) {
      if (!k.is_string()) fail("keywords must be strings");
      args.kw.emplace_back(k.as_string(), v);
    }
  }
  return args;
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (callee.is_object() && callee.as_object().is_callable()) return callee.as_object().call(*this, args);
  fail("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::call_filter(const std::string& name, const Value& value, CallArgs& args) {
  FilterFn f = find_filter(name);
  if (!f) fail("No filter named '" + name + "' found.");
  return f(*this, value, args);
}

bool Interpreter::call_test(const std::string& name, const Value& value, CallArgs& args) {
  TestFn t = find_test(name);
  if (!t) fail("No test named '" + name + "' found.");
  return t(*this, value, args);
}

Value Interpreter::eval_filter(const FilterExpr& f, const ScopePtr& scope) {
  Value operand;
  if (f.operand) {
    operand = eval(*f.operand, scope);
  } else {
    if (!block_input_) fail("filter without an operand");
    operand = *block_input_;
  }
  CallArgs args = eval_args(f.args, scope);
  line_ = f.line;
  return call_filter(f.name, operand, args);
}

Value Interpreter::eval_compare(const CompareExpr& c, const ScopePtr& scope) {
  Value left = eval(*c.first, scope);
  for (const auto& [op, expr] : c.rest) {
    Value right = eval(*expr, scope);
    bool ok = false;
    switch (op) {
      case CompareOp::Eq: ok = py_equal(left, right); break;
      case CompareOp::Ne: ok = !py_equal(left, right); break;
      case CompareOp::Lt: ok = py_compare(left, right, "<") < 0; break;
      case CompareOp::Le: ok = py_compare(left, right, "<=") <= 0; break;
      case CompareOp::Gt: ok = py_compare(left, right, ">") > 0; break;
      case CompareOp::Ge: ok = py_compare(left, right, ">=") >= 0; break;
      case CompareOp::In: ok = contains(right, left); break;
      case CompareOp::NotIn: ok = !contains(right, left); break;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}


Value Interpreter::eval_node(const Expr& e, const ScopePtr& scope) {
  switch (e.type) {
    case ExprType::Const: return static_cast<const ConstExpr&>(e).value;
    case ExprType::Name: {
      const auto& n = static_cast<const NameExpr&>(e);
      if (const Value* v = scope->lookup(n.name)) return *v;
      return Value::undefined("'" + n.name + "' is undefined");
    }
    case ExprType::List: {
      const auto& l = static_cast<const ListExpr&>(e);
      std::vector<Value> items;
      items.reserve(l.items.size());
      for (const auto& i : l.items) items.push_back(eval(*i, scope));
      return Value::list(std::move(items), l.tuple ? SeqKind::Tuple : SeqKind::List);
    }
    case ExprType::Dict: {
      DictData d;
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Value key = eval(*k, scope);
        if (!is_hashable(key)) fail("unhashable type: '" + type_name(key) + "'");
        d.set(std::move(key), eval(*v, scope));
      }
      return Value::dict(std::move(d));
    }
    case ExprType::GetAttr: {
      const auto& g = static_cast<const GetAttrExpr&>(e);
      return get_attr(eval(*g.obj, scope), g.attr);
    }
    case ExprType::GetItem: {
      const auto& g = static_cast<const GetItemExpr&>(e);
      Value obj = eval(*g.obj, scope);
      if (g.index->type == ExprType::Slice) {
        const auto& s = static_cast<const SliceExpr&>(*g.index);
        Value start = s.start ? eval(*s.start, scope) : Value::none();
        Value stop = s.stop ? eval(*s.stop, scope) : Value::none();
        Value step = s.step ? eval(*s.step, scope) : Value::none();
        return get_slice(obj, start, stop, step);
      }
      return get_item(obj, eval(*g.index, scope));
    }
    case ExprType::Slice: fail("slice outside a subscript");
    case ExprType::Call: {
      const auto& c = static_cast<const CallExpr&>(e);
      Value callee = eval(*c.callee, scope);
      CallArgs args = eval_args(c.args, scope);
      line_ = e.line;
      return call(callee, args);
    }
    case ExprType::Filter: return eval_filter(static_cast<const FilterExpr&>(e), scope);
    case ExprType::Test: {
      const auto& t = static_cast<const TestExpr&>(e);
      Value operand = eval(*t.operand, scope);
      CallArgs args = eval_args(t.args, scope);
      line_ = e.line;
      return Value(call_test(t.name, operand, args));
    }
    case ExprType::Unary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      Value v = eval(*u.operand, scope);
      switch (u.op) {
        case UnaryOp::Not: return Value(!truthy(v));
        case UnaryOp::Neg: return negate(v);
        case UnaryOp::Pos: return unary_plus(v);
      }
      return v;
    }
    case ExprType::Binary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, scope);
      if (b.op == BinaryOp::And) return truthy(left) ? eval(*b.right, scope) : left;
      if (b.op == BinaryOp::Or) return truthy(left) ? left : eval(*b.right, scope);
      Value right = eval(*b.right, scope);
      return binary_op(b.op, left, right);
    }
    case ExprType::Concat: {
      std::string out;
      for (const auto& i : static_cast<const ConcatExpr&>(e).items) {
        out += py_str(eval(*i, scope));
        check_size(out.size());
      }
      return Value(std::move(out));
    }
    case ExprType::Compare: return eval_compare(static_cast<const CompareExpr&>(e), scope);
    case ExprType::Cond: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (truthy(eval(*c.test, scope))) return eval(*c.then, scope);
      if (c.otherwise) return eval(*c.otherwise, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  fail("unknown expression");
}

}  // namespace ds4::text::jinja
