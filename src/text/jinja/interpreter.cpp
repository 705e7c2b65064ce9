// Statements: output, if, for (with the loop object), set, macros and call blocks, filter blocks, with.
#include "text/jinja/interpreter.h"

#include "core/error.h"
#include "text/jinja/builtins.h"
#include "text/jinja/ops.h"

namespace ds4::text::jinja {

// ---- Scope ----

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_.get())
    for (const auto& [k, v] : s->vars_)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars_) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars_.emplace_back(name, std::move(v));
}

// ---- Interpreter ----

Interpreter::Interpreter(const TemplateAst& ast, RenderLimits limits) : ast_(ast), limits_(limits) {}

std::string Interpreter::render(const DictData& context) {
  auto globals = std::make_shared<Scope>(nullptr);
  for (auto& [k, v] : make_globals().entries) globals->set(k.as_string(), v);
  auto top = std::make_shared<Scope>(globals);
  for (const auto& [k, v] : context.entries)
    if (k.is_string()) top->set(k.as_string(), v);
  std::string out;
  out_ = &out;
  try {
    exec_body(ast_.body, top);
  } catch (const Error& e) {
    throw Error(ErrorKind::Template, std::string(e.what()) + " (template line " + std::to_string(line_) + ")");
  } catch (const std::exception& e) {
    // A library error (an out-of-range number, memory) is still the template's error to report.
    throw Error(ErrorKind::Template, std::string(e.what()) + " (template line " + std::to_string(line_) + ")");
  }
  return out;
}

