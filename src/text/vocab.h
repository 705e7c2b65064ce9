// The model vocabulary: token text <-> id, all token text in one buffer and an open-addressing index,
// so that ~150k entries cost a few allocations instead of ~300k, and lookups touch little memory.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::text {

class Vocab {
 public:
  struct Entry {
    uint32_t offset, len;  // the token's bytes in the text buffer
    int32_t id;
  };

  // `text` holds the tokens of `entries`; a token listed twice keeps its last id (as a JSON object does).
  Vocab(std::string text, const std::vector<Entry>& entries);
  Vocab() = default;

  // The id of `token`, or -1.
  int32_t find(std::string_view token) const {
    if (slots_.empty()) return -1;
    uint64_t h = hash(token);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      uint32_t e = slots_[i];
      if (e == 0) return -1;
      const Slot& s = entries_[e - 1];
      if (s.hash == uint32_t(h) && text(s) == token) return s.id;
    }
  }
  std::optional<std::string_view> token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= by_id_.size() || by_id_[id] == 0) return std::nullopt;
    return text(entries_[by_id_[id] - 1]);
  }
  size_t size() const { return entries_.size(); }  // distinct tokens
  int32_t max_id() const { return static_cast<int32_t>(by_id_.size()) - 1; }

  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : entries_) f(text(s), s.id);
  }

 private:
  struct Slot {
    uint32_t offset, len;
    int32_t id;
    uint32_t hash;
  };
  static uint64_t hash(std::string_view s);
  std::string_view text(const Slot& s) const { return std::string_view(text_).substr(s.offset, s.len); }

  std::string text_;
  std::vector<Slot> entries_;
  std::vector<uint32_t> slots_;  // entry index + 1; 0 is empty
  std::vector<uint32_t> by_id_;  // entry index + 1 for each id; 0 where no token has the id
  size_t mask_ = 0;
};

}  // namespace ds4::text
