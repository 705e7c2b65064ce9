#include "text/unicode_props.h"

#include <utf8proc.h>

#include "text/utf8.h"

namespace ds4::text::unicode {

bool is_white_space(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // Alphabetic is Letter + Nl + Other_Alphabetic; Other_Alphabetic is almost entirely marks (covered
  // below) plus the circled and squared Latin letters, which are symbols.
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

size_t skip_white_space(std::string_view s, size_t i) {
  while (i < s.size()) {
    size_t j = i;
    if (!is_white_space(utf8::next(s, j))) break;
    i = j;
  }
  return i;
}

// Start of the last character of valid UTF-8 `s` ending at `end` (> 0).
static size_t prev_char_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

size_t white_space_suffix_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = prev_char_start(s, end), j = start;
    if (!is_white_space(utf8::next(s, j))) break;
    end = start;
  }
  return end;
}

bool starts_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  return is_word_char(utf8::next(s, i));
}

bool ends_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  size_t i = prev_char_start(s, s.size());
  return is_word_char(utf8::next(s, i));
}

}  // namespace ds4::text::unicode
