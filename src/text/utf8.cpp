#include "text/utf8.h"

namespace ds4::text::utf8 {
namespace {

// Number of continuation bytes after `lead` and the allowed range of the first one; the narrowed ranges
// exclude overlong forms, surrogates and code points above U+10FFFF. need < 0: not a lead byte.
struct Lead {
  int need;
  unsigned char lo, hi;
};

Lead classify(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

// Scans the sequence at s[i] (a non-ASCII byte). Returns the number of bytes that belong to it and sets
// `complete` when they form a whole character; otherwise they are a maximal invalid subpart (possibly
// cut short by the end of `s`, then `truncated` is set).
size_t scan(std::string_view s, size_t i, bool& complete, bool& truncated) {
  Lead l = classify(static_cast<unsigned char>(s[i]));
  complete = truncated = false;
  if (l.need < 0) return 1;
  size_t j = i + 1;
  for (int k = 0; k < l.need; ++k, ++j) {
    if (j >= s.size()) {
      truncated = true;
      return j - i;
    }
    auto c = static_cast<unsigned char>(s[j]);
    unsigned char lo = k == 0 ? l.lo : 0x80, hi = k == 0 ? l.hi : 0xBF;
    if (c < lo || c > hi) return j - i;
  }
  complete = true;
  return j - i;
}

}  // namespace

size_t find_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    bool complete, truncated;
    size_t n = scan(s, i, complete, truncated);
    if (!complete) return i;
    i += n;
  }
  return std::string_view::npos;
}

char32_t next(std::string_view s, size_t& i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  size_t n = seq_len(b0);
  char32_t cp = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t append_lossy(std::string& out, std::string_view s, bool final) {
  size_t i = 0, run = 0;  // [run, i) is valid text not yet copied
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    bool complete, truncated;
    size_t n = scan(s, i, complete, truncated);
    if (complete) {
      i += n;
      continue;
    }
    out.append(s.substr(run, i - run));
    if (truncated && !final) return i;
    out.append(kReplacement);
    i += n;
    run = i;
  }
  out.append(s.substr(run, i - run));
  return i;
}

}  // namespace ds4::text::utf8
