#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <span>
#include <stdexcept>

#include "core/error.h"
#include "text/unicode_additions.h"
#include "text/utf8.h"

namespace ds4::text {
namespace {

// Oniguruma's \s is the Unicode White_Space property. PCRE2's \s (with UCP) also matches U+180E, which
// left White_Space in Unicode 6.3, so \s and \S are spelled out.
constexpr std::string_view kWhiteSpace =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";
// In Ruby syntax \h is a hexadecimal digit (PCRE2: horizontal space).
constexpr std::string_view kHex = "0-9a-fA-F";

// Oniguruma's Unicode \w: Letter, Mark, Decimal_Number, Connector_Punctuation and a few letter-like
// numbers and symbols (PCRE2's is L, N and '_').
std::string word_members() { return "\\p{L}\\p{M}\\p{Nd}\\p{Pc}" + std::string(word_extras()); }

// PCRE2 knows Unicode 14.0, Oniguruma 16.0. A subject holding characters assigned since is matched
// through a copy in which each such character is replaced by a stand-in: an old character of the same
// class (so every \p{L}, \p{N}, \p{M}, \p{P}, \p{S}, \p{Nd}, \s and \w test answers as Oniguruma's
// would) and the same UTF-8 length (so match offsets are unchanged). The stand-ins are obscure enough
// not to appear as literals in tokenizer patterns.
class StandIns {
 public:
  StandIns() {
    bmp_.assign(0x10000, false);
    for (const auto& r : new_char_ranges())
      for (char32_t c = r.first; c <= r.last && c < 0x10000; ++c) bmp_[c] = true;
    astral_ = new_char_ranges();
  }
  // Whether `s` holds a character newer than PCRE2's tables.
  bool needed(std::string_view s) const {
    for (size_t i = 0; i < s.size();) {
      auto b = static_cast<unsigned char>(s[i]);
      if (b < 0xE0) {  // below U+0800: nothing new there
        i += b < 0x80 ? 1 : 2;
        continue;
      }
      if (find(utf8::next(s, i))) return true;
    }
    return false;
  }
  // Copies `s` into `out` with the stand-ins in place.
  void substitute(std::string_view s, std::string& out) const {
    out.assign(s);
    for (size_t i = 0; i < s.size();) {
      size_t start = i;
      auto b = static_cast<unsigned char>(s[i]);
      if (b < 0xE0) {
        i += b < 0x80 ? 1 : 2;
        continue;
      }
      if (const NewCharRange* r = find(utf8::next(s, i))) {
        std::string stand_in;
        utf8::append(stand_in, stand_in_for(r->cls, i - start));
        out.replace(start, stand_in.size(), stand_in);
      }
    }
  }

