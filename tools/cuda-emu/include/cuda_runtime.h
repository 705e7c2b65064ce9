// Stands in for the CUDA header of this name when the emulator (tools/cuda-emu) compiles kernels as host code.
#pragma once
#include "emu_runtime.h"
#include <cuda_bf16.h>
