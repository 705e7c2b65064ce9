// causal_conv1d against cpu::causal_conv1d over consecutive chunks (1, 7, 200, 1 tokens) so the carried history
// is exercised, including chunks shorter than the history. The sum over K taps is in the same order; only FMA
// contraction differs, within 1e-6 of the tap magnitudes. The history is copied, so it must match exactly.
#include "cuda_test_util.h"

#include "backend/cpu/conv1d.h"

namespace ds4::cuda::test {
namespace {

struct ConvCase {
  int64_t C, K, dilation;
  Act act;
};
std::ostream& operator<<(std::ostream& o, const ConvCase& c) {
  return o << "C=" << c.C << " K=" << c.K << " dilation=" << c.dilation << " act=" << int(c.act);
}

class CudaConv1d : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CudaConv1d, ChunksWithCarriedState) {
  const auto c = GetParam();
  const int64_t S = (c.K - 1) * c.dilation;
  Weight w(size_t(c.C * c.K), 0.5f, uint32_t(c.C));
  std::vector<float> state(size_t(S * c.C), 0.0f);
  DeviceBuffer<float> dstate(std::max<size_t>(state.size(), 1));
  dstate.fill_bytes(0);
  uint32_t seed = 100;
  for (int64_t T : {1, 7, 200, 1, 2}) {
    const auto x = rand_vec(size_t(T * c.C), -2.0f, 2.0f, seed++);
    std::vector<float> want(x.size());
    cpu::causal_conv1d(x.data(), T, c.C, w.h(), c.K, c.dilation, state.data(), want.data(), c.act);
    auto dx = upload(x);
    auto dy = nan_buffer<float>(x.size());
    causal_conv1d(ctx(), dx.get(), T, c.C, w.d(), c.K, c.dilation, dstate.get(), dy.get(), c.act);
    expect_close(download(dy), want, 1e-5, 1e-6, "conv1d T=" + std::to_string(T));
    if (S) {
      auto got_state = download(dstate);
      got_state.resize(state.size());
      expect_close(got_state, state, 0.0, 0.0, "conv1d state T=" + std::to_string(T));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaConv1d,
                         ::testing::Values(ConvCase{300, 4, 1, Act::Silu},   // GDN short conv
                                           ConvCase{37, 4, 3, Act::Silu},    // PLE conv: dilation ngram_size
                                           ConvCase{64, 3, 2, Act::None}, ConvCase{10240, 4, 1, Act::Silu},
                                           ConvCase{5, 1, 1, Act::None}));  // no history at all

}  // namespace
}  // namespace ds4::cuda::test
