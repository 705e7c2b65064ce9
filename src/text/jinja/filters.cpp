// The filter registry: Jinja2's built-in filters with transformers' `tojson` in place of Jinja2's.
#include "text/jinja/builtins.h"
#include "text/jinja/filter_tables.h"

namespace ds4::text::jinja {

namespace {

const FilterTable& registry() {
  static const FilterTable table = [] {
    FilterTable t;
    add_scalar_filters(t);
    add_sequence_filters(t);
    return t;
  }();
  return table;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace ds4::text::jinja
