#include "text/jinja/pystr.h"

#include "text/utf8.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace ds4::text::jinja::pystr {

namespace {

[[noreturn]] void bad_utf8() { throw Error(ErrorKind::Template, "invalid UTF-8 in template text or value"); }

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

bool is_cased(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

char32_t simple_lower(char32_t cp) { return static_cast<char32_t>(utf8proc_tolower(static_cast<int32_t>(cp))); }
char32_t simple_upper(char32_t cp) { return static_cast<char32_t>(utf8proc_toupper(static_cast<int32_t>(cp))); }
char32_t simple_title(char32_t cp) { return static_cast<char32_t>(utf8proc_totitle(static_cast<int32_t>(cp))); }

// Python uses the full Unicode case mappings; the two one-to-many mappings met in practice are handled here,
// the rest fall back to utf8proc's one-to-one mappings.
void append_upper(std::u32string& out, char32_t cp) {
  if (cp == 0xDF) {  // sharp s
    out += U"SS";
    return;
  }
  out += simple_upper(cp);
}
void append_lower(std::u32string& out, char32_t cp) {
  if (cp == 0x130) {  // capital I with dot above
    out += U"i\u0307";
    return;
  }
  out += simple_lower(cp);
}
void append_title(std::u32string& out, char32_t cp) {
  if (cp == 0xDF) {
    out += U"Ss";
    return;
  }
  out += simple_title(cp);
}

// Final-sigma rule of str.lower(): a capital sigma after a cased letter and not before one becomes final sigma.
bool final_sigma(const std::u32string& cps, size_t i) {
  bool before = i > 0 && is_cased(cps[i - 1]);
  bool after = i + 1 < cps.size() && is_cased(cps[i + 1]);
  return before && !after;
}

bool in_chars(const std::u32string& set, char32_t cp) { return set.find(cp) != std::u32string::npos; }

}  // namespace

// One UTF-8 encoder for the text room (text/utf8).
void append_utf8(std::string& out, char32_t cp) { utf8::append(out, cp); }

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += c;
      ++i;
      continue;
    }
    int n;
    char32_t cp;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      bad_utf8();
    }
    if (i + static_cast<size_t>(n) >= s.size()) bad_utf8();
    for (int k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) bad_utf8();
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp > 0x10FFFF) bad_utf8();
    out += cp;
    i += n + 1;
  }
  return out;
}

std::string encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

size_t byte_offset(std::string_view s, size_t index) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == index) return i;
      ++n;
    }
  }
  return s.size();
}

size_t cp_index(std::string_view s, size_t off) { return length(s.substr(0, off)); }

bool is_space(char32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp >= 0x1C && cp <= 0x20) return true;
  if (cp < 0x80) return false;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_alpha(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
}

bool is_decimal(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return category(cp) == UTF8PROC_CATEGORY_ND;
}

bool is_digit(char32_t cp) {
  if (is_decimal(cp)) return true;
  // Superscript and subscript digits carry a digit value without being decimal.
  return cp == 0xB2 || cp == 0xB3 || cp == 0xB9 || (cp >= 0x2070 && cp <= 0x2079 && cp != 0x2071 && cp != 0x2072 &&
                                                   cp != 0x2073) ||
         (cp >= 0x2080 && cp <= 0x2089) || (cp >= 0x2460 && cp <= 0x2468);
}

bool is_numeric(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_alnum(char32_t cp) { return is_alpha(cp) || is_numeric(cp); }
bool is_word(char32_t cp) { return cp == '_' || is_alnum(cp); }

bool is_printable(char32_t cp) {
  if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool is_lower_cased(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_LL; }
bool is_upper_cased(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU;
}

bool is_line_break(char32_t cp) {
  switch (cp) {
    case '\n': case '\r': case 0x0B: case 0x0C: case 0x1C: case 0x1D: case 0x1E: case 0x85: case 0x2028:
    case 0x2029:
      return true;
    default:
      return false;
  }
}

std::string lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  auto cps = decode(s);
  std::u32string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (cps[i] == 0x3A3 && final_sigma(cps, i))
      out += char32_t{0x3C2};
    else
      append_lower(out, cps[i]);
  }
  return encode(out);
}

std::string upper(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
  }
  std::u32string out;
  for (char32_t cp : decode(s)) append_upper(out, cp);
  return encode(out);
}

std::string swapcase(std::string_view s) {
  std::u32string out;
  for (char32_t cp : decode(s)) {
    if (is_upper_cased(cp))
      append_lower(out, cp);
    else if (is_lower_cased(cp))
      append_upper(out, cp);
    else
      out += cp;
  }
  return encode(out);
}

std::string title(std::string_view s) {
  auto cps = decode(s);
  std::u32string out;
  bool prev_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t cp = cps[i];
    if (prev_cased) {
      if (cp == 0x3A3 && final_sigma(cps, i))
        out += char32_t{0x3C2};
      else
        append_lower(out, cp);
    } else {
      append_title(out, cp);
    }
    prev_cased = is_cased(cp);
  }
  return encode(out);
}

