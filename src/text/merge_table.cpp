#include "text/merge_table.h"

namespace ds4::text {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  int bits = 4;
  while (cap < 2 * n) {
    cap *= 2;
    ++bits;
  }
  if (cap <= slots_.size()) return;
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  shift_ = 64 - bits;
  count_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) put(int32_t(s.key >> 32), int32_t(uint32_t(s.key)), s.merge);
}

void MergeTable::put(int32_t left, int32_t right, Merge m) {
  if (2 * (count_ + 1) > slots_.size()) reserve(count_ + 1);
  uint64_t key = pack(left, right);
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) {
      s.merge = m;
      return;
    }
    if (s.key == kEmpty) {
      s.key = key;
      s.merge = m;
      ++count_;
      return;
    }
  }
}

}  // namespace ds4::text
