// Walks the syntax tree and writes the output, with Jinja2's runtime semantics: scopes (a loop body or
// macro call gets its own, `if` does not), the `loop` object, macros with defaults, `caller`, varargs and
// kwargs, namespaces, and Jinja2's undefined values. Limits on call depth, loop iterations and output
// size turn hostile templates into errors instead of crashes.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace ds4::text::jinja {

class Scope;
using ScopePtr = std::shared_ptr<Scope>;

// Variables of one frame; lookups continue in the parent (the enclosing frame, or a macro's definition site).
class Scope {
 public:
  explicit Scope(ScopePtr parent) : parent_(std::move(parent)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v);

 private:
  std::vector<std::pair<std::string, Value>> vars_;
  ScopePtr parent_;
};

struct RenderLimits {
  int max_call_depth = 100;                   // nested macro calls and recursive loops
  int64_t max_loop_iterations = 2'000'000;    // all loop iterations of one render
};

class Interpreter {
 public:
  explicit Interpreter(const TemplateAst& ast, RenderLimits limits = {});

  // Renders with `context` as the template's variables (over the globals). Errors are Template errors
  // whose message ends with the template line.
  std::string render(const DictData& context);

  // Used by built-ins that call back into the template (map, select, macros, loop.cycle...).
  Value call(const Value& callee, CallArgs& args);
  Value call_filter(const std::string& name, const Value& value, CallArgs& args);
  bool call_test(const std::string& name, const Value& value, CallArgs& args);

 private:
  enum class Flow { Normal, Break, Continue };
  friend class MacroObject;
  friend class LoopContext;

  Flow exec_body(const Body& body, const ScopePtr& scope);
  Flow exec(const Stmt& s, const ScopePtr& scope);
  Flow exec_for(const ForStmt& f, const ScopePtr& scope);
  void run_loop(const ForStmt& f, const ScopePtr& scope, const Value& iterable, int depth);
  std::string capture(const Body& body, const ScopePtr& scope, Flow* flow);
  void assign(const Target& t, const Value& v, Scope& scope);
  void emit(const std::string& s);

  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_node(const Expr& e, const ScopePtr& scope);
  Value eval_filter(const FilterExpr& f, const ScopePtr& scope);
  Value eval_compare(const CompareExpr& c, const ScopePtr& scope);
  CallArgs eval_args(const ArgsExpr& a, const ScopePtr& scope);

  Value invoke_macro(const MacroStmt& m, const ScopePtr& closure, CallArgs& args);
  Value recurse_loop(const ForStmt& f, const ScopePtr& scope, const Value& iterable, int depth);

  const TemplateAst& ast_;
  RenderLimits limits_;
  std::string* out_ = nullptr;
  const Value* block_input_ = nullptr;  // the captured body a filter block or `set` block filters
  int line_ = 0;
  int call_depth_ = 0;
  int64_t iterations_ = 0;
};

// A macro (or a call block's `caller`) closed over the scope it was defined in.
class MacroObject : public Object {
 public:
  MacroObject(const MacroStmt* def, ScopePtr closure) : def_(def), closure_(std::move(closure)) {}
  std::string type_name() const override { return "Macro"; }
  std::string repr() const override { return "<Macro '" + def_->name + "'>"; }
  std::optional<Value> get_attr(const std::string& name) const override;
  bool is_callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) const override { return in.invoke_macro(*def_, closure_, args); }

 private:
  const MacroStmt* def_;
  ScopePtr closure_;
};

// Jinja2's LoopContext: `loop.index`, `loop.first`, `loop.cycle(...)`, `loop(children)` in recursive loops.
class LoopContext : public Object, public std::enable_shared_from_this<LoopContext> {
 public:
  LoopContext(std::vector<Value> items, int depth, const ForStmt* loop, ScopePtr scope)
      : items_(std::move(items)), depth_(depth), loop_(loop), scope_(std::move(scope)) {}
  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override;
  std::optional<Value> get_attr(const std::string& name) const override;
  bool is_callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) const override;

  const std::vector<Value>& items() const { return items_; }
  void set_index(size_t i) { index0_ = i; }

 private:
  std::vector<Value> items_;
  size_t index0_ = 0;
  int depth_;
  const ForStmt* loop_;
  ScopePtr scope_;
  mutable std::optional<std::vector<Value>> last_changed_;
};

}  // namespace ds4::text::jinja
