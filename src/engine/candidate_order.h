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
  // Starts a new row; `p` must outlive the use of this object for the row.
  void reset(std::span<const double> p);
  void extend_to(size_t n);
  size_t sorted() const { return sorted_; }
  int32_t operator[](size_t i) const { return ids_[i]; }

 private:
  std::span<const double> p_;
  std::vector<int32_t> ids_;
  size_t sorted_ = 0;
};

}  // namespace ds4::engine
