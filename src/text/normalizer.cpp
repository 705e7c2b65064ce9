#include "text/normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "text/regex.h"
#include "text/unicode_additions.h"
#include "text/unicode_props.h"
#include "text/utf8.h"

namespace ds4::text {
namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(int options) : options_(options) {}
  void normalize(std::string& text) const override {
    bool ascii = true;
    for (unsigned char c : text) ascii &= c < 0x80;
    if (ascii) return;  // every normal form leaves ASCII unchanged
    utf8proc_uint8_t* out = nullptr;
    auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                          static_cast<utf8proc_ssize_t>(text.size()), &out,
                          static_cast<utf8proc_option_t>(options_));
    if (n < 0) throw Error(ErrorKind::Tokenizer, std::string("unicode normalization failed: ") + utf8proc_errmsg(n));
    text.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
  }

 private:
  int options_;
};

// Rust's char::to_lowercase: the simple mapping, except U+0130 which lowercases to "i" + U+0307; for
// characters newer than utf8proc's Unicode version, the reference's own mapping (lowercase_additions).
class Lowercase : public Normalizer {
 public:
  Lowercase() : additions_(lowercase_additions()) {}
  void normalize(std::string& text) const override {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      char32_t cp = utf8::next(text, i);
      if (cp == 0x130) {
        out += "i\xCC\x87";
      } else if (const LowercaseAddition* a = addition(cp)) {
        for (char32_t c : a->to) utf8::append(out, c);
      } else {
        utf8::append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
      }
    }
    text.swap(out);
  }

 private:
  const LowercaseAddition* addition(char32_t cp) const {
    if (additions_.empty() || cp < additions_.front().cp) return nullptr;
    auto it = std::lower_bound(additions_.begin(), additions_.end(), cp,
                               [](const LowercaseAddition& a, char32_t c) { return a.cp < c; });
    return it != additions_.end() && it->cp == cp ? &*it : nullptr;
  }

  std::span<const LowercaseAddition> additions_;
};

class Replace : public Normalizer {
 public:
  Replace(std::string_view onig_pattern, std::string content) : regex_(onig_pattern), content_(std::move(content)) {}
  void normalize(std::string& text) const override { regex_.replace_all(text, content_); }

 private:
  Regex regex_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) begin = unicode::skip_white_space(text, 0);
    if (right_) end = std::max(begin, unicode::white_space_suffix_start(text));
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonNode& node) {
  std::string type = node.at("type").str();
  if (type == "NFC") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Prepend") return std::make_unique<Prepend>(node.at("prepend").str());
  if (type == "Strip") return std::make_unique<Strip>(node.bool_or("strip_left", false), node.bool_or("strip_right", false));
  if (type == "Replace") {
    JsonNode pattern = node.at("pattern");
    try {
      return std::make_unique<Replace>(onig_pattern_of(pattern), node.at("content").str());
    } catch (const std::invalid_argument& e) {
      pattern.fail(e.what());
    }
  }
  if (type == "Sequence") {
    JsonNode list = node.at("normalizers");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.array().size(); ++i) parts.push_back(make_normalizer(list.element(i)));
    return std::make_unique<Sequence>(std::move(parts));
  }
  node.at("type").fail("unsupported normalizer type '" + type +
                       "' (supported: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, Sequence)");
}

}  // namespace ds4::text
