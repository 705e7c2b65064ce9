// The CPU backend splits work across OpenMP threads by output element, so the thread count must not change
// a single bit of the logits (the rest of the suite runs single-threaded).
#include <gtest/gtest.h>
#include <omp.h>

#include "models/model.h"
#include "models/qwen4_fixture.h"

namespace ds4 {
namespace {

TEST(Qwen4ThreadCount, LogitsAreBitIdenticalAcrossThreadCounts) {
  const auto name = "text_f16_sharded";
  auto model = load_model(test::qwen4_fixture(name));
  const auto seq = test::qwen4_reference(name)["sequences"][2].get<std::vector<int32_t>>();
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    auto st = model->new_state();
    std::vector<float> a, b;
    model->forward(*st, std::span<const int32_t>(seq.data(), 90), a, true);
    model->forward(*st, std::span<const int32_t>(seq.data() + 90, 1), b, false);
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const auto one = run(1), four = run(4);
  omp_set_num_threads(1);
  EXPECT_EQ(one, four);
}

}  // namespace
}  // namespace ds4
