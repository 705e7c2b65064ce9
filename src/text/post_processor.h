// Post-processors of tokenizer.json ("post_processor"): what encode(text, add_special_tokens=true) adds
// around the ids, e.g. a BOS token. Supported: TemplateProcessing (its "single" template), BertProcessing
// and RobertaProcessing ([cls] ids [sep]), ByteLevel (adds nothing to ids) and Sequence; null adds nothing.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "text/json_node.h"

namespace ds4::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Called only when special tokens are requested.
  virtual void add_special_tokens(std::vector<int32_t>& ids) const = 0;
};

// Throws ds4::Error(Tokenizer) naming the file for unknown types or malformed fields.
std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& node);

}  // namespace ds4::text