 private:
  const NewCharRange* find(char32_t c) const {
    if (c < 0x10000 && !bmp_[c]) return nullptr;
    auto it = std::upper_bound(astral_.begin(), astral_.end(), c,
                               [](char32_t v, const NewCharRange& r) { return v < r.first; });
    if (it == astral_.begin()) return nullptr;
    --it;
    return c <= it->last ? &*it : nullptr;
  }
  static char32_t stand_in_for(NewCharClass cls, size_t utf8_len) {
    bool three = utf8_len == 3;
    switch (cls) {
      case NewCharClass::Letter: return three ? 0xA840 : 0x10000;         // PHAGS-PA LETTER KA / LINEAR B SYLLABLE B008 A
      case NewCharClass::Mark: return three ? 0x1AB0 : 0x101FD;           // COMBINING DOUBLED CIRCUMFLEX / PHAISTOS DISC OBLIQUE STROKE
      case NewCharClass::DecimalNumber: return three ? 0xA8D0 : 0x104A0;  // SAURASHTRA / OSMANYA DIGIT ZERO
      case NewCharClass::OtherNumber: return three ? 0xA830 : 0x10107;    // NORTH INDIC FRACTION 1/4 / AEGEAN NUMBER ONE
      case NewCharClass::Punctuation: return three ? 0xA874 : 0x10100;    // PHAGS-PA SINGLE HEAD MARK / AEGEAN WORD SEPARATOR LINE
      case NewCharClass::Symbol: return three ? 0xA828 : 0x1D000;         // SYLOTI NAGRI POETRY MARK-1 / BYZANTINE PSILI
    }
    return 0xA840;
  }
  std::vector<bool> bmp_;
  std::span<const NewCharRange> astral_;
};

const StandIns& stand_ins() {
  static const StandIns s;
  return s;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Per-thread matching state: PCRE2 match data and a JIT stack large enough for long inputs. One per
// thread, shared by all patterns (a thread runs one match at a time).
struct MatchScratch {
  std::string shadow;  // the subject with stand-ins for characters newer than PCRE2's tables
  pcre2_match_data* data;
  pcre2_match_context* context;
  pcre2_jit_stack* stack;
  MatchScratch() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

std::string Regex::translate(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  size_t i = 0;
  // Emits a set of class members: as they are inside a class, else as a class of its own.
  auto set = [&](std::string_view members, bool negate) {
    if (in_class) {
      out += members;
    } else {
      out += negate ? "[^" : "[";
      out += members;
      out += ']';
    }
  };
  while (i < p.size()) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char d = p[i + 1];
      if (d == 's' || (d == 'S' && !in_class)) {
        set(kWhiteSpace, d == 'S');
        i += 2;
      } else if (d == 'w' || (d == 'W' && !in_class)) {
        set(word_members(), d == 'W');
        i += 2;
      } else if (d == 'd' || (d == 'D' && !in_class)) {
        set("\\p{Nd}", d == 'D');
        i += 2;
      } else if (d == 'h' || (d == 'H' && !in_class)) {
        set(kHex, d == 'H');
        i += 2;
      } else if (d == 'H') {
        out += "\\x{0}-\\x{2F}\\x{3A}-\\x{40}\\x{47}-\\x{60}\\x{67}-\\x{10FFFF}";
        i += 2;
      } else if (d == 'u' && i + 5 < p.size() && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
                 is_hex(p[i + 5])) {
        out += "\\x{";
        out += p.substr(i + 2, 4);
        out += '}';
        i += 6;
      } else if ((d == 'p' || d == 'P') && i + 3 < p.size() && p[i + 2] == '{' && p[i + 3] == '^') {
        out += d == 'p' ? "\\P{" : "\\p{";  // onig's \p{^X} is the complement
        i += 4;
      } else {
        // Any other escape means the same to both engines; copy it with the whole character it escapes.
        size_t n = 1 + utf8::seq_len(static_cast<unsigned char>(d));
        out += p.substr(i, n);
        i += n;
      }
    } else if (c == '[' && !in_class) {
      in_class = true;
      out += '[';
      ++i;
      if (i < p.size() && p[i] == '^') out += p[i++];
      if (i < p.size() && p[i] == ']') out += p[i++];  // a leading ']' is a literal
    } else if (c == '[' && in_class) {
      if (i + 1 < p.size() && p[i + 1] == ':') {  // POSIX bracket such as [:alpha:]
        size_t end = p.find(":]", i + 2);
        if (end == std::string_view::npos) throw std::invalid_argument("unterminated POSIX bracket");
        out += p.substr(i, end + 2 - i);
        i = end + 2;
      } else {
        throw std::invalid_argument("nested character classes (Oniguruma set operations) are not supported");
      }
    } else if (c == ']' && in_class) {
      in_class = false;
      out += ']';
      ++i;
    } else if (c == '(' && !in_class && i + 2 < p.size() && p[i + 1] == '?' &&
               (p[i + 2] == 'i' || p[i + 2] == 'm' || p[i + 2] == 'x' || p[i + 2] == '-')) {
      // Inline options: Ruby's (?m) makes '.' match newlines, which PCRE2 calls (?s).
      out += "(?";
      i += 2;
      while (i < p.size() && (p[i] == 'i' || p[i] == 'm' || p[i] == 'x' || p[i] == '-')) {
        out += p[i] == 'm' ? 's' : p[i];
        ++i;
      }
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string Regex::escape(std::string_view literal) {
  // A backslash before ASCII punctuation makes it literal in both engines, and the translation above
  // copies such escapes unchanged.
  std::string out;
  for (char c : literal) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && std::ispunct(u)) out += '\\';
    out += c;
  }
  return out;
}

std::string onig_pattern_of(const JsonNode& pattern) {
  if (auto s = pattern.find("String")) return Regex::escape(s->str());
  if (auto r = pattern.find("Regex")) return r->str();
  pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
}

Regex::Regex(std::string_view onig_pattern) {
  std::string pattern = translate(onig_pattern);
  pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);  // Ruby syntax: only "\n" ends a line
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  // Ruby syntax: '^' and '$' always match at line boundaries, hence MULTILINE.
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                        PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &err_offset, ctx);
  pcre2_compile_context_free(ctx);
  if (!code_) {
    throw std::invalid_argument("regex /" + std::string(onig_pattern) + "/ does not compile: " + pcre2_message(err) +
                                " (at offset " + std::to_string(err_offset) + " of /" + pattern + "/)");
  }
  // Without JIT (unsupported CPU) pcre2_match falls back to the interpreter; same results, slower.
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() { pcre2_code_free(code_); }

void Regex::find_all(std::string_view subject, std::vector<Match>& out) const {
  MatchScratch& s = scratch();
  if (stand_ins().needed(subject)) {
    stand_ins().substitute(subject, s.shadow);
    subject = s.shadow;
  }
  auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t n = subject.size();
  size_t search_from = 0;
  size_t last_match_end = std::string_view::npos;
  while (search_from <= n) {
    int rc = pcre2_match(code_, subj, n, search_from, PCRE2_NO_UTF_CHECK, s.data, s.context);
    // A match too deep for the JIT stack is redone by the interpreter, whose frames live on the heap.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(code_, subj, n, search_from, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw Error(ErrorKind::Tokenizer, "pre-tokenizer regex failed: " + pcre2_message(rc));
    // rc == 0 only says the one-pair ovector was too small for the groups; the whole match is there.
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    size_t b = ov[0], e = ov[1];
    if (b == e && e == last_match_end) {
      search_from += search_from < n ? utf8::seq_len(static_cast<unsigned char>(subject[search_from])) : 1;
      continue;
    }
    out.push_back({b, e});
    search_from = last_match_end = e;
  }
}

void Regex::replace_all(std::string& text, std::string_view content) const {
  std::vector<Match> matches;
  find_all(text, matches);
  if (matches.empty()) return;
  std::string out;
  size_t prev = 0;
  for (const auto& m : matches) {
    out.append(text, prev, m.begin - prev);
    out += content;
    prev = m.end;
  }
  out.append(text, prev);
  text.swap(out);
}

}  // namespace ds4::text
