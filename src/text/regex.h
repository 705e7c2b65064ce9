// Regular expressions as tokenizer.json writes them. HF compiles Split and ByteLevel patterns with
// Oniguruma (Ruby syntax); we compile them with PCRE2 (UTF + UCP, JIT) after rewriting the few constructs
// whose meaning differs between the two engines, and we step through matches the way the onig crate's
// find_iter does. Both are backtracking engines, so alternation order and lookaheads such as
// `\s+(?!\S)` behave the same. Rewritten: \s and \S (White_Space exactly), \w \W \d \D \h \H (Ruby
// meanings), \p{^X}, \uHHHH, and (?m). PCRE2's Unicode tables are older than Oniguruma's; characters
// assigned since are matched through stand-ins of the same class (unicode_additions.h). Not supported:
// nested classes (set operations); \S and \W inside a class keep PCRE2's meaning (\S there includes
// U+180E).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_node.h"

struct pcre2_real_code_8;

namespace ds4::text {

class Regex {
 public:
  struct Match {
    size_t begin, end;
  };

  // Throws std::invalid_argument with PCRE2's message when the pattern does not compile.
  explicit Regex(std::string_view onig_pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the successive non-overlapping matches in `subject` (valid UTF-8). An empty match right
  // where the previous match ended is skipped, as onig's find_iter does.
  void find_all(std::string_view subject, std::vector<Match>& out) const;
  // Replaces every match in `text` with `content` (HF's Replace normalizer and decoder share it).
  void replace_all(std::string& text, std::string_view content) const;

  // The PCRE2 spelling of an Oniguruma (Ruby syntax) pattern; exposed for tests.
  static std::string translate(std::string_view onig_pattern);
  // A pattern that matches `literal` exactly.
  static std::string escape(std::string_view literal);

 private:
  pcre2_real_code_8* code_ = nullptr;
};

// The Oniguruma pattern a tokenizer.json "pattern" field stands for: {"String": literal} (escaped) or
// {"Regex": pattern}.
std::string onig_pattern_of(const JsonNode& pattern);

}  // namespace ds4::text
