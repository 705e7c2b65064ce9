// The few Unicode character properties the tokenizer needs outside regular expressions, with the
// definitions HF's Rust code uses (char::is_whitespace and the regex crate's \s and \w).
#pragma once
#include <cstddef>
#include <string_view>

namespace ds4::text::unicode {

// The White_Space property (Rust's char::is_whitespace, regex \s).
bool is_white_space(char32_t cp);
// The regex crate's Unicode \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
bool is_word_char(char32_t cp);

// Offset just past the white space that starts at `from` in valid UTF-8 `s`.
size_t skip_white_space(std::string_view s, size_t from);
// Offset where the white space that ends `s` begins (s.size() when it does not end with white space).
size_t white_space_suffix_start(std::string_view s);

// Whether the first / last character of `s` is a word character (false for an empty string).
bool starts_with_word_char(std::string_view s);
bool ends_with_word_char(std::string_view s);

}  // namespace ds4::text::unicode
