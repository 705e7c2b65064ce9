// A bounded, thread-safe cache from a pre-tokenized piece to its BPE ids. Natural text repeats the same
// words constantly, and a lookup is far cheaper than merging. Like HF's, it stops admitting entries when
// full and skips long pieces; it changes speed only, never results.
#pragma once
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "text/string_hash.h"

namespace ds4::text {

class WordCache {
 public:
  static constexpr size_t kCapacity = 1 << 17;
  static constexpr size_t kMaxWordBytes = 256;

  // Appends the cached ids of `word` to `out`; false when absent.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const {
    std::shared_lock lock(mu_);
    auto it = map_.find(word);
    if (it == map_.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view word, const int32_t* ids, size_t n) {
    if (word.size() > kMaxWordBytes) return;
    std::unique_lock lock(mu_);
    if (map_.size() >= kCapacity) return;
    map_.try_emplace(std::string(word), ids, ids + n);
  }

 private:
  mutable std::shared_mutex mu_;
  StringMap<std::vector<int32_t>> map_;
};

}  // namespace ds4::text
