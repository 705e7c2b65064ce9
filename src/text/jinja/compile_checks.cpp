// Checks Jinja2 makes when it compiles a template rather than when it renders it.
#include "text/jinja/compile_checks.h"

#include "core/error.h"
#include "text/jinja/builtins.h"

namespace ds4::text::jinja {

namespace {

// Jinja2 reports unknown filters and tests when compiling, unless they sit in an `if` statement or an
// inline if-expression (a "soft" frame), where the error waits until the filter is actually called.
// Frames that Jinja2 opens anew (loop bodies, macros, blocks) are not soft again.
class NameChecker {
 public:
  void body(const Body& b, bool soft) {
    for (const auto& s : b) stmt(*s, soft);
  }

 private:
  void args(const ArgsExpr& a, bool soft) {
    for (const auto& e : a.pos) expr(e.get(), soft);
    for (const auto& kv : a.kw) expr(kv.second.get(), soft);
    expr(a.dyn_args.get(), soft);
    expr(a.dyn_kwargs.get(), soft);
  }

  void expr(const Expr* e, bool soft) {
    if (!e) return;
    switch (e->type) {
      case ExprType::Const: case ExprType::Name: return;
      case ExprType::List:
        for (const auto& i : static_cast<const ListExpr*>(e)->items) expr(i.get(), soft);
        return;
      case ExprType::Dict:
        for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
          expr(k.get(), soft);
          expr(v.get(), soft);
        }
        return;
      case ExprType::GetAttr: expr(static_cast<const GetAttrExpr*>(e)->obj.get(), soft); return;
      case ExprType::GetItem: {
        auto* g = static_cast<const GetItemExpr*>(e);
        expr(g->obj.get(), soft);
        expr(g->index.get(), soft);
        return;
      }
      case ExprType::Slice: {
        auto* s = static_cast<const SliceExpr*>(e);
        expr(s->start.get(), soft);
        expr(s->stop.get(), soft);
        expr(s->step.get(), soft);
        return;
      }
      case ExprType::Call: {
        auto* c = static_cast<const CallExpr*>(e);
        expr(c->callee.get(), soft);
        args(c->args, soft);
        return;
      }
      case ExprType::Filter: {
        auto* f = static_cast<const FilterExpr*>(e);
        if (!soft && !find_filter(f->name))
          throw Error(ErrorKind::Template, "template error: No filter named '" + f->name + "'. (line " +
                                               std::to_string(f->line) + ")");
        expr(f->operand.get(), soft);
        args(f->args, soft);
        return;
      }
      case ExprType::Test: {
        auto* t = static_cast<const TestExpr*>(e);
        if (!soft && !find_test(t->name))
          throw Error(ErrorKind::Template, "template error: No test named '" + t->name + "'. (line " +
                                               std::to_string(t->line) + ")");
        expr(t->operand.get(), soft);
        args(t->args, soft);
        return;
      }
      case ExprType::Unary: expr(static_cast<const UnaryExpr*>(e)->operand.get(), soft); return;
      case ExprType::Binary: {
        auto* b = static_cast<const BinaryExpr*>(e);
        expr(b->left.get(), soft);
        expr(b->right.get(), soft);
        return;
      }
      case ExprType::Concat:
        for (const auto& i : static_cast<const ConcatExpr*>(e)->items) expr(i.get(), soft);
        return;
      case ExprType::Compare: {
        auto* c = static_cast<const CompareExpr*>(e);
        expr(c->first.get(), soft);
        for (const auto& r : c->rest) expr(r.second.get(), soft);
        return;
      }
      case ExprType::Cond: {
        auto* c = static_cast<const CondExpr*>(e);
        expr(c->test.get(), true);
        expr(c->then.get(), true);
        expr(c->otherwise.get(), true);
        return;
      }
    }
  }

  void macro(const MacroStmt& m) {
    for (const auto& d : m.params.defaults) expr(d.get(), false);
    body(m.body, false);
  }

  void stmt(const Stmt& s, bool soft) {
    switch (s.type) {
      case StmtType::Output:
        for (const auto& p : static_cast<const OutputStmt&>(s).parts) expr(p.expr.get(), soft);
        return;
      case StmtType::If: {
        const auto& i = static_cast<const IfStmt&>(s);
        for (const auto& [test, b] : i.branches) {
          expr(test.get(), true);
          body(b, true);
        }
        body(i.otherwise, true);
        return;
      }
      case StmtType::For: {
        const auto& f = static_cast<const ForStmt&>(s);
        expr(f.iter.get(), soft);
        expr(f.filter.get(), false);
        body(f.body, false);
        body(f.otherwise, false);
        return;
      }
      case StmtType::Set: expr(static_cast<const SetStmt&>(s).value.get(), soft); return;
      case StmtType::SetBlock: {
        const auto& b = static_cast<const SetBlockStmt&>(s);
        expr(b.filter.get(), false);
        body(b.body, false);
        return;
      }
      case StmtType::Macro: macro(static_cast<const MacroStmt&>(s)); return;
      case StmtType::CallBlock: {
        const auto& c = static_cast<const CallBlockStmt&>(s);
        expr(c.call.get(), soft);
        macro(c.caller);
        return;
      }
      case StmtType::FilterBlock: {
        const auto& f = static_cast<const FilterBlockStmt&>(s);
        expr(f.filter.get(), false);
        body(f.body, false);
        return;
      }
      case StmtType::With: {
        const auto& w = static_cast<const WithStmt&>(s);
        for (const auto& v : w.values) expr(v.get(), soft);
        body(w.body, false);
        return;
      }
      case StmtType::Scope: body(static_cast<const ScopeStmt&>(s).body, false); return;
      case StmtType::Break: case StmtType::Continue: return;
    }
  }
};

}  // namespace

void check_filters_and_tests(const TemplateAst& ast) { NameChecker().body(ast.body, false); }

}  // namespace ds4::text::jinja
