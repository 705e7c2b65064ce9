// Added tokens ("added_tokens" of tokenizer.json): they are cut out of the text before normalization
// (tokens with normalized=false, matched on the raw text) or right after it (normalized=true, matched
// against their normalized spelling), and never reach the model. Matching follows HF: leftmost-longest
// over all tokens of a set, a single_word token is dropped where a word character touches it, lstrip /
// rstrip absorb the white space beside the token. Ids are assigned as HF assigns them on load.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/bpe_model.h"
#include "text/json_node.h"
#include "text/normalizer.h"
#include "text/string_hash.h"

namespace ds4::text {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
  bool operator==(const AddedToken&) const = default;
};

class AddedVocabulary {
 public:
  // A stretch [begin, end) of the text: an added token (id >= 0) or text for the model (id < 0).
  struct Segment {
    size_t begin, end;
    int32_t id;
  };

  // `list` is the "added_tokens" array; `normalizer` (may be null) spells the normalized tokens.
  AddedVocabulary(const JsonNode& list, const BpeModel& model, const Normalizer* normalizer);

  // Cuts `text` by the tokens of one set: normalized=false tokens on raw text (`normalized_set` false),
  // normalized=true tokens on normalized text. Appends segments covering all of `text`, in order.
  void split(std::string_view text, bool normalized_set, std::vector<Segment>& out) const;
  bool has_normalized_tokens() const { return !normalized_.patterns.empty(); }

  std::optional<int32_t> token_to_id(std::string_view content) const;
  const AddedToken* token(int32_t id) const;
  // HF decides "special" by content, so a vocabulary token spelled like a special token also counts.
  bool is_special_content(std::string_view content) const;
  int32_t max_id() const { return max_id_; }

 private:
  // Leftmost-longest matching over a set of patterns with a byte trie (what HF's Aho-Corasick with
  // MatchKind::LeftmostLongest reports).
  struct Matcher {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t pattern = -1;  // first pattern ending here
    };
    std::vector<Node> nodes{Node{}};
    std::vector<int32_t> patterns;  // pattern index -> token id
    bool first_byte[256] = {};

    void add(std::string_view pattern, int32_t id);
    // The longest pattern starting at text[i]: its length and token id; length 0 when none.
    std::pair<size_t, int32_t> longest_at(std::string_view text, size_t i) const;
  };

  void add(const AddedToken& t, const BpeModel& model);

  StringMap<int32_t> id_of_;
  std::unordered_map<int32_t, AddedToken> by_id_;
  StringSet special_contents_;
  std::vector<AddedToken> special_, plain_;  // HF's special_tokens and added_tokens lists, in order
  Matcher raw_, normalized_;
  int32_t max_id_ = -1;
};

}  // namespace ds4::text
