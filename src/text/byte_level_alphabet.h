// GPT-2's byte-level alphabet: every byte is written as a printable code point (printable ASCII and most
// of Latin-1 stand for themselves, the other bytes take U+0100 onwards in byte order), so that any byte
// string becomes a string of vocabulary characters. Shared by the ByteLevel pre-tokenizer and decoder.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ds4::text::byte_level {

// The UTF-8 spelling of the character that stands for byte b.
std::string_view char_of(uint8_t b);

// Appends the byte-level spelling of `bytes` to `out`.
void encode(std::string_view bytes, std::string& out);

// Appends the bytes a token spells to `out`. Returns false (appending nothing) when some character of
// the token is not in the alphabet; HF then uses the token's own UTF-8 bytes.
bool decode(std::string_view token, std::string& out);

}  // namespace ds4::text::byte_level
