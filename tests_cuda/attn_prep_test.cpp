// attn_prep against the CPU steps it replaces (models/qwen_hybrid/sparse_attention.cpp): split the projection
// rows, cpu::rms_norm_offset of the query, key and indexer query heads, cpu RoPE (M-RoPE positions), bfloat16
// rounding of the cached keys and values at rows pos + t, and the raw indexer key. Every element written is
// checked, including the zero padding of padded head dims; copies and the value cache must be exact.
#include "cuda_test_util.h"

#include <array>

#include "backend/cpu/norms.h"
#include "backend/cpu/rope.h"

namespace ds4::cuda::test {
namespace {

struct PrepCase {
  int64_t T, NH, KVH, HD, HDp, IH, ID, rd, pos0;
};

void check_prep(const PrepCase& k, uint32_t seed) {
  const int64_t T = k.T, NH = k.NH, KVH = k.KVH, HD = k.HD, HDp = k.HDp, IH = k.IH, ID = k.ID;
  const int64_t QG = NH * 2 * HD, idx0 = QG + 2 * KVH * HD, ld = idx0 + (IH + (ID > 0 ? 1 : 0)) * ID + 3;
  const int64_t cap = k.pos0 + T + 2;
  const std::string what = "T=" + std::to_string(T) + " HD=" + std::to_string(HD) + " HDp=" + std::to_string(HDp) +
                           " IH=" + std::to_string(IH);
  const cpu::RopeTable table(k.rd, 1e6, {k.rd / 6 + 1, k.rd / 6 + 1, k.rd / 6});
  DeviceRope rope(table);
  const auto pr = rand_vec(size_t(T * ld), -3.0f, 3.0f, seed);
  const Weight qn(size_t(HD), 0.5f, seed + 1), kn(size_t(HD), 0.5f, seed + 2), in(size_t(ID > 0 ? ID : 1), 0.5f, seed + 3);
  std::vector<int32_t> pos3;
  for (int64_t t = 0; t < T; t++)
    pos3.insert(pos3.end(), {int32_t(k.pos0 + t), int32_t(k.pos0 + 2 * t), int32_t(k.pos0 + 3 * t)});
  const float eps = 1e-6f;

  // The CPU: per token, per segment.
  std::vector<float> want_q(size_t(T * NH * HDp), 0.0f), want_gate(size_t(T * NH * HD)), want_iq(size_t(T * IH * ID));
  std::vector<float> want_k(size_t(cap * KVH * HDp), 0.0f), want_v(size_t(cap * KVH * HDp), 0.0f);
  std::vector<float> want_ik(size_t(cap * ID), 0.0f);
  std::vector<float> cs(size_t(k.rd)), sn(size_t(k.rd)), seg(512);
  for (int64_t t = 0; t < T; t++) {
    const float* row = pr.data() + t * ld;
    table.cos_sin({pos3[size_t(3 * t)], pos3[size_t(3 * t + 1)], pos3[size_t(3 * t + 2)]}, cs.data(), sn.data());
    auto normed = [&](const float* src, int64_t L, const float* w) {
      cpu::rms_norm_offset(src, w, seg.data(), 1, L, L, eps);
      cpu::apply_rope(seg.data(), 1, L, k.rd, cs.data(), sn.data());
      return seg.data();
    };
    const int64_t r = k.pos0 + t;
    for (int64_t h = 0; h < NH; h++) {
      std::copy_n(normed(row + h * 2 * HD, HD, qn.h()), HD, want_q.begin() + (t * NH + h) * HDp);
      std::copy_n(row + h * 2 * HD + HD, HD, want_gate.begin() + (t * NH + h) * HD);
    }
    for (int64_t h = 0; h < KVH; h++) {
      const float* kk = normed(row + QG + h * HD, HD, kn.h());
      for (int64_t e = 0; e < HD; e++) {
        want_k[size_t((r * KVH + h) * HDp + e)] = bf16_round(kk[e]);
        want_v[size_t((r * KVH + h) * HDp + e)] = bf16_round(row[QG + KVH * HD + h * HD + e]);
      }
    }
    for (int64_t h = 0; h < IH; h++) std::copy_n(normed(row + idx0 + h * ID, ID, in.h()), ID, want_iq.begin() + (t * IH + h) * ID);
    if (ID > 0) std::copy_n(row + idx0 + IH * ID, ID, want_ik.begin() + r * ID);
  }

  auto dpr = upload(pr);
  auto dpos3 = upload(pos3);
  auto q = nan_buffer<float>(want_q.size()), gate = nan_buffer<float>(want_gate.size());
  auto iq = nan_buffer<float>(std::max<size_t>(want_iq.size(), 1));
  // Caches: zeros where nothing is written (rows before pos0 and after), as the model's grow from zero.
  DeviceBuffer<bf16> keys(want_k.size()), values(want_v.size());
  keys.fill_bytes(0), values.fill_bytes(0);
  DeviceBuffer<float> ik(std::max<size_t>(want_ik.size(), 1));
  ik.fill_bytes(0);
  DeviceBuffer<int64_t> dpos(1);
  dpos.upload(std::vector<int64_t>{k.pos0});
  attn_prep(ctx(), dpr.get(), ld, T, AttnPrepShape{NH, KVH, HD, HDp, IH, ID},
            AttnPrepNorms{qn.d(), kn.d(), ID > 0 ? in.d() : nullptr, eps}, rope.params(), Positions{dpos3.get(), 0},
            SeqPos{dpos.get(), cap - 1}, AttnPrepOut{q.get(), gate.get(), keys.get(), values.get(), IH ? iq.get() : nullptr,
                                                     ID ? ik.get() : nullptr});
  // Normalised and rotated values: the same arithmetic up to FMA contraction (rope_test's bound).
  expect_close_scaled(download(q), want_q, 1e-6, what + " q");
  expect_close(download(gate), want_gate, 0.0, 0.0, what + " gate");
  auto widen = [](const std::vector<bf16>& v) {
    std::vector<float> f(v.size());
    for (size_t i = 0; i < v.size(); i++) f[i] = bf16_bits_to_f32(reinterpret_cast<const uint16_t&>(v[i]));
    return f;
  };
  ctx().synchronize();
  // A key can round to the neighbouring bf16 where the float differs in its last bit: one bf16 ulp (2^-8 relative).
  expect_close(widen(keys.download()), want_k, 8e-3, 1e-6, what + " key cache");
  expect_close(widen(values.download()), want_v, 0.0, 0.0, what + " value cache");
  if (IH > 0) expect_close_scaled(download(iq), want_iq, 1e-6, what + " indexer q");
  if (ID > 0) expect_close(download(ik), want_ik, 0.0, 0.0, what + " index keys");
}

TEST(CudaAttnPrep, MatchesTheCpuSteps) {
  check_prep({1, 32, 2, 256, 256, 16, 128, 64, 777}, 1);  // a decode step at the Flash-Next shape
  check_prep({4, 32, 2, 256, 256, 16, 128, 64, 5}, 2);    // a verification chunk
  check_prep({37, 4, 2, 80, 128, 3, 32, 16, 0}, 3);       // padded head dim, prefill from 0
  check_prep({3, 6, 3, 64, 64, 0, 0, 24, 100}, 4);        // no indexer (the MTP head)
  check_prep({2, 8, 2, 256, 256, 4, 128, 128, 50}, 5);    // more than 32 rotated pairs: the kernel's general loop
}

TEST(CudaAttnPrep, RejectsBadShapes) {
  DeviceRope rope(cpu::RopeTable(16, 1e4, {3, 3, 2}));
  auto buf = nan_buffer<float>(4096);
  DeviceBuffer<bf16> cache(4096);
  const AttnPrepOut out{buf.get(), buf.get(), cache.get(), cache.get(), buf.get(), buf.get()};
  auto kind = [&](AttnPrepShape s, int64_t ld) {
    try {
      attn_prep(ctx(), buf.get(), ld, 1, s, AttnPrepNorms{nullptr, nullptr, nullptr, 1e-6f}, rope.params(),
                Positions{nullptr, 0}, SeqPos::host(0), out);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  EXPECT_EQ(kind({4, 3, 64, 64, 0, 0}, 1024), ErrorKind::InvalidArgument);     // heads not a multiple of kv heads
  EXPECT_EQ(kind({4, 2, 64, 32, 0, 0}, 1024), ErrorKind::InvalidArgument);     // padded dim below the head dim
  EXPECT_EQ(kind({2, 1, 64, 1024, 0, 0}, 1024), ErrorKind::Unsupported);       // padded dim above 512
  EXPECT_EQ(kind({4, 2, 64, 64, 0, 0}, 100), ErrorKind::InvalidArgument);      // rows shorter than the layout
}

}  // namespace
}  // namespace ds4::cuda::test
