#include "text/byte_level_alphabet.h"

#include <array>

#include "text/utf8.h"

namespace ds4::text::byte_level {
namespace {

struct Tables {
  std::array<char32_t, 256> cp_of_byte{};
  std::array<std::string, 256> utf8_of_byte;
  std::array<int16_t, 0x144> byte_of_cp{};  // every alphabet code point is below U+0144; -1: not in it

  Tables() {
    byte_of_cp.fill(-1);
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
    char32_t next_free = 0x100;
    for (int b = 0; b < 256; ++b) {
      char32_t cp = printable(b) ? static_cast<char32_t>(b) : next_free++;
      cp_of_byte[b] = cp;
      utf8::append(utf8_of_byte[b], cp);
      byte_of_cp[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string_view char_of(uint8_t b) { return tables().utf8_of_byte[b]; }

void encode(std::string_view bytes, std::string& out) {
  const auto& t = tables();
  for (unsigned char b : bytes) out += t.utf8_of_byte[b];
}

bool decode(std::string_view token, std::string& out) {
  const auto& t = tables();
  size_t start = out.size(), i = 0;
  while (i < token.size()) {
    char32_t cp = utf8::next(token, i);
    if (cp >= t.byte_of_cp.size() || t.byte_of_cp[cp] < 0) {
      out.resize(start);
      return false;
    }
    out += static_cast<char>(t.byte_of_cp[cp]);
  }
  return true;
}

}  // namespace ds4::text::byte_level
