// UTF-8 helpers the tokenizer shares: validation of input text, code point iteration, and the lossy
// conversion of byte strings that HF's decoders apply (Rust's String::from_utf8_lossy, which replaces each
// maximal invalid subpart with one U+FFFD, as the Unicode standard recommends).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ds4::text::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Byte offset of the first byte that does not start a well-formed sequence, or npos when `s` is valid.
size_t find_invalid(std::string_view s);

// Decodes the code point at s[i] and advances i past it. `s` must be valid UTF-8.
char32_t next(std::string_view s, size_t& i);

// Length in bytes of the sequence whose lead byte is `lead` (valid input only).
inline size_t seq_len(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

void append(std::string& out, char32_t cp);

// Appends `bytes` to `out` as valid UTF-8, each maximal invalid subpart replaced by U+FFFD. When `final`
// is false, a trailing sequence that is well-formed so far but incomplete is left unconverted (more bytes
// may complete it). Returns the number of bytes consumed. Converting a byte string in pieces with
// final=false and the rest with final=true gives exactly the output of converting it in one go.
size_t append_lossy(std::string& out, std::string_view bytes, bool final = true);

}  // namespace ds4::text::utf8
