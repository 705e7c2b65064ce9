#include "text/jinja/parser.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "text/jinja/compile_checks.h"
#include "text/jinja/lexer.h"

namespace ds4::text::jinja {

namespace {

// Templates nest expressions and blocks only a few levels deep; the limit on the depth of the tree (which
// the parser, the checks and the interpreter all recurse over) turns hostile input into an error instead of
// a stack overflow. Left-associative chains (a.b.c, x|f|g, 1 + 2 + 3) count one level per link.
constexpr int kMaxNesting = 500;

using EndTokens = std::vector<std::string>;  // tag names that end the current body

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  std::shared_ptr<TemplateAst> parse() {
    auto ast = std::make_shared<TemplateAst>();
    ast->body = subparse(nullptr);
    return ast;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return toks_[pos_]; }
  const Token& look() const { return toks_[std::min(pos_ + 1, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool at_op(const char* op) const { return cur().is_op(op); }
  bool at_name(const char* n) const { return cur().is_name(n); }
  bool skip_op(const char* op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!at_name(n)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(const std::string& msg, int line) const {
    throw Error(ErrorKind::Template, "template syntax error: " + msg + " (line " + std::to_string(line) + ")");
  }
  [[noreturn]] void fail(const std::string& msg) const { fail(msg, cur().line); }

  const Token& expect(TokenType type, const char* what) {
    if (cur().type != type) {
      if (cur().type == TokenType::Eof)
        fail(std::string("unexpected end of template, expected '") + what + "'.");
      fail(std::string("expected token '") + what + "', got '" + describe(cur()) + "'");
    }
    return next();
  }
  const Token& expect_op(const char* op) {
    if (!at_op(op)) {
      if (cur().type == TokenType::Eof) fail(std::string("unexpected end of template, expected '") + op + "'.");
      fail(std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
    }
    return next();
  }
  const Token& expect_name(const char* n) {
    if (!at_name(n)) {
      if (cur().type == TokenType::Eof) fail(std::string("unexpected end of template, expected '") + n + "'.");
      fail(std::string("expected token '") + n + "', got '" + describe(cur()) + "'");
    }
    return next();
  }
  const Token& expect_block_end() { return expect(TokenType::BlockEnd, "end of statement block"); }

  // One more link of a left-associative chain; the levels are given back when the chain is complete.
  struct ChainGuard {
    Parser& p;
    int links = 0;
    explicit ChainGuard(Parser& parser) : p(parser) {}
    void deepen() {
      ++links;
      if (++p.depth_ > kMaxNesting) p.fail("template nesting is too deep");
    }
    ~ChainGuard() { p.depth_ -= links; }
  };

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail("template nesting is too deep");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ---- statements ----

  bool at_end_token(const EndTokens* end) const {
    if (!end || cur().type != TokenType::Name) return false;
    return std::find(end->begin(), end->end(), cur().value) != end->end();
  }

  Body subparse(const EndTokens* end) {
    DepthGuard guard(*this);
    if (end) end_stack_.push_back(*end);
    Body body;
    std::unique_ptr<OutputStmt> out;
    auto flush = [&] {
      if (out) body.push_back(std::move(out));
      out.reset();
    };
    auto output = [&](int line) -> OutputStmt& {
      if (!out) out = std::make_unique<OutputStmt>(line);
      return *out;
    };
    while (cur().type != TokenType::Eof) {
      const Token& t = cur();
      if (t.type == TokenType::Data) {
        output(t.line).parts.push_back({t.value, nullptr});
        next();
      } else if (t.type == TokenType::VarBegin) {
        next();
        auto e = parse_tuple(false, true, false);
        output(e->line).parts.push_back({"", std::move(e)});
        expect(TokenType::VarEnd, "end of print statement");
      } else if (t.type == TokenType::BlockBegin) {
        flush();
        next();
        if (at_end_token(end)) {
          if (end) end_stack_.pop_back();
          return body;
        }
        body.push_back(parse_statement());
        expect_block_end();
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
    flush();
    if (end) end_stack_.pop_back();
    return body;
  }

  Body parse_statements(const EndTokens& end, bool drop_needle) {
    skip_op(":");
    expect_block_end();
    Body body = subparse(&end);
    if (cur().type == TokenType::Eof) {
      end_stack_.push_back(end);  // Jinja2's fail_eof reports the body that was left open
      fail_unknown_tag(nullptr);
    }
    if (drop_needle) next();
    return body;
  }

  static std::string quote_list(const EndTokens& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i) out += " or ";
      out += "'" + names[i] + "'";
    }
    return out;
  }

  // Jinja2's message for an unknown tag or an unexpected end of template.
  [[noreturn]] void fail_unknown_tag(const std::string* name) {
    std::string msg = name ? "Encountered unknown tag '" + *name + "'." : "Unexpected end of template.";
    if (!end_stack_.empty()) {
      bool expected = false;
      for (const auto& names : end_stack_)
        if (name && std::find(names.begin(), names.end(), *name) != names.end()) expected = true;
      std::string looking = quote_list(end_stack_.back());
      if (expected)
        msg += " You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for " +
               looking + ".";
      else
        msg += " Jinja was looking for the following tags: " + looking + ".";
    }
    if (!tag_stack_.empty()) msg += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
    fail(msg);
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != TokenType::Name) fail("tag name expected");
    const std::string name = t.value;
    static const std::set<std::string> kUnsupported = {"block", "extends", "include", "import", "from",
                                                       "autoescape"};
    if (kUnsupported.count(name)) fail("the '" + name + "' tag is not supported in chat templates");
    tag_stack_.push_back(name);
    StmtPtr s;
    if (name == "for") s = parse_for();
    else if (name == "if") s = parse_if();
    else if (name == "set") s = parse_set();
    else if (name == "macro") s = parse_macro();
    else if (name == "call") s = parse_call_block();
    else if (name == "filter") s = parse_filter_block();
    else if (name == "with") s = parse_with();
    else if (name == "print") s = parse_print();
    else if (name == "break" || name == "continue") s = parse_loop_control();
    else if (name == "generation") s = parse_generation();
    else {
      tag_stack_.pop_back();
      fail_unknown_tag(&name);
    }
    tag_stack_.pop_back();
    return s;
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<ForStmt>(next().line);
    s->target = parse_assign_target(true, false);
    expect_name("in");
    s->iter = parse_tuple(false, false, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().value != "endfor") s->otherwise = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<IfStmt>(next().line);
    while (true) {
      auto test = parse_tuple(false, false, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(body));
      const Token& t = next();
      if (t.value == "elif") continue;
      if (t.value == "else") s->otherwise = parse_statements({"endif"}, true);
      break;
    }
    return s;
  }

  StmtPtr parse_set() {
    int line = next().line;
    Target target = parse_assign_target(true, false, true);
    if (skip_op("=")) {
      auto s = std::make_unique<SetStmt>(line);
      s->target = std::move(target);
      s->value = parse_tuple(false, true, false);
      return s;
    }
    auto s = std::make_unique<SetBlockStmt>(line);
    s->target = std::move(target);
    s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(MacroParams& params) {
    expect_op("(");
    while (!at_op(")")) {
      if (!params.names.empty()) expect_op(",");
      const Token& n = expect(TokenType::Name, "name");
      params.names.push_back(n.value);
      if (skip_op("="))
        params.defaults.push_back(parse_expression(true));
      else if (!params.defaults.empty())
        fail("non-default argument follows default argument");
    }
    expect_op(")");
  }

  // Jinja2 refuses a `caller` parameter without a default when the body refers to `caller`.
  void check_caller_param(const MacroStmt& m) const {
    const auto& names = m.params.names;
    auto caller = std::find(names.begin(), names.end(), "caller");
    if (m.uses_caller && caller != names.end() &&
        static_cast<size_t>(caller - names.begin()) < names.size() - m.params.defaults.size())
      fail("When defining macros or call blocks the special \"caller\" argument must be omitted or be given a default.",
           m.line);
  }

  Body parse_macro_body(MacroStmt& m, const EndTokens& end) {
    int saved_loop = loop_depth_;
    loop_depth_ = 0;
    macro_stack_.push_back(&m);
    Body body = parse_statements(end, true);
    macro_stack_.pop_back();
    loop_depth_ = saved_loop;
    check_caller_param(m);
    return body;
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<MacroStmt>(next().line);
    s->name = expect(TokenType::Name, "name").value;
    parse_signature(s->params);
    s->body = parse_macro_body(*s, {"endmacro"});
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = std::make_unique<CallBlockStmt>(next().line);
    s->caller.line = s->line;
    s->caller.name = "caller";
    if (at_op("(")) parse_signature(s->caller.params);
    s->call = parse_expression(true);
    if (s->call->type != ExprType::Call) fail("expected call", s->line);
    s->caller.body = parse_macro_body(s->caller, {"endcall"});
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<FilterBlockStmt>(next().line);
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<WithStmt>(next().line);
    while (cur().type != TokenType::BlockEnd) {
      if (!s->targets.empty()) expect_op(",");
      s->targets.push_back(parse_assign_target(true, false));
      expect_op("=");
      s->values.push_back(parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  StmtPtr parse_print() {
    auto s = std::make_unique<OutputStmt>(next().line);
    while (cur().type != TokenType::BlockEnd) {
      if (!s->parts.empty()) expect_op(",");
      s->parts.push_back({"", parse_expression(true)});
    }
    return s;
  }

  StmtPtr parse_loop_control() {
    const Token& t = next();
    if (loop_depth_ == 0) fail("'" + t.value + "' outside loop", t.line);
    return std::make_unique<LoopControlStmt>(t.value == "break" ? StmtType::Break : StmtType::Continue, t.line);
  }

  StmtPtr parse_generation() {
    auto s = std::make_unique<ScopeStmt>(next().line);
    s->body = parse_statements({"endgeneration"}, true);
    return s;
  }

  // ---- assignment targets ----

  Target parse_target_primary(bool with_namespace) {
    const Token& t = cur();
    Target target;
    target.line = t.line;
    if (t.type == TokenType::Name) {
      if (t.value == "true" || t.value == "false" || t.value == "True" || t.value == "False" || t.value == "none" ||
          t.value == "None")
        fail("can't assign to 'const'", t.line);
      next();
      if (with_namespace && at_op(".")) {
        next();
        target.kind = Target::Kind::NsAttr;
        target.name = t.value;
        target.attr = expect(TokenType::Name, "name").value;
        return target;
      }
      target.kind = Target::Kind::Name;
      target.name = t.value;
      return target;
    }
    if (t.is_op("(")) {
      next();
      Target inner = parse_target_tuple(with_namespace, true);
      expect_op(")");
      return inner;
    }
    if (t.type == TokenType::String || t.type == TokenType::Integer || t.type == TokenType::Float)
      fail("can't assign to 'const'", t.line);
    fail("can't assign to '" + describe(t) + "'", t.line);
  }

  Target parse_target_tuple(bool with_namespace, bool parenthesized) {
    Target tuple;
    tuple.kind = Target::Kind::Tuple;
    tuple.line = cur().line;
    bool is_tuple = false;
    while (true) {
      if (!tuple.items.empty()) expect_op(",");
      if (is_tuple_end()) break;
      tuple.items.push_back(parse_target_primary(with_namespace));
      if (at_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (tuple.items.empty()) {
        if (!parenthesized) fail("Expected an expression, got '" + describe(cur()) + "'");
        return tuple;
      }
      return std::move(tuple.items[0]);
    }
    return tuple;
  }

  Target parse_assign_target(bool with_tuple, bool name_only, bool with_namespace = false) {
    if (name_only) {
      Target t;
      t.line = cur().line;
      t.name = expect(TokenType::Name, "name").value;
      return t;
    }
    if (with_tuple) return parse_target_tuple(with_namespace, false);
    return parse_target_primary(with_namespace);
  }

  // ---- expressions ----

  // Only these end a tuple. Jinja2 also passes "extra end rules" (`in` after a for target, `recursive`
  // after its iterable), but its check never matches them (TokenStream.test_any receives the rules as one
  // tuple argument), so `{% for a, in x %}` reads `in` as a second target there, and so it does here.
  bool is_tuple_end() const {
    const Token& t = cur();
    return t.type == TokenType::VarEnd || t.type == TokenType::BlockEnd || t.is_op(")");
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    ChainGuard chain(*this);
    while (skip_name("if")) {
      chain.deepen();
      auto c = std::make_unique<CondExpr>(line);
      c->test = parse_or();
      if (skip_name("else")) c->otherwise = parse_condexpr();
      c->then = std::move(expr1);
      expr1 = std::move(c);
      line = cur().line;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    ChainGuard chain(*this);
    while (skip_name("or")) {
      chain.deepen();
      left = std::make_unique<BinaryExpr>(BinaryOp::Or, std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    ChainGuard chain(*this);
    while (skip_name("and")) {
      chain.deepen();
      left = std::make_unique<BinaryExpr>(BinaryOp::And, std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      DepthGuard guard(*this);
      int line = next().line;
      return std::make_unique<UnaryExpr>(UnaryOp::Not, parse_not(), line);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr expr = parse_math1();
    std::unique_ptr<CompareExpr> cmp;
    auto add = [&](CompareOp op) {
      if (!cmp) cmp = std::make_unique<CompareExpr>(std::move(expr), line);
      cmp->rest.emplace_back(op, parse_math1());
    };
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::Operator && (t.value == "==" || t.value == "!=" || t.value == "<" ||
                                            t.value == "<=" || t.value == ">" || t.value == ">=")) {
        std::string op = next().value;
        add(op == "==" ? CompareOp::Eq
            : op == "!=" ? CompareOp::Ne
            : op == "<"  ? CompareOp::Lt
            : op == "<=" ? CompareOp::Le
            : op == ">"  ? CompareOp::Gt
                         : CompareOp::Ge);
      } else if (skip_name("in")) {
        add(CompareOp::In);
      } else if (at_name("not") && look().is_name("in")) {
        next();
        next();
        add(CompareOp::NotIn);
      } else {
        break;
      }
    }
    if (!cmp) return expr;
    return cmp;
  }

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    ChainGuard chain(*this);
    while (at_op("+") || at_op("-")) {
      chain.deepen();
      BinaryOp op = next().value == "+" ? BinaryOp::Add : BinaryOp::Sub;
      left = std::make_unique<BinaryExpr>(op, std::move(left), parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!at_op("~")) return first;
    auto c = std::make_unique<ConcatExpr>(line);
    c->items.push_back(std::move(first));
    while (skip_op("~")) c->items.push_back(parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
    int line = cur().line;
    ExprPtr left = parse_pow();
    ChainGuard chain(*this);
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      chain.deepen();
      std::string v = next().value;
      BinaryOp op = v == "*" ? BinaryOp::Mul : v == "/" ? BinaryOp::Div : v == "//" ? BinaryOp::FloorDiv : BinaryOp::Mod;
      left = std::make_unique<BinaryExpr>(op, std::move(left), parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    ChainGuard chain(*this);
    while (skip_op("**")) {
      chain.deepen();
      left = std::make_unique<BinaryExpr>(BinaryOp::Pow, std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr node;
    if (at_op("-")) {
      next();
      node = std::make_unique<UnaryExpr>(UnaryOp::Neg, parse_unary(false), line);
    } else if (at_op("+")) {
      next();
      node = std::make_unique<UnaryExpr>(UnaryOp::Pos, parse_unary(false), line);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    int line = t.line;
    switch (t.type) {
      case TokenType::Name: {
        next();
        if (t.value == "true" || t.value == "True") return std::make_unique<ConstExpr>(Value(true), line);
        if (t.value == "false" || t.value == "False") return std::make_unique<ConstExpr>(Value(false), line);
        if (t.value == "none" || t.value == "None") return std::make_unique<ConstExpr>(Value::none(), line);
        for (MacroStmt* m : macro_stack_) {
          if (t.value == "caller") m->uses_caller = true;
          if (t.value == "varargs") m->uses_varargs = true;
          if (t.value == "kwargs") m->uses_kwargs = true;
        }
        return std::make_unique<NameExpr>(t.value, line);
      }
      case TokenType::String: {
        std::string s = next().value;
        while (cur().type == TokenType::String) s += next().value;
        return std::make_unique<ConstExpr>(Value(std::move(s)), line);
      }
      case TokenType::Integer: return std::make_unique<ConstExpr>(Value(next().int_value), line);
      case TokenType::Float: return std::make_unique<ConstExpr>(Value(next().float_value), line);
      case TokenType::Operator:
        if (t.value == "(") {
          next();
          ExprPtr e = parse_tuple(false, true, true);
          expect_op(")");
          return e;
        }
        if (t.value == "[") return parse_list();
        if (t.value == "{") return parse_dict();
        break;
      default: break;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, bool explicit_parens) {
    DepthGuard guard(*this);
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end()) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (at_op(","))
        is_tuple = true;
      else
        break;
      line = cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto t = std::make_unique<ListExpr>(true, line);
    t->items = std::move(args);
    return t;
  }

  ExprPtr parse_list() {
    auto l = std::make_unique<ListExpr>(false, expect_op("[").line);
    while (!at_op("]")) {
      if (!l->items.empty()) expect_op(",");
      if (at_op("]")) break;
      l->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return l;
  }

  ExprPtr parse_dict() {
    auto d = std::make_unique<DictExpr>(expect_op("{").line);
    while (!at_op("}")) {
      if (!d->items.empty()) expect_op(",");
      if (at_op("}")) break;
      ExprPtr key = parse_expression(true);
      expect_op(":");
      d->items.emplace_back(std::move(key), parse_expression(true));
    }
    expect_op("}");
    return d;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    ChainGuard chain(*this);
    while (at_op(".") || at_op("[") || at_op("(")) {
      chain.deepen();
      if (at_op("("))
        node = parse_call(std::move(node));
      else
        node = parse_subscript(std::move(node));
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    ChainGuard chain(*this);
    while (at_op("|") || at_name("is") || at_op("(")) {
      chain.deepen();
      if (at_op("|"))
        node = parse_filter(std::move(node), false);
      else if (at_name("is"))
        node = parse_test(std::move(node));
      else
        node = parse_call(std::move(node));
    }
    return node;
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(*this);
    const Token& t = next();
    int line = t.line;
    if (t.value == ".") {
      const Token& attr = next();
      if (attr.type == TokenType::Name) return std::make_unique<GetAttrExpr>(std::move(node), attr.value, line);
      if (attr.type != TokenType::Integer) fail("expected name or number", attr.line);
      return std::make_unique<GetItemExpr>(std::move(node),
                                           std::make_unique<ConstExpr>(Value(attr.int_value), attr.line), line);
    }
    std::vector<ExprPtr> args;
    while (!at_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    if (args.size() == 1) return std::make_unique<GetItemExpr>(std::move(node), std::move(args[0]), line);
    auto t2 = std::make_unique<ListExpr>(true, line);
    t2->items = std::move(args);
    return std::make_unique<GetItemExpr>(std::move(node), std::move(t2), line);
  }

  ExprPtr parse_subscribed() {
    int line = cur().line;
    auto slice = std::make_unique<SliceExpr>(line);
    if (at_op(":")) {
      next();
    } else {
      ExprPtr e = parse_expression(true);
      if (!at_op(":")) return e;
      next();
      slice->start = std::move(e);
    }
    if (!at_op(":") && !at_op("]") && !at_op(",")) slice->stop = parse_expression(true);
    if (skip_op(":")) {
      if (!at_op("]") && !at_op(",")) slice->step = parse_expression(true);
    }
    return slice;
  }

  ArgsExpr parse_call_args() {
    const Token& open = expect_op("(");
    int line = open.line;
    ArgsExpr a;
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", line);
    };
    while (!at_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (at_op(")")) break;
      }
      if (at_op("*")) {
        ensure(!a.dyn_args && !a.dyn_kwargs);
        next();
        a.dyn_args = parse_expression(true);
      } else if (at_op("**")) {
        ensure(!a.dyn_kwargs);
        next();
        a.dyn_kwargs = parse_expression(true);
      } else if (cur().type == TokenType::Name && look().is_op("=")) {
        ensure(!a.dyn_kwargs);
        std::string key = next().value;
        next();
        a.kw.emplace_back(key, parse_expression(true));
      } else {
        ensure(!a.dyn_args && !a.dyn_kwargs && a.kw.empty());
        a.pos.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
    return a;
  }

  ExprPtr parse_call(ExprPtr node) {
    auto c = std::make_unique<CallExpr>(std::move(node), cur().line);
    c->args = parse_call_args();
    return c;
  }

  std::string parse_dotted_name() {
    std::string name = expect(TokenType::Name, "name").value;
    while (at_op(".")) {
      next();
      name += "." + expect(TokenType::Name, "name").value;
    }
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    ChainGuard chain(*this);
    while (at_op("|") || start_inline) {
      chain.deepen();
      if (!start_inline) next();
      int line = cur().line;
      auto f = std::make_unique<FilterExpr>(std::move(node), parse_dotted_name(), line);
      if (at_op("(")) f->args = parse_call_args();
      node = std::move(f);
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = next().line;  // 'is'
    bool negated = skip_name("not");
    auto t = std::make_unique<TestExpr>(std::move(node), parse_dotted_name(), line);
    const Token& c = cur();
    if (c.is_op("(")) {
      t->args = parse_call_args();
    } else if ((c.type == TokenType::Name || c.type == TokenType::String || c.type == TokenType::Integer ||
                c.type == TokenType::Float || c.is_op("[") || c.is_op("{")) &&
               !c.is_name("else") && !c.is_name("or") && !c.is_name("and")) {
      if (c.is_name("is")) fail("You cannot chain multiple tests with is");
      t->args.pos.push_back(parse_postfix(parse_primary()));
    }
    if (negated) return std::make_unique<UnaryExpr>(UnaryOp::Not, std::move(t), line);
    return t;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<EndTokens> end_stack_;
  std::vector<std::string> tag_stack_;
  std::vector<MacroStmt*> macro_stack_;
};

}  // namespace

std::shared_ptr<const TemplateAst> parse_template(const std::string& source) {
  try {
    auto ast = Parser(tokenize(source)).parse();
    check_filters_and_tests(*ast);
    return ast;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Template, std::string("template syntax error: ") + e.what());
  }
}

}  // namespace ds4::text::jinja
