// Checks Jinja2 makes at compile time: an unknown filter or test is an error unless it sits in an `if`
// statement or an inline if-expression, where Jinja2 defers the error to the moment it is called.
#pragma once
#include "text/jinja/ast.h"

namespace ds4::text::jinja {

// Throws a Template error "No filter named 'x'." / "No test named 'x'." with the line.
void check_filters_and_tests(const TemplateAst& ast);

}  // namespace ds4::text::jinja
