// Python's json.dumps, which transformers' `tojson` filter calls with ensure_ascii=False by default:
// ", " and ": " separators (or "," with an indent), floats as Python repr, non-ASCII kept as is.
#pragma once
#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace ds4::text::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line; "" for indent=0
  std::optional<std::string> item_separator, key_separator;
  bool sort_keys = false;
};

// Throws "Object of type X is not JSON serializable" for values JSON cannot hold.
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace ds4::text::jinja
