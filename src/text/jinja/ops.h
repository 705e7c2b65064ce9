// Python operators on template values (int/float arithmetic, sequence concatenation and repetition,
// `in`) and Jinja2's sandboxed attribute and item lookup, which decide what `a.b` and `a[b]` mean.
#pragma once
#include <optional>
#include <string>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace ds4::text::jinja {

Value binary_op(BinaryOp op, const Value& a, const Value& b);  // arithmetic ops only (not and/or)
Value negate(const Value& v);
Value unary_plus(const Value& v);
bool contains(const Value& container, const Value& item);  // `item in container`
bool is_hashable(const Value& v);                           // can be a dict key (not list/dict, tuples of such)

// a.name: attribute first (methods of str/dict/list), then item; undefined with Jinja2's hint otherwise.
Value get_attr(const Value& obj, const std::string& name);
// a[key]: item first, then attribute for string keys.
Value get_item(const Value& obj, const Value& key);
// a[start:stop:step] on str, list and tuple; each bound may be None/undefined (absent).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Python int arithmetic with an explicit error where a result leaves 64 bits (Python would grow the int).
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);

// Jinja2's object_type_repr(), used in undefined messages: "dict object", "None".
std::string object_type_repr(const Value& v);

// Limits that turn runaway templates into errors rather than exhausting memory.
constexpr size_t kMaxStringBytes = size_t{256} << 20;
void check_size(size_t bytes);

}  // namespace ds4::text::jinja
