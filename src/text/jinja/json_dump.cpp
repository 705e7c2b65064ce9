#include "text/jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/ops.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

// Python json's short escapes; false for a character without one.
bool short_escape(std::string& out, char32_t c) {
  switch (c) {
    case '"': out += "\\\""; return true;
    case '\\': out += "\\\\"; return true;
    case '\n': out += "\\n"; return true;
    case '\r': out += "\\r"; return true;
    case '\t': out += "\\t"; return true;
    case '\b': out += "\\b"; return true;
    case '\f': out += "\\f"; return true;
    default: return false;
  }
}

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  auto escape_cp = [&](char32_t cp) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
    out += buf;
  };
  if (!ensure_ascii) {
    // Bytes pass through (UTF-8 stays UTF-8); only controls are escaped.
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (short_escape(out, u)) continue;
      if (u < 0x20)
        escape_cp(u);
      else
        out += c;
    }
  } else {
    for (char32_t cp : pystr::decode(s)) {
      if (short_escape(out, cp)) continue;
      if (cp >= 0x20 && cp < 0x7F) {
        out += static_cast<char>(cp);
      } else if (cp >= 0x10000) {
        char32_t v = cp - 0x10000;
        escape_cp(0xD800 + (v >> 10));
        escape_cp(0xDC00 + (v & 0x3FF));
      } else {
        escape_cp(cp);
      }
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return pystr::float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
    key_sep_ = o.key_separator ? *o.key_separator : ": ";
  }

  void dump(const Value& v, int level) {
    if (level > 200) fail("maximum recursion depth exceeded while encoding a JSON object");
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out += float_json(v.as_float()); return;
      case Value::Kind::String: dump_string(out, v.as_string(), o_.ensure_ascii); return;
      case Value::Kind::List:
        if (v.as_list().kind == SeqKind::List || v.as_list().kind == SeqKind::Tuple) {
          dump_list(v.as_list().items, level);
          return;
        }
        break;
      case Value::Kind::Dict: dump_dict(v.as_dict(), level); return;
      case Value::Kind::Object:
        if (auto* big = v.object_as<BigInt>()) {
          out += big->digits();
          return;
        }
        break;
      default: break;
    }
    fail("Object of type " + type_name(v) + " is not JSON serializable");
  }

  std::string out;

 private:
  void newline(int level) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  void dump_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep_;
      newline(level + 1);
      dump(items[i], level + 1);
      check_size(out.size());
    }
    newline(level);
    out += ']';
  }

  std::string key_string(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::String: return k.as_string();
      case Value::Kind::None: return "null";
      case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
      case Value::Kind::Int: return std::to_string(k.as_int());
      case Value::Kind::Float: return float_json(k.as_float());
      default: fail("keys must be str, int, float, bool or None, not " + type_name(k));
    }
  }

  void dump_dict(const DictData& d, int level) {
    if (d.entries.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries) entries.push_back(&e);
    if (o_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](auto* a, auto* b) { return py_compare(a->first, b->first) < 0; });
    out += '{';
    bool first = true;
    for (const auto* e : entries) {
      if (!first) out += item_sep_;
      first = false;
      newline(level + 1);
      dump_string(out, key_string(e->first), o_.ensure_ascii);
      out += key_sep_;
      dump(e->second, level + 1);
      check_size(out.size());
    }
    newline(level);
    out += '}';
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, key_sep_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace ds4::text::jinja
