#include "text/stream_decoder.h"

#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace ds4::text {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer),
      skip_special_tokens_(skip_special_tokens),
      byte_level_(tokenizer.impl_->decoder && tokenizer.impl_->decoder->is_byte_level()) {}

std::string StreamDecoder::push(int32_t id) {
  const Tokenizer::Impl& t = *tokenizer_.impl_;
  auto tok = t.token_string(id);
  if (!tok || t.skipped(*tok, skip_special_tokens_)) return {};  // decode drops these ids too
  std::string out;
  if (byte_level_) {
    append_byte_level_token(*tok, pending_bytes_);
    size_t used = utf8::append_lossy(out, pending_bytes_, /*final=*/false);
    pending_bytes_.erase(0, used);
    return out;
  }
  ids_.push_back(id);
  unsigned char byte;
  if (t.decoder && t.decoder->groups_byte_tokens() && parse_byte_token(*tok, byte)) return out;  // run still open
  return emit_window(false);
}

std::string StreamDecoder::emit_window(bool final) {
  auto decode = [&](size_t from, size_t to) {
    return tokenizer_.decode(std::span<const int32_t>(ids_).subspan(from, to - from), skip_special_tokens_);
  };
  // Context that renders as nothing gives no protection against first-token rules; widen it.
  std::string context = decode(context_, pending_);
  while (context.empty() && context_ > 0) context = decode(--context_, pending_);
  std::string window = decode(context_, ids_.size());
  std::string out;
  bool unsettled = window.size() >= utf8::kReplacement.size() &&
                   std::string_view(window).substr(window.size() - utf8::kReplacement.size()) == utf8::kReplacement;
  if (window.compare(0, context.size(), context) != 0 || (unsettled && !final)) return out;
  out = window.substr(context.size());
  context_ = pending_;
  pending_ = ids_.size();
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  if (byte_level_) {
    utf8::append_lossy(out, pending_bytes_, /*final=*/true);
    pending_bytes_.clear();
    return out;
  }
  out = emit_window(true);
  ids_.clear();
  context_ = pending_ = 0;
  return out;
}

}  // namespace ds4::text
