#include "text/jinja/lexer.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "text/jinja/pystr.h"

namespace ds4::text::jinja {

namespace {

// Newlines of any style become "\n" and one trailing newline is dropped, as Jinja2 does before lexing.
std::string normalize_source(const std::string& src, bool keep_trailing_newline) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Decodes the code point at `pos` (the source is valid UTF-8, checked up front) and its byte length.
char32_t cp_at(const std::string& s, size_t pos, size_t* len) {
  auto c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
  *len = n;
  return pystr::decode(std::string_view(s).substr(pos, n))[0];
}

bool is_ident_start(char32_t cp) { return cp == '_' || pystr::is_alpha(cp); }
bool is_ident_char(char32_t cp) { return cp == '_' || pystr::is_alnum(cp) || (cp >= 0x300 && cp <= 0x36F); }
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

class Lexer {
 public:
  Lexer(const std::string& source, const LexerOptions& opts)
      : src_(normalize_source(source, opts.keep_trailing_newline)), opts_(opts) {
    pystr::decode(src_);  // rejects invalid UTF-8 before anything else
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    push(TokenType::Eof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  enum class Tag { None, Raw, Var, Block, Comment };

  [[noreturn]] void fail_at(const std::string& msg, size_t pos) {
    auto [line, col] = position(pos);
    throw Error(ErrorKind::Template,
                "template syntax error: " + msg + " (line " + std::to_string(line) + ", column " +
                    std::to_string(col) + ")");
  }

  int line_of(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    return static_cast<int>(it - line_starts_.begin());
  }

  // Line and column (in characters) for error messages only: counting characters per token would make
  // lexing a long line quadratic.
  std::pair<int, int> position(size_t pos) const {
    int line = line_of(pos);
    size_t start = line_starts_[static_cast<size_t>(line) - 1];
    size_t col = pystr::length(std::string_view(src_).substr(start, pos - start));
    return {line, static_cast<int>(col) + 1};
  }

  Token& push(TokenType type, std::string value, size_t pos) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line_of(pos);
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  size_t skip_space(size_t p) const {
    while (p < src_.size()) {
      size_t len;
      if (!pystr::is_space(cp_at(src_, p, &len))) break;
      p += len;
    }
    return p;
  }

  bool only_space(std::string_view s) const {
    if (s.empty()) return false;
    for (char32_t cp : pystr::decode(s))
      if (!pystr::is_space(cp)) return false;
    return true;
  }

  // `{% raw %}` / `{%- raw -%}` at p: returns the end of the opening tag, or npos.
  size_t match_raw_begin(size_t p) const {
    size_t q = p + 2;
    if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
    q = skip_space(q);
    if (src_.compare(q, 3, "raw") != 0) return std::string::npos;
    q = skip_space(q + 3);
    if (src_.compare(q, 3, "-%}") == 0) return skip_space(q + 3);
    if (src_.compare(q, 2, "%}") == 0) return q + 2;
    return std::string::npos;
  }

  // Applies the lstrip/`-` rules of Jinja2's OptionalLStrip to the text before a tag.
  std::string control_text(std::string text, char sign, bool is_variable) {
    if (sign == '-') return pystr::strip(text, std::nullopt, false, true);
    if (sign != '+' && opts_.lstrip_blocks && !is_variable) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && only_space(std::string_view(text).substr(l_pos))) text.resize(l_pos);
    }
    return text;
  }

