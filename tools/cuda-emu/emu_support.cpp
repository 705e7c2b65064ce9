// Out-of-line state of the CUDA emulator (tools/cuda-emu): per-kernel shared-memory limits and the fiber switch.
#include "emu.h"
#include "emu_runtime.h"
namespace emu {
void set_smem_limit(const void* k, int bytes) {
  std::lock_guard<std::mutex> lk(attr_m);
  for (auto& p : attrs())
    if (p.first == k) { p.second = bytes; return; }
  attrs().push_back({k, bytes});
}
void allow_large_clusters(const void* k) {
  std::lock_guard<std::mutex> lk(attr_m);
  for (auto* p : large_cluster_kernels())
    if (p == k) return;
  large_cluster_kernels().push_back(k);
}
}  // namespace emu

// emu_ctx_switch(save_sp, to_sp): saves the callee-saved registers and the x87/SSE control words on the current
// stack, stores the stack pointer in *save_sp, and resumes the context whose stack pointer is to_sp (saved by an
// earlier switch, or laid out by emu::fiber_init). x86-64 System V.
#if !defined(__x86_64__)
#error "tools/cuda-emu: the fiber switch is written for x86-64"
#endif
asm(R"(
  .pushsection .text
  .p2align 4
  .globl emu_ctx_switch
  .type emu_ctx_switch, @function
emu_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  fnstcw (%rsp)
  stmxcsr 8(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_ctx_switch, .-emu_ctx_switch
  .popsection
)");
