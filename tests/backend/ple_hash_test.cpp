// The CUDA PLE hashing (backend/cuda/ple_hash.h) against the CPU model's ple_ngram_rows, chunk by chunk with the
// carried context, on sequences dense with eos tokens. Runs on the CPU: the device kernel calls the same function.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backend/cuda/ple_hash.h"
#include "models/qwen_hybrid/ple.h"

namespace ds4 {
namespace {

TEST(PleHashReplay, MatchesCpuRowsAcrossChunks) {
  for (int64_t N : {2, 3, 4}) {
    qwen::Config c;
    c.vocab_size = 151936;
    c.ngram_size = N;
    c.heads_per_ngram = 3;
    c.eos_ids = {151645};
    c.seed = 1234;
    qwen::PleWeights w;
    const int64_t heads = (N - 1) * c.heads_per_ngram, ple_index = 1;
    w.multipliers = qwen::ple_layer_multipliers(c.vocab_size, N, ple_index, c.seed);
    w.head_sizes = qwen::ple_head_vocab_sizes(20000000, heads, ple_index);
    int64_t total = 0;
    for (auto s : w.head_sizes) {
      w.head_offsets.push_back(total);
      total += s;
    }
    const auto hash = cuda::PleHash::make(N, c.heads_per_ngram, c.eos_for_ple(), w.multipliers, w.head_sizes,
                                          w.head_offsets);
    qwen::PleState s;
    s.context.assign(size_t(N - 1), c.eos_for_ple());
    std::vector<int64_t> ctx = s.context;  // the device-side context, updated as the kernel does
    std::mt19937 rng{uint32_t(N)};
    std::uniform_int_distribution<int32_t> tok(0, int32_t(c.vocab_size - 1));
    std::uniform_int_distribution<int> coin(0, 5);
    for (int64_t chunk : {1, 2, 5, 1, 17, 3}) {
      std::vector<int32_t> tokens(static_cast<size_t>(chunk));
      for (auto& t : tokens) t = coin(rng) == 0 ? int32_t(c.eos_for_ple()) : tok(rng);
      const auto want = qwen::ple_ngram_rows(w, c, s, tokens.data(), chunk);
      const int64_t cx = N - 1;
      auto hist = [&](int64_t i) { return i < cx ? ctx[size_t(i)] : int64_t(tokens[size_t(i - cx)]); };
      std::vector<int64_t> got(static_cast<size_t>(chunk * heads));
      for (int64_t t = 0; t < chunk; t++) cuda::ple_token_rows(hash, hist, cx + t, got.data() + t * heads);
      ASSERT_EQ(got, want) << "N=" << N << " chunk=" << chunk;
      std::vector<int64_t> next(static_cast<size_t>(cx));
      for (int64_t r = 0; r < cx; r++) next[size_t(r)] = hist(chunk + r);
      ctx = next;
      ASSERT_EQ(ctx, s.context);
    }
  }
}

TEST(PleHashReplay, RejectsShapesBeyondTheKernelLimits) {
  EXPECT_THROW(cuda::PleHash::make(9, 1, 0, std::vector<int64_t>(9), std::vector<int64_t>(8), std::vector<int64_t>(8)),
               Error);
  EXPECT_THROW(cuda::PleHash::make(3, 2, 0, std::vector<int64_t>(3), std::vector<int64_t>(3), std::vector<int64_t>(4)),
               Error);
}

}  // namespace
}  // namespace ds4