  void lex_root() {
    // Earliest tag opener from pos_.
    size_t p = pos_;
    Tag tag = Tag::None;
    size_t raw_end = std::string::npos;
    for (; p + 1 < src_.size(); ++p) {
      if (src_[p] != '{') continue;
      char c = src_[p + 1];
      if (c == '%') {
        raw_end = match_raw_begin(p);
        tag = raw_end != std::string::npos ? Tag::Raw : Tag::Block;
        break;
      }
      if (c == '{') {
        tag = Tag::Var;
        break;
      }
      if (c == '#') {
        tag = Tag::Comment;
        break;
      }
    }
    if (tag == Tag::None) {
      push(TokenType::Data, src_.substr(pos_), pos_);
      pos_ = src_.size();
      return;
    }
    char sign = (p + 2 < src_.size() && (src_[p + 2] == '-' || src_[p + 2] == '+')) ? src_[p + 2] : 0;
    std::string text = control_text(src_.substr(pos_, p - pos_), sign, tag == Tag::Var);
    if (!text.empty()) push(TokenType::Data, std::move(text), pos_);
    size_t after = p + 2 + (sign ? 1 : 0);
    switch (tag) {
      case Tag::Raw:
        line_starting_ = raw_end > 0 && src_[raw_end - 1] == '\n';
        pos_ = raw_end;
        lex_raw_body(p);
        return;
      case Tag::Var:
        push(TokenType::VarBegin, "{{", p);
        pos_ = after;
        lex_tag(false);
        return;
      case Tag::Block:
        push(TokenType::BlockBegin, "{%", p);
        pos_ = after;
        lex_tag(true);
        return;
      case Tag::Comment:
        pos_ = after;
        lex_comment(p);
        return;
      case Tag::None: return;
    }
  }

