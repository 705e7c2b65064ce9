// What PCRE2's Unicode tables lack against Oniguruma's, the engine HF runs tokenizer.json regexes with.
// PCRE2 10.42 knows Unicode 14.0; Oniguruma in HF tokenizers 0.23.2 knows Unicode 16.0, so characters
// assigned since (new emoji, scripts, CJK extensions) would fall outside \p{L}, \p{S}, ... and be cut
// differently. The data is generated (unicode_additions.cpp) from the reference's own class membership,
// tests/fixtures/tokenizer/onig_classes.json. Likewise for lowercasing: HF's Lowercase normalizer (Rust's
// char::to_lowercase, Unicode 16.0) against utf8proc 2.8's (Unicode 15.0), from lowercase.json.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace ds4::text {

// The class Oniguruma puts a newer code point in (each new code point is in exactly one of these, plus
// \w for letters, marks and decimal numbers).
enum class NewCharClass : uint8_t { Letter, Mark, DecimalNumber, OtherNumber, Punctuation, Symbol };

struct NewCharRange {
  char32_t first, last;
  NewCharClass cls;
};

// Code points unassigned in Unicode 14.0 that Oniguruma puts in a class, ascending, not overlapping.
std::span<const NewCharRange> new_char_ranges();

// PCRE2 class members for Oniguruma's \w beyond Letter, Mark, Decimal_Number and Connector_Punctuation
// (letter-like numbers and symbols such as U+2160 ROMAN NUMERAL ONE and U+24B6 CIRCLED LATIN CAPITAL A).
std::string_view word_extras();

struct LowercaseAddition {
  char32_t cp;
  std::u32string_view to;  // what the reference lowercases cp to (cp itself where it leaves it alone)
};

// Code points unassigned in Unicode 14.0 whose lowercase in HF's Lowercase normalizer differs from
// Unicode 14.0's (Garay capitals, U+A7CB LATIN CAPITAL LETTER RAMS HORN, ...), ascending. The Lowercase
// normalizer consults it before utf8proc.
std::span<const LowercaseAddition> lowercase_additions();

}  // namespace ds4::text
