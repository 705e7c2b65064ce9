#include "text/vocab.h"

#include <algorithm>

namespace ds4::text {

uint64_t Vocab::hash(std::string_view s) {
  // FNV-1a, then a multiply to spread the low bits the table indexes with.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h * 0x9E3779B97F4A7C15ull >> 17 | h << 47;
}

Vocab::Vocab(std::string text, const std::vector<Entry>& entries) : text_(std::move(text)) {
  size_t cap = 16;
  while (cap < 2 * entries.size()) cap *= 2;
  slots_.assign(cap, 0);
  mask_ = cap - 1;
  entries_.reserve(entries.size());
  int32_t max_id = -1;
  for (const Entry& e : entries) {
    std::string_view token = std::string_view(text_).substr(e.offset, e.len);
    uint64_t h = hash(token);
    size_t i = h & mask_;
    for (; slots_[i] != 0; i = (i + 1) & mask_) {
      Slot& s = entries_[slots_[i] - 1];
      if (s.hash == uint32_t(h) && this->text(s) == token) break;
    }
    if (slots_[i] != 0) {
      entries_[slots_[i] - 1].id = e.id;  // repeated key: the last one counts
    } else {
      entries_.push_back({e.offset, e.len, e.id, uint32_t(h)});
      slots_[i] = static_cast<uint32_t>(entries_.size());
    }
    max_id = std::max(max_id, e.id);
  }
  by_id_.assign(static_cast<size_t>(max_id + 1), 0);
  for (size_t k = 0; k < entries_.size(); ++k) by_id_[entries_[k].id] = static_cast<uint32_t>(k + 1);
}

}  // namespace ds4::text