void Interpreter::emit(const std::string& s) {
  out_->append(s);
  check_size(out_->size());
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

std::string Interpreter::capture(const Body& body, const ScopePtr& scope, Flow* flow) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    Flow f = exec_body(body, scope);
    if (flow) *flow = f;
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

void Interpreter::assign(const Target& t, const Value& v, Scope& scope) {
  switch (t.kind) {
    case Target::Kind::Name: scope.set(t.name, v); return;
    case Target::Kind::NsAttr: {
      const Value* ns = scope.lookup(t.name);
      Namespace* obj = ns ? ns->object_as<Namespace>() : nullptr;
      if (!obj) fail("cannot assign attribute on non-namespace object");
      obj->set_attr(t.attr, v);
      return;
    }
    case Target::Kind::Tuple: {
      std::vector<Value> items = iterate(v);
      size_t n = t.items.size();
      if (items.size() < n)
        fail("not enough values to unpack (expected " + std::to_string(n) + ", got " + std::to_string(items.size()) + ")");
      if (items.size() > n) fail("too many values to unpack (expected " + std::to_string(n) + ")");
      for (size_t i = 0; i < n; ++i) assign(t.items[i], items[i], scope);
      return;
    }
  }
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
  line_ = s.line;
  switch (s.type) {
    case StmtType::Output:
      for (const auto& part : static_cast<const OutputStmt&>(s).parts) {
        if (part.expr)
          emit(py_str(eval(*part.expr, scope)));
        else
          emit(part.text);
      }
      return Flow::Normal;
    case StmtType::If: {
      const auto& i = static_cast<const IfStmt&>(s);
      for (const auto& [test, body] : i.branches)
        if (truthy(eval(*test, scope))) return exec_body(body, scope);
      return exec_body(i.otherwise, scope);
    }
    case StmtType::For: return exec_for(static_cast<const ForStmt&>(s), scope);
    case StmtType::Set: {
      const auto& st = static_cast<const SetStmt&>(s);
      assign(st.target, eval(*st.value, scope), *scope);
      return Flow::Normal;
    }
    case StmtType::SetBlock: {
      const auto& st = static_cast<const SetBlockStmt&>(s);
      Flow flow = Flow::Normal;
      Value body(capture(st.body, std::make_shared<Scope>(scope), &flow));
      if (st.filter) {
        const Value* saved = block_input_;
        block_input_ = &body;
        Value filtered = eval(*st.filter, scope);
        block_input_ = saved;
        body = filtered;
      }
      assign(st.target, body, *scope);
      return flow;
    }
    case StmtType::Macro: {
      const auto& m = static_cast<const MacroStmt&>(s);
      scope->set(m.name, Value::object(std::make_shared<MacroObject>(&m, scope)));
      return Flow::Normal;
    }
    case StmtType::CallBlock: {
      const auto& cb = static_cast<const CallBlockStmt&>(s);
      const auto& call = static_cast<const CallExpr&>(*cb.call);
      Value callee = eval(*call.callee, scope);
      CallArgs args = eval_args(call.args, scope);
      args.kw.emplace_back("caller", Value::object(std::make_shared<MacroObject>(&cb.caller, scope)));
      Value result = this->call(callee, args);
      line_ = s.line;
      emit(py_str(result));
      return Flow::Normal;
    }
    case StmtType::FilterBlock: {
      const auto& fb = static_cast<const FilterBlockStmt&>(s);
      Flow flow = Flow::Normal;
      Value body(capture(fb.body, std::make_shared<Scope>(scope), &flow));
      const Value* saved = block_input_;
      block_input_ = &body;
      Value filtered = eval(*fb.filter, scope);
      block_input_ = saved;
      emit(py_str(filtered));
      return flow;
    }
    case StmtType::With: {
      const auto& w = static_cast<const WithStmt&>(s);
      std::vector<Value> values;
      for (const auto& v : w.values) values.push_back(eval(*v, scope));
      auto inner = std::make_shared<Scope>(scope);
      for (size_t i = 0; i < values.size(); ++i) assign(w.targets[i], values[i], *inner);
      return exec_body(w.body, inner);
    }
    case StmtType::Scope:
      return exec_body(static_cast<const ScopeStmt&>(s).body, std::make_shared<Scope>(scope));
    case StmtType::Break: return Flow::Break;
    case StmtType::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

// ---- loops ----

Interpreter::Flow Interpreter::exec_for(const ForStmt& f, const ScopePtr& scope) {
  run_loop(f, scope, eval(*f.iter, scope), 1);
  return Flow::Normal;
}

void Interpreter::run_loop(const ForStmt& f, const ScopePtr& scope, const Value& iterable, int depth) {
  std::vector<Value> items = iterate(iterable);
  if (f.filter) {
    std::vector<Value> kept;
    for (auto& item : items) {
      auto fs = std::make_shared<Scope>(scope);
      assign(f.target, item, *fs);
      if (truthy(eval(*f.filter, fs))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(f.otherwise, std::make_shared<Scope>(scope));
    return;
  }
  auto loop = std::make_shared<LoopContext>(std::move(items), depth, &f, scope);
  Value loop_value = Value::object(loop);
  for (size_t i = 0; i < loop->items().size(); ++i) {
    if (++iterations_ > limits_.max_loop_iterations)
      fail("template exceeded the limit of " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
    loop->set_index(i);
    auto body_scope = std::make_shared<Scope>(scope);
    assign(f.target, loop->items()[i], *body_scope);
    body_scope->set("loop", loop_value);
    if (exec_body(f.body, body_scope) == Flow::Break) break;
  }
}

Value Interpreter::recurse_loop(const ForStmt& f, const ScopePtr& scope, const Value& iterable, int depth) {
  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    fail("maximum recursion depth exceeded");
  }
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    run_loop(f, scope, iterable, depth);
  } catch (...) {
    out_ = saved;
    --call_depth_;
    throw;
  }
  out_ = saved;
  --call_depth_;
  return Value(std::move(buf));
}

std::string LoopContext::repr() const {
  return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(items_.size()) + ">";
}

std::optional<Value> LoopContext::get_attr(const std::string& name) const {
  auto n = static_cast<int64_t>(items_.size());
  auto i = static_cast<int64_t>(index0_);
  if (name == "index") return Value(i + 1);
  if (name == "index0") return Value(i);
  if (name == "revindex") return Value(n - i);
  if (name == "revindex0") return Value(n - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == n - 1);
  if (name == "length") return Value(n);
  if (name == "depth") return Value(static_cast<int64_t>(depth_));
  if (name == "depth0") return Value(static_cast<int64_t>(depth_ - 1));
  if (name == "previtem")
    return i > 0 ? items_[index0_ - 1] : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return i + 1 < n ? items_[index0_ + 1] : Value::undefined("there is no next item");
  if (name == "cycle") {
    auto self = std::static_pointer_cast<const LoopContext>(shared_from_this());
    return make_builtin("cycle", [self](Interpreter&, CallArgs& args) {
      if (args.pos.empty()) fail("no items for cycling given");
      return args.pos[self->index0_ % args.pos.size()];
    });
  }
  if (name == "changed") {
    auto self = std::static_pointer_cast<const LoopContext>(shared_from_this());
    return make_builtin("changed", [self](Interpreter&, CallArgs& args) {
      if (self->last_changed_) {
        const auto& last = *self->last_changed_;
        bool same = last.size() == args.pos.size();
        for (size_t k = 0; same && k < last.size(); ++k) same = py_equal(last[k], args.pos[k]);
        if (same) return Value(false);
      }
      self->last_changed_ = args.pos;
      return Value(true);
    });
  }
  return std::nullopt;
}

Value LoopContext::call(Interpreter& in, CallArgs& args) const {
  if (!loop_->recursive) fail("The loop must be marked 'recursive' to be called recursively.");
  if (args.pos.size() != 1 || !args.kw.empty()) fail("loop() takes exactly one argument (the items to iterate)");
  return in.recurse_loop(*loop_, scope_, args.pos[0], depth_ + 1);
}

// ---- macros ----

std::optional<Value> MacroObject::get_attr(const std::string& name) const {
  if (name == "name") return Value(def_->name);
  if (name == "arguments") {
    std::vector<Value> names;
    for (const auto& n : def_->params.names) names.emplace_back(n);
    return Value::tuple(std::move(names));
  }
  if (name == "catch_kwargs") return Value(def_->uses_kwargs);
  if (name == "catch_varargs") return Value(def_->uses_varargs);
  if (name == "caller") return Value(def_->uses_caller);
  return std::nullopt;
}

// Binds arguments the way jinja2.runtime.Macro.__call__ does, then renders the body in a new scope.
Value Interpreter::invoke_macro(const MacroStmt& m, const ScopePtr& closure, CallArgs& args) {
  const auto& names = m.params.names;
  const size_t n = names.size();
  const std::string quoted = "'" + m.name + "'";
  std::vector<std::optional<Value>> bound(n);
  for (size_t i = 0; i < n && i < args.pos.size(); ++i) bound[i] = args.pos[i];
  auto kwargs = args.kw;
  auto take_kw = [&](const std::string& name) -> std::optional<Value> {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == name) {
        Value v = it->second;
        kwargs.erase(it);
        return v;
      }
    }
    return std::nullopt;
  };
  bool found_caller = false;
  if (args.pos.size() < n) {
    for (size_t i = args.pos.size(); i < n; ++i) {
      bound[i] = take_kw(names[i]);
      if (names[i] == "caller") found_caller = true;
    }
  } else {
    found_caller = std::find(names.begin(), names.end(), "caller") != names.end();
  }
  std::optional<Value> caller;
  if (m.uses_caller && !found_caller) {
    caller = take_kw("caller");
    if (!caller || caller->is_none()) caller = Value::undefined("No caller defined");
  }
  Value kwargs_value;
  if (m.uses_kwargs) {
    DictData d;
    for (auto& [k, v] : kwargs) d.set(Value(k), v);
    kwargs_value = Value::dict(std::move(d));
  } else if (!kwargs.empty()) {
    for (const auto& kv : kwargs)
      if (kv.first == "caller")
        fail("macro " + quoted + " was invoked with two values for the special caller argument. This is most likely a bug.");
    fail("macro " + quoted + " takes no keyword argument '" + kwargs.front().first + "'");
  }
  Value varargs_value;
  if (m.uses_varargs) {
    std::vector<Value> extra;
    for (size_t i = n; i < args.pos.size(); ++i) extra.push_back(args.pos[i]);
    varargs_value = Value::tuple(std::move(extra));
  } else if (args.pos.size() > n) {
    fail("macro " + quoted + " takes not more than " + std::to_string(n) + " argument(s)");
  }

  if (++call_depth_ > limits_.max_call_depth) {
    --call_depth_;
    fail("maximum recursion depth exceeded");
  }
  struct DepthRelease {
    int& d;
    ~DepthRelease() { --d; }
  } release{call_depth_};

  auto scope = std::make_shared<Scope>(closure);
  const size_t first_default = n - m.params.defaults.size();
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) {
      scope->set(names[i], *bound[i]);
    } else if (i >= first_default) {
      scope->set(names[i], eval(*m.params.defaults[i - first_default], scope));
    } else {
      scope->set(names[i], Value::undefined("parameter '" + names[i] + "' was not provided"));
    }
  }
  if (caller) scope->set("caller", *caller);
  if (m.uses_kwargs) scope->set("kwargs", kwargs_value);
  if (m.uses_varargs) scope->set("varargs", varargs_value);
  return Value(capture(m.body, scope, nullptr));
}

}  // namespace ds4::text::jinja
