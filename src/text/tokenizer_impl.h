// The parts of a loaded Tokenizer, shared by tokenizer.cpp and stream_decoder.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "text/added_vocabulary.h"
#include "text/bpe_model.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/post_processor.h"
#include "text/pre_tokenizer.h"
#include "text/tokenizer.h"

namespace ds4::text {

struct Tokenizer::Impl {
  std::string path;
  std::unique_ptr<Normalizer> normalizer;        // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;   // may be null
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<AddedVocabulary> added;
  std::unique_ptr<PostProcessor> post_processor;  // may be null
  std::unique_ptr<Decoder> decoder;               // may be null

  // The string HF decodes an id as (added tokens first), or null for an unknown id.
  std::optional<std::string_view> token_string(int32_t id) const {
    if (const AddedToken* t = added->token(id)) return std::string_view(t->content);
    return model->id_to_token(id);
  }
  // Whether decode skips the id when asked to skip special tokens.
  bool skipped(std::string_view token, bool skip_special_tokens) const {
    return skip_special_tokens && added->is_special_content(token);
  }
};

}  // namespace ds4::text
