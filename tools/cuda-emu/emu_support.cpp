// Out-of-line state of the CUDA emulator (tools/cuda-emu).
#include "emu.h"
#include "emu_runtime.h"
namespace emu {
void set_smem_limit(const void* k, int bytes) {
  std::lock_guard<std::mutex> lk(attr_m);
  for (auto& p : attrs())
    if (p.first == k) { p.second = bytes; return; }
  attrs().push_back({k, bytes});
}
}
