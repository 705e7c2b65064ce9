// Splits template source into tokens exactly as Jinja2's lexer does with the options transformers sets
// (trim_blocks, lstrip_blocks, keep_trailing_newline off): whitespace control `{%- -%}`, `+%}`, raw blocks,
// comments, and newline normalisation all happen here, so the parser sees only the text that is output.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4::text::jinja {

enum class TokenType : uint8_t {
  Data,        // template text, already whitespace-controlled
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // value holds the unescaped string
  Integer,
  Float,
  Operator,    // value holds the operator text: + - * / // % ** ~ ( ) [ ] { } . , : | = == != < <= > >= ;
  Eof,
};

struct Token {
  TokenType type = TokenType::Eof;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;

  bool is_op(const char* op) const { return type == TokenType::Operator && value == op; }
  bool is_name(const char* name) const { return type == TokenType::Name && value == name; }
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws a Template error ("... (line L, column C)") for unterminated tags, strings or comments and
// unexpected characters.
std::vector<Token> tokenize(const std::string& source, const LexerOptions& options = {});

// A printable description of a token for parser errors, e.g. "end of print statement" or "'foo'".
std::string describe(const Token& t);

}  // namespace ds4::text::jinja
