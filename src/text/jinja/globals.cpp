// Global functions: Jinja2's defaults (range with the sandbox's size limit, dict, namespace, cycler,
// joiner) and the two transformers adds (raise_exception, strftime_now).
#include <sys/time.h>

#include <ctime>

#include "core/error.h"
#include "text/jinja/args.h"
#include "text/jinja/builtins.h"

namespace ds4::text::jinja {

namespace {

// jinja2.sandbox.MAX_RANGE
constexpr int64_t kMaxRange = 100000;

Value g_range(Interpreter&, CallArgs& args) {
  if (!args.kw.empty()) fail("range() takes no keyword arguments");
  if (args.pos.empty() || args.pos.size() > 3)
    fail("range expected at most 3 arguments, got " + std::to_string(args.pos.size()));
  std::vector<int64_t> n;
  for (const auto& v : args.pos) {
    if (!(v.is_int() || v.is_bool())) {
      if (v.is_undefined()) fail_undefined(v);
      fail(not_an_integer(v));
    }
    n.push_back(v.as_int());
  }
  int64_t start = 0, stop, step = 1;
  if (n.size() == 1) {
    stop = n[0];
  } else {
    start = n[0];
    stop = n[1];
    if (n.size() == 3) step = n[2];
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  __int128 len = 0;
  if (step > 0 && stop > start) len = (static_cast<__int128>(stop) - start + step - 1) / step;
  if (step < 0 && stop < start) len = (static_cast<__int128>(start) - stop - step - 1) / -step;
  if (len > kMaxRange)
    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(kMaxRange) + ").");
  std::vector<Value> out;
  for (int64_t i = 0; i < static_cast<int64_t>(len); ++i) out.emplace_back(start + i * step);
  return Value::list(std::move(out));
}

// dict(*args, **kwargs): a mapping or an iterable of pairs, then keywords.
DictData build_dict(const char* fn, CallArgs& args) {
  if (args.pos.size() > 1) fail(std::string(fn) + " expected at most 1 argument, got " + std::to_string(args.pos.size()));
  DictData d;
  if (!args.pos.empty()) {
    const Value& src = args.pos[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const auto& item : iterate(src)) {
        auto pair = iterate(item);
        if (pair.size() != 2)
          fail("dictionary update sequence element has length " + std::to_string(pair.size()) + "; 2 is required");
        d.set(pair[0], pair[1]);
      }
    }
  }
  for (auto& [k, v] : args.kw) d.set(Value(k), v);
  return d;
}

Value g_dict(Interpreter&, CallArgs& args) { return Value::dict(build_dict("dict", args)); }

Value g_namespace(Interpreter&, CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  ns->attrs() = build_dict("namespace", args);
  return Value::object(ns);
}

Value g_raise_exception(Interpreter&, CallArgs& args) {
  BoundArgs a("raise_exception", args, {"message"}, 1);
  throw Error(ErrorKind::Template, py_str(a.get(0)));
}

Value g_strftime_now(Interpreter&, CallArgs& args) {
  BoundArgs a("strftime_now", args, {"format"}, 1);
  if (!a.get(0).is_string()) fail("strftime() argument 1 must be str, not " + type_name(a.get(0)));
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  // datetime.strftime handles %f (microseconds) itself; the rest is the C library's strftime.
  std::string fmt;
  const std::string& in = a.get(0).as_string();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 1 < in.size()) {
      if (in[i + 1] == 'f') {
        char buf[8];
        std::snprintf(buf, sizeof buf, "%06ld", static_cast<long>(tv.tv_usec));
        fmt += buf;
      } else {
        fmt += in[i];
        fmt += in[i + 1];
      }
      ++i;
    } else {
      fmt += in[i];
    }
  }
  if (fmt.empty()) return Value("");
  std::vector<char> buf(fmt.size() * 8 + 256);
  size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  return Value(std::string(buf.data(), n));
}

// jinja2.utils.Cycler
class Cycler : public Object, public std::enable_shared_from_this<Cycler> {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  std::optional<Value> get_attr(const std::string& name) const override {
    auto self = std::const_pointer_cast<Cycler>(shared_from_this());
    if (name == "current") return items_[pos_];
    if (name == "next")
      return make_builtin("next", [self](Interpreter&, CallArgs&) {
        Value v = self->items_[self->pos_];
        self->pos_ = (self->pos_ + 1) % self->items_.size();
        return v;
      });
    if (name == "reset")
      return make_builtin("reset", [self](Interpreter&, CallArgs&) {
        self->pos_ = 0;
        return Value::none();
      });
    return std::nullopt;
  }

 private:
  std::vector<Value> items_;
  mutable size_t pos_ = 0;
};

Value g_cycler(Interpreter&, CallArgs& args) {
  if (args.pos.empty()) fail("at least one item has to be provided");
  return Value::object(std::make_shared<Cycler>(args.pos));
}

// jinja2.utils.Joiner: "" on the first call, the separator afterwards.
class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  bool is_callable() const override { return true; }
  Value call(Interpreter&, CallArgs&) const override {
    if (!used_) {
      used_ = true;
      return Value("");
    }
    return Value(sep_);
  }

 private:
  std::string sep_;
  mutable bool used_ = false;
};

Value g_joiner(Interpreter&, CallArgs& args) {
  BoundArgs a("joiner", args, {"sep"});
  return Value::object(std::make_shared<Joiner>(a.has(0) ? py_str(a.get(0)) : ", "));
}

// `self` (the template reference) exists in Jinja2; blocks, its only use, are not supported here.
class TemplateReference : public Object {
 public:
  std::string type_name() const override { return "TemplateReference"; }
  std::string repr() const override { return "<TemplateReference None>"; }
};

Value g_lipsum(Interpreter&, CallArgs&) { fail("lipsum() is not supported (its output is random)"); }

}  // namespace

DictData make_globals() {
  DictData g;
  g.set(Value("range"), make_builtin("range", g_range));
  g.set(Value("dict"), make_builtin("dict", g_dict));
  g.set(Value("namespace"), make_builtin("namespace", g_namespace));
  g.set(Value("cycler"), make_builtin("cycler", g_cycler));
  g.set(Value("joiner"), make_builtin("joiner", g_joiner));
  g.set(Value("lipsum"), make_builtin("lipsum", g_lipsum));
  g.set(Value("self"), Value::object(std::make_shared<TemplateReference>()));
  g.set(Value("raise_exception"), make_builtin("raise_exception", g_raise_exception));
  g.set(Value("strftime_now"), make_builtin("strftime_now", g_strftime_now));
  return g;
}

}  // namespace ds4::text::jinja
