// The BPE model of tokenizer.json ("model": {"type": "BPE"}), with HF's semantics: a piece is split into
// characters (with continuing_subword_prefix / end_of_word_suffix when set), unknown characters go to
// byte_fallback tokens or the unk token (fused if fuse_unk), then merges are applied lowest rank first
// through HF's priority queue; ignore_merges returns whole-vocabulary pieces directly. Merges may be
// written as pairs ["a", "b"] or as "a b" strings.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_node.h"
#include "text/merge_table.h"
#include "text/tokenizer_json.h"
#include "text/vocab.h"
#include "text/word_cache.h"

namespace ds4::text {

class BpeModel {
 public:
  // `model` is the "model" object; its vocab and merges are read from `file` (where the streaming reader
  // put them). Throws ds4::Error(Tokenizer) naming the file when they are malformed.
  BpeModel(const JsonNode& model, const TokenizerJson& file);

  // Appends the ids of one pre-tokenized piece.
  void tokenize(std::string_view piece, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullopt when no vocabulary entry has this id.
  std::optional<std::string_view> id_to_token(int32_t id) const { return vocab_.token(id); }
  // The number of vocabulary entries (HF's get_vocab_size, which numbers new added tokens).
  size_t vocab_entries() const { return vocab_.size(); }
  int32_t max_id() const { return vocab_.max_id(); }

 private:
  int32_t lookup(std::string_view token) const { return vocab_.find(token); }
  // The id of a single character as it stands, or -1.
  int32_t bare_char_id(std::string_view ch) const;
  // The id of one character of a piece (prefix/suffix applied), or -1.
  int32_t char_id(std::string_view ch, bool first, bool last, std::string& buf) const;
  void merge_word(std::string_view piece, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::vector<int32_t> bmp_char_id_;   // id of each single BMP character (no prefix/suffix), -1 if none
  MergeTable merges_;
  std::optional<std::string> continuing_subword_prefix_, end_of_word_suffix_, unk_token_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::array<int32_t, 256> byte_token_id_{};  // "<0xXX>" tokens for byte_fallback, -1 if absent
  mutable WordCache cache_;
};

}  // namespace ds4::text
