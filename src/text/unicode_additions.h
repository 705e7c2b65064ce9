// What PCRE2's Unicode tables lack against Oniguruma's, the engine HF runs tokenizer.json regexes with.
// PCRE2 10.42 knows Unicode 14.0; Oniguruma in HF tokenizers 0.23.2 knows Unicode 16.0, so characters
// assigned since (new emoji, scripts, CJK extensions) would fall outside \p{L}, \p{S}, ... and be cut
// differently. The regex translation appends these code points to the classes it emits. The data is
// generated (unicode_additions.cpp) from the reference's own class membership, onig_classes.json.
#pragma once
#include <string_view>

namespace ds4::text {

// PCRE2 class members (such as "\x{1C89}-\x{1C8A}") to add to \p{property} for property L, N, M, P, S
// or Nd; empty for others.
std::string_view class_additions(std::string_view property);
// Members of Oniguruma's \w beyond Letter, Mark, Decimal_Number and Connector_Punctuation (letter-like
// numbers and symbols such as U+2160 ROMAN NUMERAL ONE and U+24B6 CIRCLED LATIN CAPITAL LETTER A).
std::string_view word_extras();

}  // namespace ds4::text
