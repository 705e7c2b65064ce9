// Failures surface as ds4::Error: CUDA runtime errors (with the CUDA error string), shapes an op cannot take,
// and an exhausted scratch arena.
#include "cuda_test_util.h"

namespace ds4::cuda::test {
namespace {

TEST(CudaErrors, FailedAllocationIsAnError) {
  try {
    DeviceBuffer<float> huge(size_t(1) << 50);
    FAIL() << "a 4 PiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}

TEST(CudaErrors, CheckCarriesTheCudaErrorString) {
  try {
    DS4_CUDA_CHECK(cudaSetDevice(1 << 20));
    FAIL() << "cudaSetDevice of a missing device succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaSetDevice"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaError"), std::string::npos) << e.what();
  }
  DS4_CUDA_CHECK(cudaSetDevice(0));
}

TEST(CudaErrors, UnsupportedShapesAreRejectedBeforeLaunch) {
  DeviceBuffer<float> buf(1024);
  const float* p = buf.get();
  EXPECT_THROW(attention(ctx(), p, p, p, AttnShape{2, 1, 96}, 1, KeySelection::causal(0, 1), 1.0f, nullptr, buf.get()),
               Error);
  EXPECT_THROW(attention(ctx(), p, p, p, AttnShape{3, 2, 64}, 1, KeySelection::causal(0, 1), 1.0f, nullptr, buf.get()),
               Error);
  EXPECT_THROW(rms_norm_offset(ctx(), p, nullptr, buf.get(), 1, 100, 30, 1e-6f), Error);
  EXPECT_THROW(gated_delta_recurrent(ctx(), p, p, p, p, p, DeltaShape{1, 1, 512, 4}, buf.get(), buf.get()), Error);
  EXPECT_THROW(topk(ctx(), p, 1, 10, 10, 11, nullptr), Error);
  EXPECT_THROW(linear(ctx(), p, 1, 0, nullptr, 4, buf.get()), Error);
}

TEST(CudaErrors, ExhaustedScratchIsAnError) {
  Context small(0, 4096);
  DeviceBuffer<float> logits(64 * 512);
  DeviceBuffer<int32_t> idx(64 * 10);
  DeviceBuffer<float> w(64 * 10);
  try {
    moe_route(small, logits.get(), 64, 512, 10, true, idx.get(), w.get());
    FAIL() << "moe_route ran without the scratch it needs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scratch"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ds4::cuda::test
