// Decoders of tokenizer.json ("decoder"): they turn the token strings of a sequence of ids back into
// text, exactly as HF's decode_chain does. Supported: ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace and Sequence of these; null joins the tokens with spaces (the Tokenizer does that).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "text/json_node.h"

namespace ds4::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: rewrites the list of token strings; the text is their concatenation afterwards.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // True for the plain ByteLevel decoder, whose output is the UTF-8 (lossy) reading of the tokens'
  // bytes; a stream decoder can then work token by token.
  virtual bool is_byte_level() const { return false; }
  // True when the decoder holds back a trailing run of byte tokens (ByteFallback), whose text can
  // change when the next token arrives.
  virtual bool groups_byte_tokens() const { return false; }
};

// Throws ds4::Error(Tokenizer) naming the file for unknown types or malformed fields.
std::unique_ptr<Decoder> make_decoder(const JsonNode& node);

// The bytes a token stands for under the ByteLevel decoder: its byte-level characters mapped back, or
// its own UTF-8 when some character is outside the byte alphabet (as HF does for added tokens).
void append_byte_level_token(std::string_view token, std::string& bytes);

// Whether `token` is a byte-fallback token "<0xXX>"; sets `byte` when it is.
bool parse_byte_token(std::string_view token, unsigned char& byte);

}  // namespace ds4::text
