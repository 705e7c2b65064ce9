// One Tokenizer shared by several threads (as the server shares it) gives each thread the same ids as a
// lone thread does: encode's scratch space is per thread and the BPE cache is locked.
#include <gtest/gtest.h>

#include <thread>

#include "support/tokenizer_fixtures.h"

namespace ds4::test {
namespace {

TEST(TokenizerThreads, ConcurrentEncodesAgreeWithSerialOnes) {
  const auto& strings = test_strings();
  std::vector<std::vector<int32_t>> serial;
  for (const auto& s : strings) serial.push_back(tokenizer("deepseek_v3").encode(s));
  // A fresh instance, so that its BPE cache fills while the threads race.
  auto tok = text::Tokenizer::from_file(tokenizer_cache() + "/deepseek_v3/tokenizer.json");
  constexpr int kThreads = 4;
  std::vector<std::vector<std::vector<int32_t>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the strings from a different starting point, so the cache is filled in
      // different orders at the same time.
      results[t].resize(strings.size());
      for (size_t k = 0; k < strings.size(); ++k) {
        size_t i = (k + t * strings.size() / kThreads) % strings.size();
        results[t][i] = tok.encode(strings[i]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    for (size_t i = 0; i < strings.size(); ++i) ASSERT_EQ(results[t][i], serial[i]) << "thread " << t << ", " << show(strings[i]);
}

}  // namespace
}  // namespace ds4::test
