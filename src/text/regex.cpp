#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include <cctype>
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
// numbers and symbols (PCRE2's is L, N and '_'). The part PCRE2 knows, and what Oniguruma adds to it.
constexpr std::string_view kWord = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
std::string word_additions() {
  return std::string(class_additions("L")) + std::string(class_additions("M")) + std::string(class_additions("Nd")) +
         std::string(word_extras());
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Per-thread matching state: PCRE2 match data and a JIT stack large enough for long inputs. One per
// thread, shared by all patterns (a thread runs one match at a time).
struct MatchScratch {
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
  // Oniguruma's classes are PCRE2's plus code points of newer Unicode versions. Listing those inside the
  // class would make PCRE2 test every listed range for every character (a 4x slowdown), so a class that
  // needs them becomes (?:[class]|[additions]), and a negated one (?![additions])[^class].
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false, negated_class = false;
  std::string cls, adds;  // the class being read, and the code points to widen it with
  auto emit = [&](std::string_view members, std::string_view more, bool negate) {
    if (in_class) {
      cls += members;
      adds += more;
    } else if (more.empty()) {
      out += negate ? "[^" : "[";
      out += members;
      out += ']';
    } else if (negate) {
      out += "(?![";
      out += more;
      out += "])[^";
      out += members;
      out += ']';
    } else {
      out += "(?:[";
      out += members;
      out += "]|[";
      out += more;
      out += "])";
    }
  };
  auto put = [&](std::string_view text) { (in_class ? cls : out) += text; };
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char d = p[i + 1];
      if (d == 's' || (d == 'S' && !in_class)) {
        emit(kWhiteSpace, {}, d == 'S');
        i += 2;
      } else if (d == 'w' || (d == 'W' && !in_class)) {
        emit(kWord, word_additions(), d == 'W');
        i += 2;
      } else if (d == 'd' || (d == 'D' && !in_class)) {
        emit("\\p{Nd}", class_additions("Nd"), d == 'D');
        i += 2;
      } else if (d == 'h' || (d == 'H' && !in_class)) {
        emit(kHex, {}, d == 'H');
        i += 2;
      } else if (d == 'H') {
        put("\\x{0}-\\x{2F}\\x{3A}-\\x{40}\\x{47}-\\x{60}\\x{67}-\\x{10FFFF}");
        i += 2;
      } else if (d == 'u' && i + 5 < p.size() && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
                 is_hex(p[i + 5])) {
        put("\\x{");
        put(p.substr(i + 2, 4));
        put("}");
        i += 6;
      } else if ((d == 'p' || d == 'P') && i + 2 < p.size() && p[i + 2] == '{' && p.find('}', i + 3) != p.npos) {
        size_t close = p.find('}', i + 3);
        std::string_view name = p.substr(i + 3, close - i - 3);
        bool negate = d == 'P';
        if (!name.empty() && name[0] == '^') {  // onig's \p{^X} is the complement
          negate = !negate;
          name.remove_prefix(1);
        }
        i = close + 1;
        std::string table = std::string("\\p{") + std::string(name) + "}";
        if (negate && in_class) {
          put("\\P{" + std::string(name) + "}");  // a complement inside a class cannot be widened: PCRE2's
        } else {
          emit(table, class_additions(name), negate);
        }
      } else {
        // Any other escape means the same to both engines; copy it with the whole character it escapes.
        size_t n = 1 + utf8::seq_len(static_cast<unsigned char>(d));
        put(p.substr(i, n));
        i += n;
      }
    } else if (c == '[' && !in_class) {
      in_class = true;
      cls.clear();
      adds.clear();
      ++i;
      negated_class = i < p.size() && p[i] == '^';
      if (negated_class) ++i;
      if (i < p.size() && p[i] == ']') cls += p[i++];  // a leading ']' is a literal
    } else if (c == '[' && in_class) {
      if (i + 1 < p.size() && p[i + 1] == ':') {  // POSIX bracket such as [:alpha:]
        size_t end = p.find(":]", i + 2);
        if (end == std::string_view::npos) throw std::invalid_argument("unterminated POSIX bracket");
        cls += p.substr(i, end + 2 - i);
        i = end + 2;
      } else {
        throw std::invalid_argument("nested character classes (Oniguruma set operations) are not supported");
      }
    } else if (c == ']' && in_class) {
      in_class = false;
      emit(cls, adds, negated_class);
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
      put(p.substr(i, 1));
      ++i;
    }
  }
  if (in_class) out += "[" + std::string(negated_class ? "^" : "") + cls;  // unterminated: let PCRE2 report it
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
  auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t n = subject.size();
  size_t search_from = 0;
  size_t last_match_end = std::string_view::npos;
  while (search_from <= n) {
    int rc = pcre2_match(code_, subj, n, search_from, PCRE2_NO_UTF_CHECK, s.data, s.context);
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

}  // namespace ds4::text
