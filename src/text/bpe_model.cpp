#include "text/bpe_model.h"

#include <cstdio>
#include <algorithm>

#include "core/error.h"
#include "text/utf8.h"

namespace ds4::text {
namespace {

// Ids above this are rejected: they would make the by-id tables absurdly large.
constexpr int64_t kMaxId = 1 << 24;

// HF's Word: the symbols of a piece as a linked list over a vector, merged in place.
struct Symbol {
  int32_t id;
  int32_t prev, next;
  uint32_t len;  // bytes of the piece it covers; 0 once merged into its left neighbour
};

// A candidate merge in HF's priority queue: lowest rank first, then leftmost position.
struct Candidate {
  uint32_t rank;
  uint32_t pos;
  int32_t new_id;
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

void add_symbol(std::vector<Symbol>& syms, int32_t id, uint32_t len) {
  auto n = static_cast<int32_t>(syms.size());
  if (n > 0) syms.back().next = n;
  syms.push_back({id, n - 1, -1, len});
}

}  // namespace

BpeModel::BpeModel(const JsonNode& model, const TokenizerJson& file) {
  if (auto dropout = model.find("dropout")) {
    if (!dropout->json().is_number()) dropout->fail("expected a number");
    if (dropout->json().get<double>() > 0) dropout->fail("BPE dropout is not supported (it makes tokenization random)");
  }
  if (auto p = model.find("continuing_subword_prefix"); p && !p->str().empty()) continuing_subword_prefix_ = p->str();
  if (auto s = model.find("end_of_word_suffix"); s && !s->str().empty()) end_of_word_suffix_ = s->str();
  if (auto u = model.find("unk_token")) unk_token_ = u->str();
  fuse_unk_ = model.bool_or("fuse_unk", false);
  byte_fallback_ = model.bool_or("byte_fallback", false);
  ignore_merges_ = model.bool_or("ignore_merges", false);

  JsonNode vocab = model.at("vocab");
  vocab.object();  // must be an object (the reader only diverts it when it is)
  std::vector<Vocab::Entry> entries;
  entries.reserve(file.vocab.size());
  for (const auto& e : file.vocab) {
    std::string token(file.vocab_token(e));
    if (!e.id_is_integer) vocab.fail("id of '" + token + "' is not an integer");
    if (e.id < 0 || e.id >= kMaxId) vocab.fail("id of '" + token + "' is out of range: " + std::to_string(e.id));
    entries.push_back({e.offset, e.len, static_cast<int32_t>(e.id)});
  }
  vocab_ = Vocab(file.vocab_text, entries);

  bmp_char_id_.assign(0x10000, -1);
  vocab_.for_each([&](std::string_view token, int32_t id) {
    size_t i = 0;
    if (token.empty()) return;
    char32_t cp = utf8::next(token, i);
    if (i == token.size() && cp < 0x10000) bmp_char_id_[cp] = id;
  });
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_token_id_[b] = lookup(name);
  }

