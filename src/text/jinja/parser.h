// Builds the syntax tree from tokens with Jinja2's grammar and operator precedence (jinja2/parser.py),
// including the loopcontrols extension (break/continue) and transformers' {% generation %} tag.
#pragma once
#include <memory>
#include <string>

#include "text/jinja/ast.h"

namespace ds4::text::jinja {

// Throws a Template error "template syntax error: ... (line L)" on invalid templates. Unknown filters and
// tests are errors here, except inside `if` statements and inline if-expressions, where Jinja2 defers
// them to render time.
std::shared_ptr<const TemplateAst> parse_template(const std::string& source);

}  // namespace ds4::text::jinja
