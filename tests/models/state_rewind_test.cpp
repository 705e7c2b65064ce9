// SequenceState::mark / rewind on the CPU reference backend: after a rewind the state continues exactly as a clone
// taken at the mark does (logits and draft logits bit for bit), whatever ran in between (verification chunks of
// several lengths, crossing pooled-block boundaries of the sparse attention, draft-head calls), mark after mark as
// speculative decoding takes them.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "models/model.h"
#include "models/qwen4_fixture.h"
#include "support/paths.h"

namespace ds4 {
namespace {

std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& v : t) v = int32_t(rng() % uint32_t(vocab));
  return t;
}

void expect_rewind_continues_as_a_clone(const std::string& dir) {
  auto model = load_model(dir);
  const int64_t V = model->info().vocab_size;
  const auto tokens = random_tokens(200, V, 3), junk = random_tokens(200, V, 4);
  auto st = model->new_state();
  std::vector<float> a, b;
  model->forward(*st, std::span<const int32_t>(tokens.data(), 20), a, false);
  size_t next = 20, j = 0;
  const bool draft = model->has_draft_head();
  for (int64_t n : {2, 5, 1, 9, 2, 17, 3, 2}) {
    ASSERT_TRUE(st->mark()) << dir;
    auto clone = st->clone();
    // What a rejected draft leaves behind: a verification chunk and the draft head's pairs for it.
    model->forward(*st, std::span<const int32_t>(junk.data() + j, size_t(n)), a, true);
    if (draft) model->draft(*st, std::span<const int32_t>(junk.data() + j + 1, size_t(n)), a, true);
    j += size_t(n);
    st->rewind();
    ASSERT_EQ(st->position(), clone->position()) << dir;
    const std::span<const int32_t> one(tokens.data() + next, 1);
    model->forward(*st, one, a, false);
    model->forward(*clone, one, b, false);
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << dir << ": after a chunk of " << n;
    if (draft) {
      const std::span<const int32_t> pair(tokens.data() + next + 1, 1);
      model->draft(*st, pair, a, false);
      model->draft(*clone, pair, b, false);
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << dir << ": draft after " << n;
    }
    next++;
    // The next round marks the state that went on (an accepted draft), as the generator does.
    model->forward(*st, std::span<const int32_t>(tokens.data() + next, 1), a, false);
    next++;
  }
}

TEST(StateRewind, ContinuesAsACloneOnEveryFixture) {
  for (const auto& f : test::qwen4_fixture_names()) expect_rewind_continues_as_a_clone(test::qwen4_fixture(f));
}

TEST(StateRewind, ContinuesAsACloneWithTheDraftHead) {
  expect_rewind_continues_as_a_clone(test::source_dir() + "/models/tiny-flash-next");
}

}  // namespace
}  // namespace ds4
