// Where a greedy decode step's wall time goes (DS4_CUDA_STEP_TIMES=1, measurement only): CUDA events before the
// step's token copy and after its pick copy give the GPU's span of the step, and the previous step's end to this
// step's start the time the GPU waited for the host (the sync, the host's bookkeeping and the next launches).
// Medians are printed to stderr when the model goes away.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/check.h"

namespace ds4::cuda {

class StepClock {
 public:
  StepClock() : on_(std::getenv("DS4_CUDA_STEP_TIMES") && std::string(std::getenv("DS4_CUDA_STEP_TIMES")) == "1") {
    if (!on_) return;
    for (auto& e : ev_) DS4_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~StepClock() {
    if (!on_) return;
    if (!span_.empty())
      std::fprintf(stderr, "decode steps (DS4_CUDA_STEP_TIMES): %zu; GPU span per step %.1f us (median), GPU idle "
                           "between steps %.1f us (median)\n", span_.size(), median(span_), median(gap_));
    for (auto& e : ev_) cudaEventDestroy(e);
  }
  bool on() const { return on_; }
  // Before the step's first operation on the stream.
  void begin(cudaStream_t s) {
    if (on_) DS4_CUDA_CHECK(cudaEventRecord(ev_[2 * cur_], s));
  }
  // After its last operation, before the host waits for it.
  void end(cudaStream_t s) {
    if (on_) DS4_CUDA_CHECK(cudaEventRecord(ev_[2 * cur_ + 1], s));
  }
  // After the host's wait: the step's events are complete.
  void collect() {
    if (!on_) return;
    float ms = 0;
    DS4_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_[2 * cur_], ev_[2 * cur_ + 1]));
    span_.push_back(1e3 * ms);
    if (have_prev_) {
      DS4_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_[2 * (1 - cur_) + 1], ev_[2 * cur_]));
      gap_.push_back(1e3 * ms);
    }
    have_prev_ = true;
    cur_ = 1 - cur_;
  }

 private:
  static double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }
  bool on_;
  cudaEvent_t ev_[4]{};
  int cur_ = 0;
  bool have_prev_ = false;
  std::vector<double> span_, gap_;
};

}  // namespace ds4::cuda
