// A device-side timeline of decode steps, for builds configured with -DDS4_CUDA_TRACE=ON (measurement only; the
// GPU machine has no Nsight Systems). Every kernel's pdl_enter() (common.cuh) has thread 0 of each block record
// the grid's id (%gridid: launch order), the block, its multiprocessor, and %globaltimer before and after
// griddepcontrol.wait (when the block became resident and when the grid before it had completed), and when thread 0
// left the kernel (PdlScope, common.cuh), and at up to kMarks points in between that a kernel stamps with
// pdl.mark(k) (where its time after the release goes: tools/gpu/trace_summary.py --marks). With
// DS4_CUDA_TRACE_OUT=FILE the CUDA model writes the records of its last greedy decode step to FILE together
// with the kernel names of the step's graph in launch order (when the model goes away); tools/gpu/trace_summary.py turns them into a table.
#pragma once
#ifdef DS4_CUDA_TRACE
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ds4::cuda::trace {

constexpr int kMarks = 4;  // points inside a kernel that thread 0 stamps (PdlScope::mark, common.cuh)
struct Rec {
  unsigned long long grid, entry, release, exit;  // exit: when thread 0 left the kernel's scope (0: not recorded)
  unsigned block, sm;
  unsigned long long mark[kMarks];  // 0: not stamped
};
struct Buf {
  unsigned n, cap, pad0, pad1;
  Rec rec[1];
};

// Each translation unit that includes common.cuh has its own copy of the device pointer and registers its setter.
void register_unit(void (*set)(Buf*));
// The kernel names of host launches since the last clear_launches() (detail::launch calls note_launch).
void note_launch(const void* kernel);
void clear_launches();
std::vector<std::string> launches();

// Keeps the records of the last traced step in device memory and writes them, with that step's kernel names,
// to `path` when it goes away (one file write per run, none per step).
class Recorder {
 public:
  Recorder(std::string path, size_t cap);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  void reset(cudaStream_t s);  // before a step: no records, recording open (closed from construction)
  // After the step completed: its kernel names in launch order; recording closes until the next reset, so the
  // kernels of later untraced work do not add to the step's records.
  void step_done(std::vector<std::string> names);

 private:
  void dump() const;
  std::string path_;
  Buf* buf_ = nullptr;
  size_t cap_;
  unsigned count_ = 0;  // the step's records
  std::vector<std::string> names_;
};

}  // namespace ds4::cuda::trace
#endif
