// GPU time per model block (DS4_CUDA_PROFILE=1): CUDA events around each block of eager forward steps, summed
// per block name and printed to stderr when the model goes away. While profiling, decode steps run eagerly
// (events inside a replayed graph cannot be told apart), so the totals include launch gaps a graph would hide.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "backend/cuda/check.h"

namespace ds4::cuda {

class BlockProfiler {
 public:
  explicit BlockProfiler(bool on) : on_(on) {}
  ~BlockProfiler() {
    if (!on_ || totals_.empty()) return;
    std::fprintf(stderr, "\nGPU time per block (DS4_CUDA_PROFILE, eager steps):\n| block | calls | total ms | us per call |\n|---|---:|---:|---:|\n");
    for (auto& [name, t] : totals_)
      std::fprintf(stderr, "| %s | %lld | %.3f | %.1f |\n", name.c_str(), (long long)t.calls, t.ms, 1e3 * t.ms / double(t.calls));
    for (auto& p : pending_) cudaEventDestroy(p.a), cudaEventDestroy(p.b);
  }
  bool on() const { return on_; }

  class Span {
   public:
    Span(BlockProfiler* p, cudaStream_t s, const char* name) : p_(p), s_(s) {
      if (!p_) return;
      Pending e{name, nullptr, nullptr};
      DS4_CUDA_CHECK(cudaEventCreate(&e.a));
      DS4_CUDA_CHECK(cudaEventCreate(&e.b));
      DS4_CUDA_CHECK(cudaEventRecord(e.a, s_));
      idx_ = p_->pending_.size();
      p_->pending_.push_back(e);
    }
    ~Span() {
      if (p_) cudaEventRecord(p_->pending_[idx_].b, s_);
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

   private:
    BlockProfiler* p_;
    cudaStream_t s_;
    size_t idx_ = 0;
  };

  // A span that records only when profiling is on and the stream is not being captured.
  Span span(cudaStream_t s, const char* name, bool capturing) { return Span(on_ && !capturing ? this : nullptr, s, name); }

  // After the stream has synchronized: adds the spans' times to the totals.
  void collect() {
    for (auto& p : pending_) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, p.a, p.b) == cudaSuccess) {
        auto& t = totals_[p.name];
        t.ms += ms;
        t.calls++;
      }
      cudaEventDestroy(p.a);
      cudaEventDestroy(p.b);
    }
    pending_.clear();
  }

 private:
  struct Pending {
    std::string name;
    cudaEvent_t a, b;
  };
  struct Total {
    double ms = 0;
    long long calls = 0;
  };
  bool on_;
  std::vector<Pending> pending_;
  std::map<std::string, Total> totals_;
};

}  // namespace ds4::cuda
