// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): they cut the normalized text between added tokens
// into the pieces the model tokenizes independently. Supported: Split (regex or literal, every HF
// delimiter behaviour, invert), ByteLevel (add_prefix_space, use_regex) and Sequence of these; null
// leaves each text segment whole.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_node.h"

namespace ds4::text {

// Text on its way through pre-tokenization: consecutive pieces of one buffer.
struct PieceList {
  struct Span {
    uint32_t begin, end;
  };
  std::string text;
  std::vector<Span> pieces;

  std::string_view piece(size_t i) const { return std::string_view(text).substr(pieces[i].begin, pieces[i].end - pieces[i].begin); }
  void clear() {
    text.clear();
    pieces.clear();
  }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Re-cuts (and for ByteLevel rewrites) the pieces of `pl` in place; `scratch` is working storage.
  virtual void apply(PieceList& pl, PieceList& scratch) const = 0;
};

// Throws ds4::Error(Tokenizer) naming the file for unknown types, bad regexes or malformed fields.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& node);

}  // namespace ds4::text