  JsonNode merges = model.at("merges");
  merges.array();  // must be an array (the reader only diverts it when it is)
  merges_.reserve(file.merges.size());
  size_t prefix_len = continuing_subword_prefix_ ? continuing_subword_prefix_->size() : 0;
  uint32_t rank = 0;
  std::string merged;
  auto at = [&](size_t i) { return JsonNode(merges.json(), merges.file(), merges.path() + "[" + std::to_string(i) + "]"); };
  for (size_t i = 0; i < file.merges.size(); ++i) {
    const auto& m = file.merges[i];
    std::string_view a = file.merge_a(m), b = file.merge_b(m);
    if (m.form == TokenizerJson::MergeForm::Malformed) at(i).fail("a merge must be [\"a\", \"b\"] or \"a b\"");
    if (m.form == TokenizerJson::MergeForm::Line) {
      std::string_view line = a;
      if (line.substr(0, 8) == "#version") continue;  // header line of merges.txt files, not a merge
      size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
        at(i).fail("a merge written as a string must be two tokens separated by one space");
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    }
    int32_t ia = lookup(a), ib = lookup(b);
    if (ia < 0 || ib < 0)
      at(i).fail("merge uses '" + std::string(ia < 0 ? a : b) + "', which is not in the vocabulary");
    merged.assign(a);
    if (b.size() > prefix_len) merged.append(b.substr(prefix_len));
    int32_t im = lookup(merged);
    if (im < 0) at(i).fail("merged token '" + merged + "' is not in the vocabulary");
    merges_.put(ia, ib, {rank++, im});
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  int32_t id = lookup(token);
  if (id < 0) return std::nullopt;
  return id;
}

int32_t BpeModel::bare_char_id(std::string_view ch) const {
  size_t i = 0;
  char32_t cp = utf8::next(ch, i);
  return cp < 0x10000 ? bmp_char_id_[cp] : lookup(ch);
}

int32_t BpeModel::char_id(std::string_view ch, bool first, bool last, std::string& buf) const {
  bool prefix = !first && continuing_subword_prefix_, suffix = last && end_of_word_suffix_;
  if (!prefix && !suffix) return bare_char_id(ch);
  buf.clear();
  if (prefix) buf += *continuing_subword_prefix_;
  buf += ch;
  if (suffix) buf += *end_of_word_suffix_;
  return lookup(buf);
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (int32_t id = lookup(piece); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (utf8::seq_len(static_cast<unsigned char>(piece[0])) == piece.size() && !continuing_subword_prefix_ &&
      !end_of_word_suffix_) {
    // One character: nothing to merge.
    if (int32_t id = bare_char_id(piece); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (cache_.lookup(piece, out)) return;
  size_t start = out.size();
  merge_word(piece, out);
  cache_.insert(piece, out.data() + start, out.size() - start);
}

void BpeModel::merge_word(std::string_view piece, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> syms;
  thread_local std::vector<Candidate> heap;
  thread_local std::string buf;
  syms.clear();

  // Characters to symbols, with HF's handling of characters missing from the vocabulary.
  int32_t unk_id = -1;
  uint32_t unk_len = 0;  // a pending unk symbol (fuse_unk grows it) when unk_len > 0
  auto unk_token_id = [&]() {
    int32_t id = lookup(*unk_token_);
    if (id < 0) throw Error(ErrorKind::Tokenizer, "unk_token '" + *unk_token_ + "' is not in the vocabulary");
    return id;
  };
  for (size_t i = 0; i < piece.size();) {
    size_t n = utf8::seq_len(static_cast<unsigned char>(piece[i]));
    std::string_view ch = piece.substr(i, n);
    bool first = i == 0, last = i + n == piece.size();
    i += n;
    int32_t id = char_id(ch, first, last, buf);
    if (id >= 0) {
      if (unk_len > 0) {
        add_symbol(syms, unk_id, unk_len);
        unk_len = 0;
      }
      add_symbol(syms, id, static_cast<uint32_t>(n));
      continue;
    }
    if (byte_fallback_) {
      // HF spells the bytes of the character as written with prefix/suffix; all must exist.
      std::string spelled = !first && continuing_subword_prefix_ ? *continuing_subword_prefix_ : std::string();
      spelled += ch;
      if (last && end_of_word_suffix_) spelled += *end_of_word_suffix_;
      bool all = true;
      for (unsigned char b : spelled) all &= byte_token_id_[b] >= 0;
      if (all) {
        for (unsigned char b : spelled) add_symbol(syms, byte_token_id_[b], 1);
        continue;  // HF leaves a pending unk pending here
      }
    }
    if (unk_token_) {
      if (unk_len > 0 && fuse_unk_) {
        unk_len += static_cast<uint32_t>(n);
      } else {
        if (unk_len > 0) add_symbol(syms, unk_id, unk_len);
        unk_id = unk_token_id();
        unk_len = static_cast<uint32_t>(n);
      }
    }
    // Without an unk token HF drops the character.
  }
  if (unk_len > 0) add_symbol(syms, unk_id, unk_len);

  // HF's merge_all: a priority queue of candidate merges; an entry is stale when its position was merged
  // away or the pair there no longer merges into the same token.
  // std::push_heap/pop_heap on a reused vector: a max-heap under Candidate's inverted order.
  heap.clear();
  auto push = [&](Candidate c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end());
  };
  for (size_t p = 0; p + 1 < syms.size(); ++p)
    if (const auto* m = merges_.find(syms[p].id, syms[p + 1].id)) push({m->rank, uint32_t(p), m->new_id});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Candidate top = heap.back();
    heap.pop_back();
    Symbol& cur = syms[top.pos];
    if (cur.len == 0 || cur.next < 0) continue;
    Symbol right = syms[cur.next];
    const auto* m = merges_.find(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    cur.len += right.len;
    syms[cur.next].len = 0;
    cur.next = right.next;
    if (right.next >= 0) syms[right.next].prev = static_cast<int32_t>(top.pos);
    if (cur.prev >= 0)
      if (const auto* pm = merges_.find(syms[cur.prev].id, cur.id))
        push({pm->rank, uint32_t(cur.prev), pm->new_id});
    if (cur.next >= 0)
      if (const auto* nm = merges_.find(cur.id, syms[cur.next].id)) push({nm->rank, top.pos, nm->new_id});
  }
  for (const Symbol& s : syms)
    if (s.len != 0) out.push_back(s.id);
}

}  // namespace ds4::text
