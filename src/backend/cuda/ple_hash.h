// PLE n-gram hashing (models/qwen_hybrid/ple.cpp, ple_ngram_rows) as a host/device function of one token, so
// the CUDA kernel and a CPU test share it. Plain C++: no CUDA headers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/topk_select.h"  // DS4_HD
#include "core/error.h"

namespace ds4::cuda {

// The hashing constants of one PLE layer (weights.h: multipliers, head vocab sizes and offsets), passed to the
// kernel by value.
struct PleHash {
  static constexpr int kMaxN = 8, kMaxHeads = 64;
  int32_t ngram = 0, heads_per_ngram = 0;  // ngram_size N; heads = (N - 1) * heads_per_ngram
  int64_t eos = 0;
  int64_t multipliers[kMaxN] = {};
  int64_t head_sizes[kMaxHeads] = {};
  int64_t head_offsets[kMaxHeads] = {};

  DS4_HD int64_t heads() const { return int64_t(ngram - 1) * heads_per_ngram; }

  static PleHash make(int64_t ngram, int64_t heads_per_ngram, int64_t eos, const std::vector<int64_t>& multipliers,
                      const std::vector<int64_t>& head_sizes, const std::vector<int64_t>& head_offsets) {
    const int64_t heads = (ngram - 1) * heads_per_ngram;
    if (ngram < 2 || ngram > kMaxN || heads_per_ngram < 1 || heads > kMaxHeads)
      throw Error(ErrorKind::Unsupported, "PLE hashing: ngram_size " + std::to_string(ngram) + " with " +
                                              std::to_string(heads_per_ngram) + " heads per n-gram exceeds the CUDA limits");
    if (int64_t(multipliers.size()) != ngram || int64_t(head_sizes.size()) != heads ||
        int64_t(head_offsets.size()) != heads)
      throw Error(ErrorKind::Shape, "PLE hashing: constants do not match ngram_size and heads_per_ngram");
    PleHash h;
    h.ngram = int32_t(ngram);
    h.heads_per_ngram = int32_t(heads_per_ngram);
    h.eos = eos;
    for (int64_t i = 0; i < ngram; i++) h.multipliers[i] = multipliers[size_t(i)];
    for (int64_t i = 0; i < heads; i++) {
      h.head_sizes[i] = head_sizes[size_t(i)];
      h.head_offsets[i] = head_offsets[size_t(i)];
    }
    return h;
  }
};

// Table row of head `head` of the token at history index i (i >= N - 1; hist(j) is the token at history index
// j, the history being the carried context followed by the chunk). Head h of n-gram order n = h /
// heads_per_ngram + 2 hashes the token and the n - 1 before it. A token sh places back counts only when no eos
// lies between it and token i, inclusive of itself; eos stands in otherwise. One head at a time, so that a
// decode step's heads hash in parallel threads (ple_embed_kernel).
template <class Hist>
DS4_HD inline int64_t ple_head_row(const PleHash& p, Hist hist, int64_t i, int head) {
  const int n = head / p.heads_per_ngram + 2;
  // int64 products wrap exactly as torch's do; unsigned arithmetic makes that well defined.
  int64_t tok = hist(i);
  uint64_t mixed = uint64_t(tok) * uint64_t(p.multipliers[0]);
  bool ok = true;
  for (int sh = 1; sh < n; sh++) {
    tok = hist(i - sh);
    ok = ok && tok != p.eos;
    mixed ^= uint64_t(ok ? tok : p.eos) * uint64_t(p.multipliers[sh]);
  }
  const int64_t m = int64_t(mixed), size = p.head_sizes[head];
  int64_t r = m % size;
  if (r < 0) r += size;  // torch.remainder takes the divisor's sign
  return r + p.head_offsets[head];
}

// The (N-1) * heads_per_ngram table rows of the token at history index i, head by head.
template <class Hist>
DS4_HD inline void ple_token_rows(const PleHash& p, Hist hist, int64_t i, int64_t* rows) {
  for (int head = 0; head < int(p.heads()); head++) rows[head] = ple_head_row(p, hist, i, head);
}

}  // namespace ds4::cuda
