// Step 5 of SAMPLING.md without sorting the whole vocabulary: a permutation of the token ids whose first
// sorted() entries are in the law's order (p descending, then id ascending) and whose rest all rank
// after them. extend_to(n) grows the ordered prefix; the order is total, so the prefix is exactly that of
// a stable sort of the full vocabulary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ds4::engine {

class CandidateOrder {
 public:
  // Starts a new row; `p` (all >= 0, no NaN) must outlive the use of this object for the row.
  void reset(std::span<const double> p);
  void extend_to(size_t n);
  size_t sorted() const { return sorted_; }
  int32_t operator[](size_t i) const { return ids_[i]; }

 private:
  void select_and_sort(size_t n);  // for a short prefix: partition, then sort the prefix
  void radix_sort_rest();          // for a long one: order everything left in O(V)

  std::span<const double> p_;
  std::vector<int32_t> ids_;
  size_t sorted_ = 0;
  // Scratch of radix_sort_rest, kept between rows to avoid reallocating a vocabulary-sized buffer.
  struct Keyed {
    uint64_t key;
    int32_t id;
  };
  std::vector<Keyed> keyed_, keyed_tmp_;
  std::vector<uint8_t> in_prefix_;
  std::vector<uint32_t> counts_;  // one histogram per radix digit
};

}  // namespace ds4::engine
