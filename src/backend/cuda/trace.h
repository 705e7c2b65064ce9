// A device-side timeline of decode steps, for builds configured with -DDS4_CUDA_TRACE=ON (measurement only; the
// GPU machine has no Nsight Systems). Every kernel's pdl_enter() (common.cuh) has thread 0 of each block record
// the grid's id (%gridid: launch order), the block, its multiprocessor, and %globaltimer before and after
// griddepcontrol.wait (when the block became resident and when the grid before it had completed), and when thread 0
// left the kernel (PdlScope, common.cuh). With
// DS4_CUDA_TRACE_OUT=FILE the CUDA model writes the records of its last greedy decode step to FILE together
// with the kernel names of the step's graph in launch order; tools/gpu/trace_summary.py turns them into a table.
#pragma once
#ifdef DS4_CUDA_TRACE
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ds4::cuda::trace {

struct Rec {
  unsigned long long grid, entry, release, exit;  // exit: when thread 0 left the kernel's scope (0: not recorded)
  unsigned block, sm;
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

class Recorder {
 public:
  explicit Recorder(size_t cap);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  void reset(cudaStream_t s);  // before a step: no records
  // After the step completed: the records and the step's kernel names (launch order) into path.
  void dump(const std::string& path, const std::vector<std::string>& names) const;

 private:
  Buf* buf_ = nullptr;
  size_t cap_;
};

}  // namespace ds4::cuda::trace
#endif
