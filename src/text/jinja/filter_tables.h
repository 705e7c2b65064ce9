// The two halves of the filter registry (filters_scalar.cpp, filters_sequence.cpp), joined in filters.cpp.
#pragma once
#include <map>
#include <string>

#include "text/jinja/builtins.h"

namespace ds4::text::jinja {

using FilterTable = std::map<std::string, FilterFn>;
void add_scalar_filters(FilterTable& t);
void add_sequence_filters(FilterTable& t);

}  // namespace ds4::text::jinja
