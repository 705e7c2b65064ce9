// A Hugging Face tokenizer loaded from tokenizer.json, producing the same ids as HF `tokenizers`
// (Tokenizer.from_file(path).encode(text, add_special_tokens).ids) and the same text from decode.
//
// Encoding runs HF's pipeline: added tokens with normalized=false are cut from the raw text; each
// remaining stretch is normalized and cut by the normalized added tokens; the rest is pre-tokenized and
// each piece goes through the BPE model; with add_special_tokens the post-processor adds what the file
// asks for (a BOS, say). See the normalizer/pre_tokenizer/bpe_model/added_vocabulary/post_processor/
// decoder headers for the supported components. Not applied: "truncation" and "padding" (an inference
// server must never cut a prompt silently).
//
// A Tokenizer is immutable after loading, cheap to copy (shared state) and safe to use from many
// threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::text {

class Tokenizer {
 public:
  // Throws ds4::Error(Tokenizer) naming the file when it cannot be read or is not a supported
  // tokenizer.json.
  static Tokenizer from_file(const std::string& tokenizer_json_path);

  // `text` must be valid UTF-8 (throws ds4::Error(Tokenizer) otherwise, naming the byte offset).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Ids outside the vocabulary are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;  // vocab or added token
  // Throws ds4::Error(Tokenizer) for an id that is neither in the vocabulary nor an added token.
  std::string id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  size_t vocab_size() const;  // max id + 1 across vocab and added tokens

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
  friend class StreamDecoder;
};

}  // namespace ds4::text