  void lex_comment(size_t open) {
    for (size_t p = pos_; p < src_.size(); ++p) {
      if (src_.compare(p, 3, "+#}") == 0) {
        pos_ = p + 3;
        line_starting_ = false;
        return;
      }
      if (src_.compare(p, 3, "-#}") == 0) {
        pos_ = skip_space(p + 3);
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
        return;
      }
      if (src_.compare(p, 2, "#}") == 0) {
        pos_ = p + 2;
        if (opts_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
        line_starting_ = src_[pos_ - 1] == '\n';
        return;
      }
    }
    fail_at("Missing end of comment tag", open);
  }

  void lex_raw_body(size_t open) {
    for (size_t p = pos_; p + 1 < src_.size(); ++p) {
      if (src_[p] != '{' || src_[p + 1] != '%') continue;
      size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_space(q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(q + 6);
      size_t end;
      if (src_.compare(q, 3, "+%}") == 0) {
        end = q + 3;
      } else if (src_.compare(q, 3, "-%}") == 0) {
        end = skip_space(q + 3);
      } else if (src_.compare(q, 2, "%}") == 0) {
        end = q + 2;
        if (opts_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = control_text(src_.substr(pos_, p - pos_), sign, false);
      if (!text.empty()) push(TokenType::Data, std::move(text), pos_);
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail_at("Missing end of raw directive", open);
  }

  // Tokens inside {{ }} or {% %} until the matching end delimiter (only when brackets are balanced).
  void lex_tag(bool block) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) fail_at(block ? "unexpected end of template, expected end of statement block"
                                             : "unexpected end of template, expected end of print statement",
                                       pos_);
      if (balance.empty() && try_tag_end(block)) return;
      size_t len;
      char32_t cp = cp_at(src_, pos_, &len);
      if (pystr::is_space(cp)) {
        pos_ = skip_space(pos_);
        continue;
      }
      if (lex_number() || lex_name(cp) || lex_string()) continue;
      lex_operator(balance);
    }
  }

  bool try_tag_end(bool block) {
    if (block) {
      if (src_.compare(pos_, 3, "+%}") == 0) {
        push(TokenType::BlockEnd, "%}", pos_);
        pos_ += 3;
        line_starting_ = false;
        return true;
      }
      if (src_.compare(pos_, 3, "-%}") == 0) {
        push(TokenType::BlockEnd, "%}", pos_);
        pos_ = skip_space(pos_ + 3);
        line_starting_ = src_[pos_ - 1] == '\n';
        return true;
      }
      if (src_.compare(pos_, 2, "%}") == 0) {
        push(TokenType::BlockEnd, "%}", pos_);
        pos_ += 2;
        if (opts_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
        line_starting_ = src_[pos_ - 1] == '\n';
        return true;
      }
      return false;
    }
    if (src_.compare(pos_, 3, "-}}") == 0) {
      push(TokenType::VarEnd, "}}", pos_);
      pos_ = skip_space(pos_ + 3);
      line_starting_ = src_[pos_ - 1] == '\n';
      return true;
    }
    if (src_.compare(pos_, 2, "}}") == 0) {
      push(TokenType::VarEnd, "}}", pos_);
      pos_ += 2;
      line_starting_ = false;
      return true;
    }
    return false;
  }

  // Digits with single underscores between them (Python literal syntax); returns the end or `p` if none.
  size_t scan_digits(size_t p, int (*is_digit)(int)) const {
    size_t q = p;
    if (q >= src_.size() || !is_digit(static_cast<unsigned char>(src_[q]))) return p;
    ++q;
    while (q < src_.size()) {
      if (is_digit(static_cast<unsigned char>(src_[q]))) {
        ++q;
      } else if (src_[q] == '_' && q + 1 < src_.size() && is_digit(static_cast<unsigned char>(src_[q + 1]))) {
        q += 2;
      } else {
        break;
      }
    }
    return q;
  }

  static std::string strip_underscores(std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    return s;
  }

  bool lex_number() {
    const size_t p = pos_;
    if (!std::isdigit(static_cast<unsigned char>(src_[p]))) return false;
    // Float: digits, then a fraction and/or an exponent (never directly after a '.').
    if (p == 0 || src_[p - 1] != '.') {
      size_t q = scan_digits(p, isdigit);
      size_t frac_end = q;
      bool has_frac = false;
      if (q < src_.size() && src_[q] == '.') {
        size_t f = scan_digits(q + 1, isdigit);
        if (f > q + 1) {
          frac_end = f;
          has_frac = true;
        }
      }
      size_t e = frac_end;
      bool has_exp = false;
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t s = e + 1;
        if (s < src_.size() && (src_[s] == '+' || src_[s] == '-')) ++s;
        size_t d = scan_digits(s, isdigit);
        if (d > s) {
          e = d;
          has_exp = true;
        }
      }
      if (has_frac || has_exp) {
        size_t end = has_exp ? e : frac_end;
        auto& t = push(TokenType::Float, src_.substr(p, end - p), p);
        t.float_value = std::strtod(strip_underscores(t.value).c_str(), nullptr);
        pos_ = end;
        return true;
      }
    }
    // Integer: 0b / 0o / 0x prefixes, decimal without leading zeros, or zeros.
    int base = 10;
    size_t start = p, end;
    char c1 = p + 1 < src_.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(src_[p + 1]))) : 0;
    auto prefixed = [&](int b, int (*pred)(int)) {
      size_t q = p + 2;
      size_t last = q;
      while (q < src_.size()) {
        size_t r = q;
        if (src_[r] == '_') ++r;
        if (r < src_.size() && pred(static_cast<unsigned char>(src_[r]))) {
          q = r + 1;
          last = q;
        } else {
          break;
        }
      }
      if (last == p + 2) return false;
      base = b;
      start = p + 2;
      end = last;
      return true;
    };
    static auto is_bin = [](int c) { return static_cast<int>(c == '0' || c == '1'); };
    static auto is_oct = [](int c) { return static_cast<int>(c >= '0' && c <= '7'); };
    static auto is_zero = [](int c) { return static_cast<int>(c == '0'); };
    if (src_[p] == '0' && c1 == 'b' && prefixed(2, is_bin)) {
    } else if (src_[p] == '0' && c1 == 'o' && prefixed(8, is_oct)) {
    } else if (src_[p] == '0' && c1 == 'x' && prefixed(16, isxdigit)) {
    } else if (src_[p] == '0') {
      end = scan_digits(p, is_zero);
    } else {
      end = scan_digits(p, isdigit);
    }
    std::string digits = strip_underscores(src_.substr(start, end - start));
    errno = 0;
    char* stop = nullptr;
    unsigned long long v = std::strtoull(digits.c_str(), &stop, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      fail_at("integer literal too large (only 64-bit integers are supported)", p);
    auto& t = push(TokenType::Integer, src_.substr(p, end - p), p);
    t.int_value = static_cast<int64_t>(v);
    pos_ = end;
    return true;
  }

  bool lex_name(char32_t cp) {
    if (!is_ident_start(cp)) return false;
    size_t p = pos_, len;
    while (p < src_.size() && is_ident_char(cp_at(src_, p, &len))) p += len;
    push(TokenType::Name, src_.substr(pos_, p - pos_), pos_);
    pos_ = p;
    return true;
  }

  bool lex_string() {
    char q = src_[pos_];
    if (q != '\'' && q != '"') return false;
    size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != q) {
      if (src_[p] == '\\') {
        if (p + 1 >= src_.size()) break;
        ++p;
      }
      ++p;
    }
    if (p >= src_.size()) fail_at(std::string("unexpected char '") + q + "'", pos_);
    push(TokenType::String, unescape(src_.substr(pos_ + 1, p - pos_ - 1), pos_), pos_);
    pos_ = p + 1;
    return true;
  }

