// Elementwise ops, copies and gathers against host loops written with the CPU backend's activation functions.
// The kernels evaluate the same expressions; expf may differ from the host's by 2 ulp, hence rtol 1e-6.
#include "cuda_test_util.h"

#include <cuda_runtime.h>

#include <cstring>

#include "backend/cpu/norms.h"

namespace ds4::cuda::test {
namespace {

constexpr double kRtol = 1e-6, kAtol = 1e-7;

TEST(CudaElementwise, ActivateSwigluAddAndGates) {
  const int64_t n = 10007;  // not a multiple of a block
  const auto x = rand_vec(size_t(n), -8.0f, 8.0f, 1), y = rand_vec(size_t(n), -3.0f, 3.0f, 2);
  auto dx = upload(x), dy = upload(y);
  for (Act act : {Act::None, Act::Silu, Act::Sigmoid}) {
    auto out = nan_buffer<float>(size_t(n));
    activate(ctx(), dx.get(), out.get(), n, act, 4.0f, 2.0f);
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) want[size_t(i)] = 2.0f * cpu::apply_act(act, x[size_t(i)] / 4.0f);
    expect_close(download(out), want, kRtol, kAtol, "activate");
  }
  {
    auto out = nan_buffer<float>(size_t(n));
    swiglu(ctx(), dx.get(), dy.get(), out.get(), n);
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) want[size_t(i)] = cpu::silu(x[size_t(i)]) * y[size_t(i)];
    expect_close(download(out), want, kRtol, kAtol, "swiglu");
  }
  {
    auto out = nan_buffer<float>(size_t(n));
    add(ctx(), dx.get(), dy.get(), out.get(), n);
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) want[size_t(i)] = x[size_t(i)] + y[size_t(i)];
    expect_close(download(out), want, 0.0, 0.0, "add");
  }
  {
    auto m = upload(x);
    mul_sigmoid(ctx(), m.get(), dy.get(), n);
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) want[size_t(i)] = x[size_t(i)] * cpu::sigmoid(y[size_t(i)]);
    expect_close(download(m), want, kRtol, kAtol, "mul_sigmoid");
  }
  {
    const int64_t T = 7, H = 1429;  // 7 * 1429 = 10003 <= n
    const auto logit = rand_vec(size_t(T), -3.0f, 3.0f, 3);
    auto dl = upload(logit);
    auto out = nan_buffer<float>(size_t(T * H));
    add_gated_rows(ctx(), dx.get(), dy.get(), dl.get(), out.get(), T, H);
    std::vector<float> want(size_t(T * H));
    for (int64_t i = 0; i < T * H; i++) want[size_t(i)] = x[size_t(i)] + cpu::sigmoid(logit[size_t(i / H)]) * y[size_t(i)];
    expect_close(download(out), want, kRtol, kAtol, "add_gated_rows");
  }
}

TEST(CudaElementwise, CopyRowsEmbedAndStore) {
  const int64_t rows = 9, src_stride = 50, dst_stride = 40, cols = 33;
  const auto src = rand_vec(size_t(rows * src_stride), -1.0f, 1.0f, 4);
  auto ds = upload(src);
  auto dd = nan_buffer<float>(size_t(rows * dst_stride));
  copy_rows(ctx(), dd.get(), dst_stride, ds.get() + 5, src_stride, rows, cols);
  const auto got = download(dd);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < dst_stride; c++) {
      if (c < cols) EXPECT_EQ(got[size_t(r * dst_stride + c)], src[size_t(r * src_stride + 5 + c)]);
      else EXPECT_TRUE(std::isnan(got[size_t(r * dst_stride + c)])) << "copy_rows wrote past cols";
    }

  const int64_t V = 100, H = 37, T = 5, S = 4;
  Weight table(size_t(V * H), 1.0f, 5);
  const std::vector<int32_t> tokens{3, 99, 0, 3, 42};
  auto dt = upload(tokens);
  auto x = nan_buffer<float>(size_t(T * S * H));
  embed_streams(ctx(), table.d(), H, dt.get(), T, S, x.get());
  std::vector<float> want(size_t(T * S * H));
  for (int64_t t = 0; t < T; t++)
    for (int64_t s = 0; s < S; s++)
      for (int64_t h = 0; h < H; h++) want[size_t((t * S + s) * H + h)] = table.host[size_t(tokens[size_t(t)] * H + h)];
  expect_close(download(x), want, 0.0, 0.0, "embed_streams");

  // store_rows_bf16 appends rows 3..7 of a bf16 cache; the rows around them stay untouched.
  const auto rowsf = rand_vec(size_t(T * H), -2.0f, 2.0f, 6);
  auto dr = upload(rowsf);
  DeviceBuffer<bf16> cache(size_t(10 * H));
  cache.fill_bytes(0);
  store_rows_bf16(ctx(), dr.get(), T, H, cache.get(), 3);
  ctx().synchronize();
  const auto c = cache.download();
  for (int64_t r = 0; r < 10; r++)
    for (int64_t h = 0; h < H; h++) {
      uint16_t bits;
      std::memcpy(&bits, &c[size_t(r * H + h)], 2);
      const float want_v = (r >= 3 && r < 3 + T) ? bf16_round(rowsf[size_t((r - 3) * H + h)]) : 0.0f;
      EXPECT_EQ(bf16_bits_to_f32(bits), want_v) << "row " << r;
    }
}

// gather_rows from device memory and from mapped pinned host memory (how a PLE table too large for the GPU is read).
TEST(CudaElementwise, GatherRowsFromDeviceAndMappedHostTables) {
  const int64_t rows = 1000, cols = 40, n = 77;
  Weight table(size_t(rows * cols), 1.0f, 7);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) idx[size_t(i)] = (i * 389 + 11) % rows;
  auto di = upload(idx);
  std::vector<float> want(size_t(n * cols));
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < cols; c++) want[size_t(i * cols + c)] = table.host[size_t(idx[size_t(i)] * cols + c)];
  auto out = nan_buffer<float>(size_t(n * cols));
  gather_rows(ctx(), table.d(), cols, di.get(), n, out.get());
  expect_close(download(out), want, 0.0, 0.0, "gather_rows device");

  void* host = nullptr;
  ASSERT_EQ(cudaHostAlloc(&host, size_t(rows * cols) * 2, cudaHostAllocMapped), cudaSuccess);
  const auto bits = to_bf16(table.host);
  std::memcpy(host, bits.data(), bits.size() * 2);
  void* dev_view = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&dev_view, host, 0), cudaSuccess);
  auto out2 = nan_buffer<float>(size_t(n * cols));
  gather_rows(ctx(), static_cast<const bf16*>(dev_view), cols, di.get(), n, out2.get());
  expect_close(download(out2), want, 0.0, 0.0, "gather_rows mapped host");
  cudaFreeHost(host);
}

}  // namespace
}  // namespace ds4::cuda::test
