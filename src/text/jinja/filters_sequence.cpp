// Filters on sequences and mappings (jinja2/filters.py). Those that return generators in Jinja2 (map,
// select, items, unique, batch, ...) return a Generator here, so `|length` on them fails and
// `{% if xs|select(...) %}` is always true, exactly as in Python.
#include <algorithm>
#include <charconv>

#include "text/jinja/args.h"
#include "text/jinja/builtins.h"
#include "text/jinja/filter_tables.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/ops.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

Value ignore_case(const Value& v) { return v.is_string() ? Value(pystr::lower(v.as_string())) : v; }

// Jinja2's attribute path "a.b.0": each part looked up with getitem, digit parts as integers.

// Jinja2's attribute path "a.b.0": each part looked up with getitem, digit parts as integers.
std::vector<Value> attribute_parts(const Value& attribute) {
  std::vector<Value> parts;
  if (attribute.is_none() || attribute.is_undefined()) return parts;
  if (!attribute.is_string()) return {attribute};
  for (const auto& p : pystr::split(attribute.as_string(), std::string("."), -1)) {
    bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    int64_t index = 0;
    // A number too large for an index finds nothing either way; it stays a (missing) name.
    bool fits = digits && std::from_chars(p.data(), p.data() + p.size(), index).ec == std::errc();
    parts.push_back(fits ? Value(index) : Value(p));
  }
  return parts;
}

Value lookup_parts(Value item, const std::vector<Value>& parts, const Value* dflt = nullptr) {
  for (const auto& part : parts) {
    item = get_item(item, part);
    if (dflt && item.is_undefined()) item = *dflt;
  }
  return item;
}

// Sorting key per item: one value, or a list of values for "attr1,attr2".

// Sorting key per item: one value, or a list of values for "attr1,attr2".
std::vector<Value> multi_parts_key(const Value& item, const std::vector<std::vector<Value>>& parts, bool icase) {
  std::vector<Value> key;
  for (const auto& p : parts) {
    Value v = lookup_parts(item, p);
    key.push_back(icase ? ignore_case(v) : v);
  }
  return key;
}

int compare_keys(const std::vector<Value>& a, const std::vector<Value>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (py_equal(a[i], b[i])) continue;
    return py_compare(a[i], b[i]);
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// Python's sorted(values, key=..., reverse=...): stable in both directions.

// Python's sorted(values, key=..., reverse=...): stable in both directions.
std::vector<Value> sorted_by(std::vector<Value> values, const std::vector<std::vector<Value>>& keys, bool reverse) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int c = compare_keys(keys[a], keys[b]);
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> out;
  out.reserve(values.size());
  for (size_t i : order) out.push_back(std::move(values[i]));
  return out;
}

Value f_batch(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"}, 1);
  int64_t n = a.get_int(0, 1);
  std::vector<Value> out, cur;
  for (auto& item : iterate(v)) {
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
    cur.push_back(item);
  }
  if (!cur.empty()) {
    if (a.has(1) && !a.get(1).is_none())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(a.get(1));
    out.push_back(Value::list(std::move(cur)));
  }
  return make_generator(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) fail("'" + type_name(v) + "' object has no attribute 'items'");
  bool cs = a.get_bool(0, false);
  std::string by = a.has(1) ? py_str(a.get(1)) : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  size_t pos = by == "key" ? 0 : 1;
  std::vector<Value> items;
  std::vector<std::vector<Value>> keys;
  for (const auto& [k, val] : v.as_dict().entries) {
    items.push_back(Value::tuple({k, val}));
    const Value& key = pos == 0 ? k : val;
    keys.push_back({cs ? key : ignore_case(key)});
  }
  return Value::list(sorted_by(std::move(items), keys, a.get_bool(2, false)));
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("first", args);
  if (auto* g = v.object_as<Generator>()) {
    if (auto item = g->next()) return *item;
    return Value::undefined("No first item, sequence was empty.");
  }
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_groupby(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("groupby", args, {"attribute", "default", "case_sensitive"}, 1);
  auto parts = attribute_parts(a.get(0));
  bool cs = a.get_bool(2, false);
  const Value* dflt = a.has(1) && !a.get(1).is_none() ? &a.get(1) : nullptr;
  std::vector<Value> items = iterate(v);
  std::vector<std::vector<Value>> keys;
  for (const auto& item : items) {
    Value k = lookup_parts(item, parts, dflt);
    keys.push_back({cs ? k : ignore_case(k)});
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return compare_keys(keys[x], keys[y]) < 0; });
  std::vector<Value> out;
  size_t i = 0;
  while (i < order.size()) {
    size_t j = i;
    std::vector<Value> group;
    while (j < order.size() && py_equal(keys[order[j]][0], keys[order[i]][0])) group.push_back(items[order[j++]]);
    Value grouper = cs ? keys[order[i]][0] : lookup_parts(group.front(), parts, dflt);
    out.push_back(Value::tuple({grouper, Value::list(std::move(group))}));
    i = j;
  }
  return Value::list(std::move(out));
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("items", args);
  if (v.is_undefined()) return make_generator({});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::tuple({k, val}));
  return make_generator(std::move(out));
}

