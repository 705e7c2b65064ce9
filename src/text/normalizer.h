// Normalizers of tokenizer.json ("normalizer"): applied to the text between added tokens before
// pre-tokenization. Supported: NFC, NFD, NFKC, NFKD (utf8proc), Lowercase, Replace, Prepend, Strip and
// Sequence of these; null means no normalization. Unicode versions: utf8proc 2.8 (Unicode 15.0) for the
// normal forms and lowercasing, where HF's Rust crates may know newer characters. Lowercasing takes the
// reference's mapping for those first (unicode_additions.h); the normal forms could still differ on
// characters assigned after 15.0 that decompose or combine.
#pragma once
#include <memory>
#include <string>

#include "text/json_node.h"

namespace ds4::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// Throws ds4::Error(Tokenizer) naming the file for unknown types or malformed fields.
std::unique_ptr<Normalizer> make_normalizer(const JsonNode& node);

}  // namespace ds4::text