std::string capitalize(std::string_view s) {
  auto cps = decode(s);
  std::u32string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0)
      append_title(out, cps[i]);
    else if (cps[i] == 0x3A3 && final_sigma(cps, i))
      out += char32_t{0x3C2};
    else
      append_lower(out, cps[i]);
  }
  return encode(out);
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  if (!chars && is_ascii(s)) {
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && is_space(static_cast<unsigned char>(s[b]))) ++b;
    if (right)
      while (e > b && is_space(static_cast<unsigned char>(s[e - 1]))) --e;
    return std::string(s.substr(b, e - b));
  }
  auto cps = decode(s);
  std::u32string set = chars ? decode(*chars) : std::u32string();
  auto drop = [&](char32_t cp) { return chars ? in_chars(set, cp) : is_space(cp); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && drop(cps[b])) ++b;
  if (right)
    while (e > b && drop(cps[e - 1])) --e;
  return encode(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) throw Error(ErrorKind::Template, "empty separator");
    size_t pos = 0;
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, pos);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, at - pos));
      pos = at + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  auto cps = decode(s);
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && is_space(cps[i])) ++i;
    if (i == n) break;
    if (static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(cps).substr(i)));
      break;
    }
    size_t j = i;
    while (j < n && !is_space(cps[j])) ++j;
    out.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) throw Error(ErrorKind::Template, "empty separator");
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  auto cps = decode(s);
  size_t j = cps.size();
  while (true) {
    while (j > 0 && is_space(cps[j - 1])) --j;
    if (j == 0) break;
    if (static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(cps).substr(0, j)));
      break;
    }
    size_t i = j;
    while (i > 0 && !is_space(cps[i - 1])) --i;
    out.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    j = i;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  auto cps = decode(s);
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < cps.size()) {
    if (!is_line_break(cps[i])) {
      ++i;
      continue;
    }
    size_t eol = i;
    ++i;
    if (cps[eol] == '\r' && i < cps.size() && cps[i] == '\n') ++i;
    out.push_back(encode(std::u32string_view(cps).substr(start, (keepends ? i : eol) - start)));
    start = i;
  }
  if (start < cps.size()) out.push_back(encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view rep, int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    auto cps = decode(s);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (done < count) {
        out += rep;
        ++done;
      }
      append_utf8(out, cp);
    }
    if (done < count) out += rep;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (done < count) {
    size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos));
    out.append(rep);
    pos = at + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

int64_t find(std::string_view s, std::string_view sub, int64_t start, std::optional<int64_t> end, bool reverse) {
  auto len = static_cast<int64_t>(length(s));
  int64_t e = end ? *end : len;
  if (start < 0) start = std::max<int64_t>(0, start + len);
  if (e < 0) e = std::max<int64_t>(0, e + len);
  e = std::min(e, len);
  if (start > len || start > e) return -1;
  if (e - start < static_cast<int64_t>(length(sub))) return -1;
  size_t b = byte_offset(s, static_cast<size_t>(start));
  size_t eb = byte_offset(s, static_cast<size_t>(e));
  std::string_view window = s.substr(b, eb - b);
  size_t at = reverse ? window.rfind(sub) : window.find(sub);
  if (at == std::string_view::npos) return -1;
  return start + static_cast<int64_t>(cp_index(window, at));
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  size_t pos = 0;
  while ((pos = s.find(sub, pos)) != std::string_view::npos) {
    ++n;
    pos += sub.size();
  }
  return n;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string pad(std::string_view s, int64_t width, char32_t fill, char align) {
  auto len = static_cast<int64_t>(length(s));
  if (width <= len) return std::string(s);
  int64_t marg = width - len, left = 0;
  if (align == '>')
    left = marg;
  else if (align == '^')
    left = marg / 2;
  else if (align == 'c')  // str.center rounds the odd margin as CPython does
    left = marg / 2 + (marg & width & 1);
  std::string f;
  append_utf8(f, fill);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += f;
  out += s;
  for (int64_t i = 0; i < marg - left; ++i) out += f;
  return out;
}

bool pred_all(std::string_view s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (char32_t cp : decode(s))
    if (!pred(cp)) return false;
  return true;
}

bool is_lower(std::string_view s) {
  bool cased = false;
  for (char32_t cp : decode(s)) {
    if (is_upper_cased(cp) || category(cp) == UTF8PROC_CATEGORY_LT) return false;
    if (is_lower_cased(cp)) cased = true;
  }
  return cased;
}

bool is_upper(std::string_view s) {
  bool cased = false;
  for (char32_t cp : decode(s)) {
    if (is_lower_cased(cp) || category(cp) == UTF8PROC_CATEGORY_LT) return false;
    if (is_upper_cased(cp)) cased = true;
  }
  return cased;
}

bool is_title(std::string_view s) {
  bool cased = false, prev_cased = false;
  for (char32_t cp : decode(s)) {
    bool up = is_upper_cased(cp) || category(cp) == UTF8PROC_CATEGORY_LT;
    if (up) {
      if (prev_cased) return false;
      prev_cased = cased = true;
    } else if (is_lower_cased(cp)) {
      if (!prev_cased) return false;
      prev_cased = cased = true;
    } else {
      prev_cased = false;
    }
  }
  return cased;
}

std::string repr(std::string_view s) {
  auto cps = decode(s);
  bool has_single = false, has_double = false;
  for (char32_t cp : cps) {
    has_single |= cp == '\'';
    has_double |= cp == '"';
  }
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t cp : cps) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp < 0x80 || is_printable(cp)) {
      append_utf8(out, cp);
    } else if (cp <= 0xFF) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp <= 0xFFFF) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then CPython's layout: positional for exponents in [-4, 16), else scientific.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = false;
  size_t p = 0;
  if (sci[0] == '-') {
    neg = true;
    p = 1;
  }
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t i = p; i < epos; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exp = std::stoi(sci.substr(epos + 1));
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else {
      size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        out += ".0";
      } else {
        out += digits.substr(0, int_len);
        out += '.';
        out += digits.substr(int_len);
      }
    }
    return out;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  out += ebuf;
  return out;
}

}  // namespace ds4::text::jinja::pystr
