#include "text/decoder.h"

#include <stdexcept>

#include "text/byte_level_alphabet.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace ds4::text {

void append_byte_level_token(std::string_view token, std::string& bytes) {
  if (!byte_level::decode(token, bytes)) bytes += token;
}

bool parse_byte_token(std::string_view t, unsigned char& byte) {
  // HF: 6 bytes, "<0x" ... ">", and the two middle characters parsed by u8::from_str_radix(_, 16),
  // which also accepts a leading '+'.
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return false;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  int hi = hex(t[3]), lo = hex(t[4]);
  if (t[3] == '+' && lo >= 0) {
    byte = static_cast<unsigned char>(lo);
    return true;
  }
  if (hi < 0 || lo < 0) return false;
  byte = static_cast<unsigned char>(hi * 16 + lo);
  return true;
}

namespace {

class ByteLevel : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) append_byte_level_token(t, bytes);
    std::string text;
    utf8::append_lossy(text, bytes);
    tokens.assign(1, std::move(text));
  }
  bool is_byte_level() const override { return true; }
};

class Replace : public Decoder {
 public:
  Replace(std::string_view onig_pattern, std::string content) : regex_(onig_pattern), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) regex_.replace_all(t, content_);
  }

 private:
  Regex regex_;
  std::string content_;
};

// Runs of "<0xXX>" tokens become the UTF-8 text of their bytes, or one U+FFFD per byte when the run is
// not valid UTF-8 as a whole.
class ByteFallback : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string run;
    auto flush = [&]() {
      if (run.empty()) return;
      if (utf8::find_invalid(run) == std::string::npos) {
        out.push_back(run);
      } else {
        for (size_t i = 0; i < run.size(); ++i) out.emplace_back(utf8::kReplacement);
      }
      run.clear();
    };
    for (auto& t : tokens) {
      unsigned char b;
      if (parse_byte_token(t, b)) {
        run += static_cast<char>(b);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
  bool groups_byte_tokens() const override { return true; }
};

class Fuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing `content` characters from each token.
class Strip : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      std::vector<size_t> starts;  // byte offset of each character
      for (size_t i = 0; i < t.size(); i += utf8::seq_len(static_cast<unsigned char>(t[i]))) starts.push_back(i);
      size_t n = starts.size();
      auto char_at = [&](size_t k) {
        size_t end = k + 1 < n ? starts[k + 1] : t.size();
        return std::string_view(t).substr(starts[k], end - starts[k]);
      };
      size_t cut_start = 0, cut_stop = n;
      for (size_t k = 0; k < start_ && k < n && char_at(k) == content_; ++k) cut_start = k + 1;
      for (size_t k = 0; k < stop_ && k < n && char_at(n - 1 - k) == content_; ++k) cut_stop = n - 1 - k;
      if (cut_stop <= cut_start) {
        t.clear();
        continue;
      }
      size_t b = cut_start < n ? starts[cut_start] : t.size();
      size_t e = cut_stop < n ? starts[cut_stop] : t.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

// Metaspace: the replacement character becomes a space, except in the first token, where it is
// dropped unless the prepend scheme is "never".
class Metaspace : public Decoder {
 public:
  Metaspace(std::string replacement, bool prepends) : replacement_(std::move(replacement)), prepends_(prepends) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t p = 0; p < t.size();) {
        if (t.compare(p, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && prepends_)) out += ' ';
          p += replacement_.size();
        } else {
          size_t n = utf8::seq_len(static_cast<unsigned char>(t[p]));
          out.append(t, p, n);
          p += n;
        }
      }
      tokens[i].swap(out);
    }
  }

 private:
  std::string replacement_;
  bool prepends_;
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }
  bool is_byte_level() const override { return parts_.size() == 1 && parts_[0]->is_byte_level(); }
  bool groups_byte_tokens() const override {
    for (const auto& p : parts_)
      if (p->groups_byte_tokens()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

std::string one_char(const JsonNode& node) {
  std::string s = node.str();
  if (s.empty() || utf8::seq_len(static_cast<unsigned char>(s[0])) != s.size()) node.fail("expected a single character");
  return s;
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonNode& node) {
  std::string type = node.at("type").str();
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Replace") {
    JsonNode pattern = node.at("pattern");
    try {
      return std::make_unique<Replace>(onig_pattern_of(pattern), node.at("content").str());
    } catch (const std::invalid_argument& e) {
      pattern.fail(e.what());
    }
  }
  if (type == "Strip") {
    int64_t start = node.int_or("start", 0), stop = node.int_or("stop", 0);
    if (start < 0 || stop < 0) node.fail("start and stop must not be negative");
    return std::make_unique<Strip>(one_char(node.at("content")), size_t(start), size_t(stop));
  }
  if (type == "Metaspace") {
    std::string replacement = node.find("replacement") ? one_char(node.at("replacement")) : "\xE2\x96\x81";
    bool prepends = true;
    if (auto scheme = node.find("prepend_scheme")) {
      std::string s = scheme->str();
      if (s != "always" && s != "first" && s != "never") scheme->fail("unknown prepend_scheme '" + s + "'");
      prepends = s != "never";
    } else {
      prepends = node.bool_or("add_prefix_space", true);
    }
    return std::make_unique<Metaspace>(replacement, prepends);
  }
  if (type == "Sequence") {
    JsonNode list = node.at("decoders");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.array().size(); ++i) parts.push_back(make_decoder(list.element(i)));
    return std::make_unique<Sequence>(std::move(parts));
  }
  node.at("type").fail("unsupported decoder type '" + type +
                       "' (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)");
}

}  // namespace ds4::text
