#include "text/added_vocabulary.h"

#include <algorithm>

#include "text/unicode_props.h"

namespace ds4::text {

void AddedVocabulary::Matcher::add(std::string_view pattern, int32_t id) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (unsigned char b : pattern) {
    auto& ch = nodes[node].children;
    auto it = std::lower_bound(ch.begin(), ch.end(), std::make_pair(b, int32_t{-1}));
    if (it == ch.end() || it->first != b) {
      auto fresh = static_cast<int32_t>(nodes.size());
      it = ch.insert(it, {b, fresh});
      nodes.emplace_back();  // invalidates `ch`; `fresh` is already recorded
    }
    node = it->second;
  }
  first_byte[static_cast<unsigned char>(pattern[0])] = true;
  if (nodes[node].pattern < 0) nodes[node].pattern = static_cast<int32_t>(patterns.size());
  patterns.push_back(id);
}

std::pair<size_t, int32_t> AddedVocabulary::Matcher::longest_at(std::string_view text, size_t i) const {
  size_t best_len = 0;
  int32_t best = -1;
  int32_t node = 0;
  for (size_t j = i; j < text.size(); ++j) {
    const auto& ch = nodes[node].children;
    auto b = static_cast<unsigned char>(text[j]);
    auto it = std::lower_bound(ch.begin(), ch.end(), std::make_pair(b, int32_t{-1}));
    if (it == ch.end() || it->first != b) break;
    node = it->second;
    if (nodes[node].pattern >= 0) {
      best_len = j + 1 - i;
      best = patterns[nodes[node].pattern];
    }
  }
  return {best_len, best};
}

AddedVocabulary::AddedVocabulary(const JsonNode& list, const BpeModel& model, const Normalizer* normalizer) {
  for (size_t i = 0; i < list.array().size(); ++i) {
    JsonNode e = list.element(i);
    AddedToken t;
    t.content = e.at("content").str();
    t.single_word = e.bool_or("single_word", false);
    t.lstrip = e.bool_or("lstrip", false);
    t.rstrip = e.bool_or("rstrip", false);
    t.normalized = e.bool_or("normalized", true);
    t.special = e.bool_or("special", false);
    e.at("id").integer();  // required by the format; HF re-derives ids (below) and only warns on mismatch
    add(t, model);
  }
  // HF's refresh_added_tokens: special tokens first, then the others, each set in insertion order.
  auto register_token = [&](const AddedToken& t) {
    int32_t id = id_of_.at(t.content);
    if (!t.normalized) {
      raw_.add(t.content, id);
    } else {
      std::string spelled = t.content;
      if (normalizer) normalizer->normalize(spelled);
      normalized_.add(spelled, id);
    }
  };
  for (const auto& t : special_) register_token(t);
  for (const auto& t : plain_) register_token(t);
}

// HF's AddedVocabulary::add_tokens for one token.
void AddedVocabulary::add(const AddedToken& t, const BpeModel& model) {
  if (t.content.empty()) return;
  if (t.special && !is_special_content(t.content)) {
    special_.push_back(t);
    special_contents_.insert(t.content);
  }
  for (const auto& [id, existing] : by_id_)
    if (existing == t) return;
  int32_t id;
  if (auto known = token_to_id(t.content)) {
    id = *known;
  } else if (auto in_vocab = model.token_to_id(t.content)) {
    id = *in_vocab;
  } else {
    // The next id after the added ones, but never inside the model's range.
    auto vocab_size = static_cast<int32_t>(model.vocab_entries());
    id = vocab_size;
    for (const auto& [content, other] : id_of_) id = std::max(id, other >= vocab_size ? other + 1 : vocab_size);
  }
  id_of_[t.content] = id;
  by_id_[id] = t;
  max_id_ = std::max(max_id_, id);
  if (!is_special_content(t.content)) plain_.push_back(t);
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = id_of_.find(content);
  if (it == id_of_.end()) return std::nullopt;
  return it->second;
}

const AddedToken* AddedVocabulary::token(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

bool AddedVocabulary::is_special_content(std::string_view content) const {
  return special_contents_.find(content) != special_contents_.end();
}

void AddedVocabulary::split(std::string_view text, bool normalized_set, std::vector<Segment>& out) const {
  const Matcher& m = normalized_set ? normalized_ : raw_;
  size_t done = 0;  // end of the last emitted segment
  size_t i = 0;
  while (i < text.size()) {
    if (!m.first_byte[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    auto [len, id] = m.longest_at(text, i);
    if (len == 0) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + len;
    i = stop;  // the search resumes after the match even when the match is dropped below
    const AddedToken& t = by_id_.at(id);
    if (t.single_word && (unicode::ends_with_word_char(text.substr(0, start)) ||
                          unicode::starts_with_word_char(text.substr(stop))))
      continue;
    if (t.lstrip) start = std::max(unicode::white_space_suffix_start(text.substr(0, start)), done);
    if (t.rstrip) stop = unicode::skip_white_space(text, stop);
    if (done < start) out.push_back({done, start, -1});
    out.push_back({start, stop, id});
    done = stop;
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
}

}  // namespace ds4::text