Value f_join(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  std::string sep = a.has(0) ? py_str(a.get(0)) : "";
  auto parts = attribute_parts(a.get(1));
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += py_str(a.has(1) && !a.get(1).is_none() ? lookup_parts(item, parts) : item);
    check_size(out.size());
  }
  return Value(std::move(out));
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("last", args);
  if (v.object_as<Generator>()) fail("'generator' object is not reversible");
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("length", args);
  return Value(py_len(v));
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("list", args);
  return Value::list(iterate(v));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  if (!truthy(v)) return make_generator({});
  std::vector<Value> out;
  bool by_attr = args.pos.empty() && std::any_of(args.kw.begin(), args.kw.end(), [](auto& kv) { return kv.first == "attribute"; });
  if (by_attr) {
    Value attribute, dflt = Value::none();
    for (auto& [k, val] : args.kw) {
      if (k == "attribute") attribute = val;
      else if (k == "default") dflt = val;
      else fail("Unexpected keyword argument '" + k + "'");
    }
    auto parts = attribute_parts(attribute);
    for (const auto& item : iterate(v)) out.push_back(lookup_parts(item, parts, dflt.is_none() ? nullptr : &dflt));
    return make_generator(std::move(out));
  }
  if (args.pos.empty()) fail("map requires a filter argument");
  std::string name = py_str(args.pos[0]);
  CallArgs rest{std::vector<Value>(args.pos.begin() + 1, args.pos.end()), args.kw};
  for (const auto& item : iterate(v)) {
    CallArgs each = rest;
    out.push_back(in.call_filter(name, item, each));
  }
  return make_generator(std::move(out));
}

Value min_or_max(const Value& v, CallArgs& args, const char* name, bool want_max) {
  BoundArgs a(name, args, {"case_sensitive", "attribute"});
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool cs = a.get_bool(0, false);
  auto parts = attribute_parts(a.get(1));
  auto key = [&](const Value& item) {
    Value k = lookup_parts(item, parts);
    return cs ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    int c = py_compare(k, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value f_max(Interpreter&, const Value& v, CallArgs& args) { return min_or_max(v, args, "max", true); }

Value f_min(Interpreter&, const Value& v, CallArgs& args) { return min_or_max(v, args, "min", false); }

Value select_or_reject(Interpreter& in, const Value& v, CallArgs& args, bool select, bool by_attr) {
  if (!truthy(v)) return make_generator({});
  size_t off = 0;
  std::vector<Value> attr_parts;
  if (by_attr) {
    if (args.pos.empty()) fail("Missing parameter for attribute name");
    attr_parts = attribute_parts(args.pos[0]);
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (args.pos.size() > off) {
    test = py_str(args.pos[off]);
    rest.pos.assign(args.pos.begin() + static_cast<long>(off) + 1, args.pos.end());
  }
  rest.kw = args.kw;
  std::vector<Value> out;
  for (const auto& item : iterate(v)) {
    Value x = by_attr ? lookup_parts(item, attr_parts) : item;
    bool ok;
    if (test) {
      CallArgs each = rest;
      ok = in.call_test(*test, x, each);
    } else {
      ok = truthy(x);
    }
    if (ok == select) out.push_back(item);
  }
  return make_generator(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, false); }

Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, false); }

Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, true); }

Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, true); }

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
  expect_no_args("reverse", args);
  if (v.is_string()) return get_slice(v, Value(), Value(), Value(int64_t{-1}));
  if (v.is_undefined()) return make_generator({});
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  // reversed() of a list is an iterator, not a list; a generator's items come back as a list.
  if (v.object_as<Generator>()) return Value::list(std::move(items));
  return make_generator(std::move(items));
}

