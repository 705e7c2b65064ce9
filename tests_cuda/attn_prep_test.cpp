// attn_prep against the CPU steps it replaces (models/qwen_hybrid/sparse_attention.cpp): split the projection
// rows, cpu::rms_norm_offset of the query, key and indexer query heads, cpu RoPE (M-RoPE positions), bfloat16
// rounding of the cached keys and values at rows pos + t, and the raw indexer key. Every element written is
// checked, including the zero padding of padded head dims; copies and the value cache must be exact.
#include "cuda_test_util.h"

#include <array>
#include <cstring>

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

// attn_prep_qsa against the ops it fuses (attn_prep, qsa_pool_chunk, and qsa_select's list below the budget) for
// one token at a device position, step by step from the same state: every output bit for bit, through block
// completions, with bounds below the budget (the list written in the kernel) and past it (qsa_select follows, as
// the model runs it). Whether the separate ops select like the CPU is qsa_test's question, and the prep's the
// test above.
struct FusedCase {
  int64_t IH, ID, R, topk, p0, steps, bound;
};

void check_fused(const FusedCase& k, uint32_t seed) {
  const int64_t NH = 4, KVH = 2, HD = 64, HDp = 64, IH = k.IH, ID = k.ID, R = k.R;
  const int64_t QG = NH * 2 * HD, ld = QG + 2 * KVH * HD + (IH + 1) * ID, cap = k.bound + 1;
  const int64_t stride = qsa_list_stride(k.topk, R), blocks = cap / R + 1;
  const std::string what = "IH=" + std::to_string(IH) + " ID=" + std::to_string(ID) + " R=" + std::to_string(R) +
                           " bound=" + std::to_string(k.bound);
  DeviceRope rope(cpu::RopeTable(32, 1e6, {6, 5, 5}));
  const Weight qn(size_t(HD), 0.5f, seed + 1), kn(size_t(HD), 0.5f, seed + 2), in(size_t(ID), 0.5f, seed + 3),
      ikn(size_t(ID), 0.5f, seed + 4);
  const AttnPrepShape shape{NH, KVH, HD, HDp, IH, ID};
  const AttnPrepNorms norms{qn.d(), kn.d(), in.d(), 1e-6f};
  // Two states with the same contents: raw indexer keys (random) and the complete blocks before p0 pooled.
  struct State {
    DeviceBuffer<bf16> keys, values;
    DeviceBuffer<float> ik, bk;
    DeviceBuffer<int64_t> pos;
    DeviceBuffer<float> q, gate, iq;
    DeviceBuffer<int32_t> list;  // [stride] positions, then the count
  };
  const auto raw = rand_vec(size_t(cap * ID), -2.0f, 2.0f, seed + 5);
  auto make = [&] {
    State st{DeviceBuffer<bf16>(size_t(cap * KVH * HDp)), DeviceBuffer<bf16>(size_t(cap * KVH * HDp)), upload(raw),
             DeviceBuffer<float>(size_t(blocks * ID)), DeviceBuffer<int64_t>(1), DeviceBuffer<float>(size_t(NH * HDp)),
             DeviceBuffer<float>(size_t(NH * HD)), DeviceBuffer<float>(size_t(IH * ID)),
             DeviceBuffer<int32_t>(size_t(stride + 1))};
    st.keys.fill_bytes(0), st.values.fill_bytes(0), st.bk.fill_bytes(0);
    qsa_pool_blocks(ctx(), st.ik.get(), 0, k.p0 / R, R, ID, ikn.d(), rope.params(), 1e-6f, st.bk.get());
    return st;
  };
  State a = make(), b = make();
  auto out = [](State& st) {
    st.q.fill_bytes(0xFF), st.gate.fill_bytes(0xFF), st.iq.fill_bytes(0xFF), st.list.fill_bytes(0xFF);
    return AttnPrepOut{st.q.get(), st.gate.get(), st.keys.get(), st.values.get(), st.iq.get(), st.ik.get()};
  };
  const bool listed = (k.bound + 1) / R <= k.topk;
  for (int64_t i = 0; i < k.steps; i++) {
    const int64_t p = k.p0 + i;
    const auto pr = upload(rand_vec(size_t(ld), -3.0f, 3.0f, seed + 100 + uint32_t(i)));
    const auto pos3 = upload(std::vector<int32_t>{int32_t(p), int32_t(p), int32_t(p)});
    const Positions ps{pos3.get(), 0};
    a.pos.upload(std::vector<int64_t>{p}), b.pos.upload(std::vector<int64_t>{p});
    const SeqPos spa{a.pos.get(), k.bound}, spb{b.pos.get(), k.bound};
    attn_prep(ctx(), pr.get(), ld, 1, shape, norms, rope.params(), ps, spa, out(a));
    qsa_pool_chunk(ctx(), a.ik.get(), spa, 1, R, ID, ikn.d(), rope.params(), 1e-6f, a.bk.get());
    qsa_select(ctx(), a.iq.get(), a.bk.get(), 1, spa, IH, ID, R, k.topk, a.list.get(), a.list.get() + stride, stride);
    const QsaDecode qd{b.bk.get(), ikn.d(), R, k.topk, stride, b.list.get(), b.list.get() + stride};
    const QsaFused f = attn_prep_qsa(ctx(), pr.get(), ld, shape, norms, rope.params(), ps, spb, out(b), qd);
    ASSERT_EQ(f, listed ? QsaFused::Listed : QsaFused::Pooled) << what;
    if (f == QsaFused::Pooled)
      qsa_select(ctx(), b.iq.get(), b.bk.get(), 1, spb, IH, ID, R, k.topk, qd.sel, qd.count, stride);
    ctx().synchronize();
    auto bits = [&](const void* x, const void* y, size_t bytes, const std::string& name) {
      std::vector<unsigned char> u(bytes), v(bytes);
      DS4_CUDA_CHECK(cudaMemcpy(u.data(), x, bytes, cudaMemcpyDeviceToHost));
      DS4_CUDA_CHECK(cudaMemcpy(v.data(), y, bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(0, std::memcmp(u.data(), v.data(), bytes)) << what << " pos " << p << ": " << name;
    };
    const auto la = download(a.list);
    ASSERT_EQ(la[size_t(stride)], (p + 1) / R <= k.topk ? int32_t(p + 1) : int32_t(k.topk * R + (p + 1) % R))
        << what << " pos " << p;
    ASSERT_EQ(la, download(b.list)) << what << " pos " << p << ": the position list and count";
    bits(a.q.get(), b.q.get(), size_t(NH * HDp) * 4, "q");
    bits(a.gate.get(), b.gate.get(), size_t(NH * HD) * 4, "gate");
    bits(a.iq.get(), b.iq.get(), size_t(IH * ID) * 4, "indexer q");
    bits(a.keys.get(), b.keys.get(), size_t(cap * KVH * HDp) * 2, "key cache");
    bits(a.values.get(), b.values.get(), size_t(cap * KVH * HDp) * 2, "value cache");
    bits(a.ik.get(), b.ik.get(), size_t(cap * ID) * 4, "indexer keys");
    bits(a.bk.get(), b.bk.get(), size_t(blocks * ID) * 4, "pooled keys");
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(CudaAttnPrep, DecodeQsaEqualsTheSeparateOps) {
  check_fused({16, 128, 64, 32, 1020, 8, 2047}, 11);  // Flash-Next, listed: position 1023 completes block 15
  check_fused({16, 128, 64, 32, 2107, 8, 4095}, 12);  // the budget's crossing (position 2111 completes block 32)
  check_fused({16, 32, 8, 4, 0, 42, 63}, 13);         // from 0 through the crossing
  check_fused({16, 32, 8, 4, 0, 20, 31}, 16);         // listed from 0 to the bound
  check_fused({12, 36, 8, 6, 530, 10, 1023}, 15);     // ID not a power of two
  check_fused({3, 256, 16, 4, 300, 20, 4095}, 17);    // ID above pool_block's 128 threads
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
