// The BPE merge rules as a flat open-addressing hash table from a pair of token ids to the merge's rank
// and the id of the merged token: the BPE inner loop looks pairs up constantly, and this is several times
// faster than std::unordered_map.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds4::text {

class MergeTable {
 public:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };

  void reserve(size_t n);
  // Inserts or overwrites (HF builds its map from the merges in order, so a repeated pair keeps the
  // last rank).
  void put(int32_t left, int32_t right, Merge m);
  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    uint64_t key = pack(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static uint64_t pack(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  size_t slot_of(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t count_ = 0;
};

}  // namespace ds4::text