  // Python's "unicode-escape" decoding, which Jinja2 applies to string literals.
  std::string unescape(const std::string& s, size_t at) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      char c = s[++i];
      auto hex = [&](int n) -> char32_t {
        if (i + static_cast<size_t>(n) >= s.size())
          fail_at("truncated escape sequence in string literal", at);
        for (int k = 1; k <= n; ++k)
          if (!is_hex(s[i + k])) fail_at("truncated escape sequence in string literal", at);
        auto v = static_cast<char32_t>(std::stoul(s.substr(i + 1, n), nullptr, 16));
        i += n;
        if (v > 0x10FFFF) fail_at("illegal Unicode character in string literal", at);
        return v;
      };
      switch (c) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': pystr::append_utf8(out, hex(2)); break;
        case 'u': pystr::append_utf8(out, hex(4)); break;
        case 'U': pystr::append_utf8(out, hex(8)); break;
        case 'N': fail_at("\\N{...} escapes are not supported", at);
        default:
          if (c >= '0' && c <= '7') {
            char32_t v = static_cast<char32_t>(c - '0');
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
              v = v * 8 + static_cast<char32_t>(s[++i] - '0');
            pystr::append_utf8(out, v);
          } else {
            out += '\\';
            out += c;
          }
      }
    }
    return out;
  }

  void lex_operator(std::vector<char>& balance) {
    static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        push(TokenType::Operator, op, pos_);
        pos_ += 2;
        return;
      }
    }
    static const std::string kOne = "+-/*%~[](){}><=.:|,;";
    char c = src_[pos_];
    if (kOne.find(c) == std::string::npos) {
      size_t len;
      std::string ch;
      pystr::append_utf8(ch, cp_at(src_, pos_, &len));
      fail_at("unexpected char '" + ch + "'", pos_);
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail_at(std::string("unexpected '") + c + "'", pos_);
      char expected = balance.back();
      balance.pop_back();
      if (expected != c) fail_at(std::string("unexpected '") + c + "', expected '" + expected + "'", pos_);
    }
    push(TokenType::Operator, std::string(1, c), pos_);
    ++pos_;
  }

  std::string src_;
  LexerOptions opts_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::Data: return "template data / text";
    case TokenType::VarBegin: return "begin of print statement";
    case TokenType::VarEnd: return "end of print statement";
    case TokenType::BlockBegin: return "begin of statement block";
    case TokenType::BlockEnd: return "end of statement block";
    case TokenType::Name: return t.value;
    case TokenType::String: return "string";
    case TokenType::Integer: return "integer";
    case TokenType::Float: return "float";
    case TokenType::Operator: return t.value;
    case TokenType::Eof: return "end of template";
  }
  return "token";
}

}  // namespace ds4::text::jinja
