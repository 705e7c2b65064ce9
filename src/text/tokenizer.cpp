#include "text/tokenizer.h"

#include "core/error.h"
#include "text/tokenizer_impl.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

namespace ds4::text {
namespace {

// Per-thread working storage of encode, reused across calls.
struct EncodeScratch {
  std::vector<AddedVocabulary::Segment> raw_segments, norm_segments;
  std::string normalized;
  PieceList pieces, spare;
};

}  // namespace

Tokenizer Tokenizer::from_file(const std::string& path) {
  TokenizerJson file = read_tokenizer_json(path);
  JsonNode root(file.doc, path, "");
  if (!file.doc.is_object()) root.fail("expected a JSON object at the top level");
  auto impl = std::make_shared<Impl>();
  impl->path = path;

  JsonNode model = root.at("model");
  std::string type = model.str_or("type", "BPE");  // HF infers BPE from its fields when "type" is absent
  if (type != "BPE") model.at("type").fail("unsupported model type '" + type + "' (supported: BPE)");
  impl->model = std::make_unique<BpeModel>(model, file);

  if (auto n = root.find("normalizer")) impl->normalizer = make_normalizer(*n);
  if (auto p = root.find("pre_tokenizer")) impl->pre_tokenizer = make_pre_tokenizer(*p);
  if (auto p = root.find("post_processor")) impl->post_processor = make_post_processor(*p);
  if (auto d = root.find("decoder")) impl->decoder = make_decoder(*d);
  nlohmann::json no_tokens = nlohmann::json::array();
  auto added = root.find("added_tokens");
  impl->added = std::make_unique<AddedVocabulary>(added ? *added : JsonNode(no_tokens, impl->path, "added_tokens"),
                                                  *impl->model, impl->normalizer.get());
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (size_t bad = utf8::find_invalid(text); bad != std::string_view::npos)
    throw Error(ErrorKind::Tokenizer, "cannot encode text that is not valid UTF-8 (bad byte at offset " +
                                          std::to_string(bad) + ")");
  const Impl& t = *impl_;
  thread_local EncodeScratch s;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);

  auto tokenize = [&](std::string_view stretch) {
    if (stretch.empty()) return;  // HF drops empty splits before pre-tokenizing
    s.pieces.text.assign(stretch);
    s.pieces.pieces.assign(1, {0, static_cast<uint32_t>(stretch.size())});
    if (t.pre_tokenizer) t.pre_tokenizer->apply(s.pieces, s.spare);
    for (size_t i = 0; i < s.pieces.pieces.size(); ++i) t.model->tokenize(s.pieces.piece(i), ids);
  };

  s.raw_segments.clear();
  t.added->split(text, false, s.raw_segments);
  for (const auto& seg : s.raw_segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    s.normalized.assign(text.substr(seg.begin, seg.end - seg.begin));
    if (t.normalizer) t.normalizer->normalize(s.normalized);
    if (!t.added->has_normalized_tokens()) {
      tokenize(s.normalized);
      continue;
    }
    s.norm_segments.clear();
    t.added->split(s.normalized, true, s.norm_segments);
    for (const auto& sub : s.norm_segments) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
      } else {
        tokenize(std::string_view(s.normalized).substr(sub.begin, sub.end - sub.begin));
      }
    }
  }
  if (add_special_tokens && t.post_processor) t.post_processor->add_special_tokens(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    auto tok = t.token_string(id);
    if (tok && !t.skipped(*tok, skip_special_tokens)) tokens.emplace_back(*tok);
  }
  std::string text;
  if (t.decoder) {
    t.decoder->decode_chain(tokens);
    for (const auto& s : tokens) text += s;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) text += ' ';
      text += tokens[i];
    }
  }
  return text;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = impl_->added->token_to_id(token)) return id;
  return impl_->model->token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const {
  auto tok = impl_->token_string(id);
  if (!tok) throw Error(ErrorKind::Tokenizer, "id " + std::to_string(id) + " is not in the vocabulary of '" + impl_->path + "'");
  return std::string(*tok);
}

bool Tokenizer::is_special(int32_t id) const {
  auto tok = impl_->token_string(id);
  return tok && impl_->added->is_special_content(*tok);
}

size_t Tokenizer::vocab_size() const {
  return static_cast<size_t>(std::max(impl_->model->max_id(), impl_->added->max_id()) + 1);
}

}  // namespace ds4::text
