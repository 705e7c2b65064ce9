// Top-k selection that picks the same set as torch.topk on CPU, ties included: torch fills (value, index)
// pairs in index order and runs std::partial_sort when k * 64 <= n, else std::nth_element, with a
// comparator on values only. Equal scores (the QSA indexer's relu often gives exact zeros) are therefore
// resolved by the same algorithm rather than by index.
#pragma once
#include <cstdint>
#include <vector>

namespace ds4::cpu {

// Indices of the k largest of v[0..n); order within the result follows torch (sorted descending).
std::vector<int64_t> topk_indices(const float* v, int64_t n, int64_t k);

}  // namespace ds4::cpu
