// Emulator state shared by the fake runtime and the launch machinery (tools/cuda-emu).
#pragma once
namespace emu {
inline int last_error = 0;  // cudaError_t of the last failed launch
void set_smem_limit(const void* k, int bytes);
}
