// Reads tokenizer.json in one streaming pass. The two big members, model.vocab (an object of ~150k
// token -> id entries) and model.merges (~150k merges), go straight into flat arrays; everything else
// becomes an ordinary JSON document, where vocab and merges are left as empty placeholders of their
// type. This avoids building ~10^6 small JSON nodes, which dominated load time.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::text {

struct TokenizerJson {
  nlohmann::json doc;

  // model.vocab, in file order. `text` holds the token strings back to back.
  struct VocabEntry {
    uint32_t offset, len;
    int64_t id;
    bool id_is_integer;
  };
  std::string vocab_text;
  std::vector<VocabEntry> vocab;

  // model.merges, in file order: a pair ["a", "b"], a line "a b" (kept whole in `a`), or something else.
  enum class MergeForm : uint8_t { Pair, Line, Malformed };
  struct Merge {
    uint32_t a_offset, a_len, b_offset, b_len;
    MergeForm form;
  };
  std::string merges_text;
  std::vector<Merge> merges;

  std::string_view vocab_token(const VocabEntry& e) const { return std::string_view(vocab_text).substr(e.offset, e.len); }
  std::string_view merge_a(const Merge& m) const { return std::string_view(merges_text).substr(m.a_offset, m.a_len); }
  std::string_view merge_b(const Merge& m) const { return std::string_view(merges_text).substr(m.b_offset, m.b_len); }
};

// Throws ds4::Error(Tokenizer) naming the file when it cannot be read or is not valid JSON.
TokenizerJson read_tokenizer_json(const std::string& path);

}  // namespace ds4::text
