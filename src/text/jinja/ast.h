// The syntax tree the parser builds and the interpreter walks. Node kinds mirror jinja2.nodes so that the
// evaluation order and scoping of Jinja2 carry over one to one.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace ds4::text::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// ---- expressions ----

enum class ExprType {
  Const, Name, List, Dict, GetAttr, GetItem, Slice, Call, Filter, Test, Unary, Binary, Concat, Compare, Cond
};

struct Expr {
  ExprType type;
  int line = 0;
  explicit Expr(ExprType t, int l) : type(t), line(l) {}
  virtual ~Expr() = default;
};

struct ConstExpr : Expr {
  Value value;
  ConstExpr(Value v, int l) : Expr(ExprType::Const, l), value(std::move(v)) {}
};

struct NameExpr : Expr {
  std::string name;
  NameExpr(std::string n, int l) : Expr(ExprType::Name, l), name(std::move(n)) {}
};

// A list literal, or a tuple (`a, b` or `(a, b)`).
struct ListExpr : Expr {
  std::vector<ExprPtr> items;
  bool tuple = false;
  ListExpr(bool t, int l) : Expr(ExprType::List, l), tuple(t) {}
};

struct DictExpr : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  explicit DictExpr(int l) : Expr(ExprType::Dict, l) {}
};

// obj.attr: attribute first, then item (Jinja's getattr).
struct GetAttrExpr : Expr {
  ExprPtr obj;
  std::string attr;
  GetAttrExpr(ExprPtr o, std::string a, int l) : Expr(ExprType::GetAttr, l), obj(std::move(o)), attr(std::move(a)) {}
};

// obj[index]: item first, then attribute (Jinja's getitem). `index` may be a SliceExpr.
struct GetItemExpr : Expr {
  ExprPtr obj, index;
  GetItemExpr(ExprPtr o, ExprPtr i, int l) : Expr(ExprType::GetItem, l), obj(std::move(o)), index(std::move(i)) {}
};

struct SliceExpr : Expr {
  ExprPtr start, stop, step;  // each may be null
  explicit SliceExpr(int l) : Expr(ExprType::Slice, l) {}
};

struct ArgsExpr {
  std::vector<ExprPtr> pos;
  std::vector<std::pair<std::string, ExprPtr>> kw;
  ExprPtr dyn_args, dyn_kwargs;  // *args, **kwargs
};

struct CallExpr : Expr {
  ExprPtr callee;
  ArgsExpr args;
  CallExpr(ExprPtr c, int l) : Expr(ExprType::Call, l), callee(std::move(c)) {}
};

// value|name(args). `operand` is null for the innermost filter of a filter block or `set` block.
struct FilterExpr : Expr {
  ExprPtr operand;
  std::string name;
  ArgsExpr args;
  FilterExpr(ExprPtr o, std::string n, int l) : Expr(ExprType::Filter, l), operand(std::move(o)), name(std::move(n)) {}
};

struct TestExpr : Expr {
  ExprPtr operand;
  std::string name;
  ArgsExpr args;
  TestExpr(ExprPtr o, std::string n, int l) : Expr(ExprType::Test, l), operand(std::move(o)), name(std::move(n)) {}
};

enum class UnaryOp { Neg, Pos, Not };
struct UnaryExpr : Expr {
  UnaryOp op;
  ExprPtr operand;
  UnaryExpr(UnaryOp o, ExprPtr e, int l) : Expr(ExprType::Unary, l), op(o), operand(std::move(e)) {}
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, And, Or };
struct BinaryExpr : Expr {
  BinaryOp op;
  ExprPtr left, right;
  BinaryExpr(BinaryOp o, ExprPtr a, ExprPtr b, int l)
      : Expr(ExprType::Binary, l), op(o), left(std::move(a)), right(std::move(b)) {}
};

// a ~ b ~ c: every operand converted with str() and joined.
struct ConcatExpr : Expr {
  std::vector<ExprPtr> items;
  explicit ConcatExpr(int l) : Expr(ExprType::Concat, l) {}
};

enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
// a < b <= c chains like Python.
struct CompareExpr : Expr {
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
  CompareExpr(ExprPtr f, int l) : Expr(ExprType::Compare, l), first(std::move(f)) {}
};

// `then if test else otherwise`; `otherwise` may be null.
struct CondExpr : Expr {
  ExprPtr test, then, otherwise;
  explicit CondExpr(int l) : Expr(ExprType::Cond, l) {}
};

// ---- assignment targets ----

struct Target {
  enum class Kind { Name, Tuple, NsAttr };
  Kind kind = Kind::Name;
  std::string name;             // Name, or the namespace variable of NsAttr
  std::string attr;             // NsAttr
  std::vector<Target> items;    // Tuple
  int line = 0;
};

// ---- statements ----

enum class StmtType { Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue, Scope };

struct Stmt {
  StmtType type;
  int line = 0;
  Stmt(StmtType t, int l) : type(t), line(l) {}
  virtual ~Stmt() = default;
};

// Template text and {{ expressions }} in source order; a part with a null expr is text.
struct OutputStmt : Stmt {
  struct Part {
    std::string text;
    ExprPtr expr;
  };
  std::vector<Part> parts;
  explicit OutputStmt(int l) : Stmt(StmtType::Output, l) {}
};

struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body otherwise;
  explicit IfStmt(int l) : Stmt(StmtType::If, l) {}
};

struct ForStmt : Stmt {
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  bool recursive = false;
  Body body, otherwise;
  explicit ForStmt(int l) : Stmt(StmtType::For, l) {}
};

struct SetStmt : Stmt {
  Target target;
  ExprPtr value;
  explicit SetStmt(int l) : Stmt(StmtType::Set, l) {}
};

// {% set x | filter %}body{% endset %}
struct SetBlockStmt : Stmt {
  Target target;
  ExprPtr filter;  // a FilterExpr chain whose innermost operand is null; may be null
  Body body;
  explicit SetBlockStmt(int l) : Stmt(StmtType::SetBlock, l) {}
};

struct MacroParams {
  std::vector<std::string> names;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() names
};

struct MacroStmt : Stmt {
  std::string name;
  MacroParams params;
  Body body;
  // Whether the body refers to these names, which changes how Jinja2 binds extra arguments.
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
  explicit MacroStmt(int l) : Stmt(StmtType::Macro, l) {}
};

// {% call(params) macro(args) %}body{% endcall %}: the body becomes `caller` inside the macro.
struct CallBlockStmt : Stmt {
  ExprPtr call;  // a CallExpr
  MacroStmt caller{0};
  explicit CallBlockStmt(int l) : Stmt(StmtType::CallBlock, l) {}
};

struct FilterBlockStmt : Stmt {
  ExprPtr filter;  // innermost operand null
  Body body;
  explicit FilterBlockStmt(int l) : Stmt(StmtType::FilterBlock, l) {}
};

struct WithStmt : Stmt {
  std::vector<Target> targets;
  std::vector<ExprPtr> values;
  Body body;
  explicit WithStmt(int l) : Stmt(StmtType::With, l) {}
};

struct LoopControlStmt : Stmt {
  explicit LoopControlStmt(StmtType t, int l) : Stmt(t, l) {}
};

// A body rendered in place: transformers' {% generation %} tag, which only marks assistant spans.
struct ScopeStmt : Stmt {
  Body body;
  explicit ScopeStmt(int l) : Stmt(StmtType::Scope, l) {}
};

struct TemplateAst {
  Body body;
};

}  // namespace ds4::text::jinja