Value f_slice(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("slice", args, {"slices", "fill_with"}, 1);
  auto seq = iterate(v);
  int64_t slices = a.get_int(0, 1);
  if (slices <= 0) fail("integer division or modulo by zero");
  auto length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices, extra = length % slices, offset = 0;
  std::vector<Value> out;
  for (int64_t n = 0; n < slices; ++n) {
    int64_t start = offset + n * per;
    if (n < extra) ++offset;
    int64_t end = offset + (n + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (a.has(1) && !a.get(1).is_none() && n >= extra) tmp.push_back(a.get(1));
    out.push_back(Value::list(std::move(tmp)));
  }
  return make_generator(std::move(out));
}

Value f_sort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool icase = !a.get_bool(1, false);
  std::vector<std::vector<Value>> parts;
  if (a.has(2) && a.get(2).is_string()) {
    for (const auto& p : pystr::split(a.get(2).as_string(), std::string(","), -1)) parts.push_back(attribute_parts(Value(p)));
  } else {
    parts.push_back(attribute_parts(a.get(2)));
  }
  auto items = iterate(v);
  std::vector<std::vector<Value>> keys;
  for (const auto& item : items) keys.push_back(multi_parts_key(item, parts, icase));
  return Value::list(sorted_by(std::move(items), keys, a.get_bool(0, false)));
}

Value f_sum(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  auto parts = attribute_parts(a.get(0));
  Value total = a.get_or(1, Value(int64_t{0}));
  for (const auto& item : iterate(v)) {
    Value x = a.has(0) && !a.get(0).is_none() ? lookup_parts(item, parts) : item;
    if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
    total = binary_op(BinaryOp::Add, total, x);
  }
  return total;
}

Value f_unique(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  bool cs = a.get_bool(0, false);
  auto parts = attribute_parts(a.get(1));
  std::vector<Value> out, seen;
  for (const auto& item : iterate(v)) {
    Value k = lookup_parts(item, parts);
    if (!cs) k = ignore_case(k);
    if (!is_hashable(k)) fail("unhashable type: '" + type_name(k) + "'");
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, k); })) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return make_generator(std::move(out));
}

}  // namespace

void add_sequence_filters(FilterTable& t) {
  t["batch"] = f_batch;
  t["count"] = f_length;
  t["dictsort"] = f_dictsort;
  t["first"] = f_first;
  t["groupby"] = f_groupby;
  t["items"] = f_items;
  t["join"] = f_join;
  t["last"] = f_last;
  t["length"] = f_length;
  t["list"] = f_list;
  t["map"] = f_map;
  t["max"] = f_max;
  t["min"] = f_min;
  t["reject"] = f_reject;
  t["rejectattr"] = f_rejectattr;
  t["reverse"] = f_reverse;
  t["select"] = f_select;
  t["selectattr"] = f_selectattr;
  t["slice"] = f_slice;
  t["sort"] = f_sort;
  t["sum"] = f_sum;
  t["unique"] = f_unique;
}

}  // namespace ds4::text::jinja
