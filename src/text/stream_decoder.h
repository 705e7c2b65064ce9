// Incremental decoding for streaming generated text: push ids one at a time and get the text that is
// final so far. Never emits half a UTF-8 character, and the concatenation of every push() and a final
// flush() equals Tokenizer::decode of all the ids, exactly (including U+FFFD for invalid bytes).
//
// With the ByteLevel decoder (all the models this project serves) each push costs O(token length): the
// bytes of the tokens are converted as soon as they form whole characters. Other decoders are run on a
// short window: the tokens emitted last (as context, so that first-token rules such as Metaspace's or
// Strip's do not apply to new text) plus the new ones, and the text beyond the context's is emitted once
// it can no longer change (not while a run of byte-fallback tokens is open or the text ends in U+FFFD).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace ds4::text {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string push(int32_t id);
  // Emits whatever is held back and starts a new stream.
  std::string flush();

 private:
  Tokenizer tokenizer_;  // shares the loaded state, so the decoder may outlive the caller's copy
  bool skip_special_tokens_;
  bool byte_level_;
  std::string pending_bytes_;  // ByteLevel: bytes of an incomplete trailing character
  // Other decoders: the ids since the last flush; [context_, pending_) were emitted last and give the
  // window its context, [pending_, end) are not emitted yet.
  std::vector<int32_t> ids_;
  size_t context_ = 0, pending_ = 0;
  std::string emit_window(bool final);
};

}  // namespace ds4::text
