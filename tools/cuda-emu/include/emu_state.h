// Emulator state shared by the fake runtime and the launch machinery (tools/cuda-emu).
#pragma once
#include <functional>
#include <utility>
#include <vector>
namespace emu {
inline int last_error = 0;  // cudaError_t of the last failed launch
void set_smem_limit(const void* k, int bytes);
void allow_large_clusters(const void* k);
// Stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture): the stream's work is recorded here instead of
// run, and replayed in order by cudaGraphLaunch. Null when no capture is in progress.
inline std::vector<std::function<void()>>* capture = nullptr;
// Stream work (a kernel, an async copy or memset): runs now (every stream is synchronous), or is recorded.
inline void enqueue(std::function<void()> f) {
  if (capture) capture->push_back(std::move(f));
  else f();
}
}  // namespace emu
