// Stand-in for <cooperative_groups.h> (tools/cuda-emu): the thread-block cluster and the thread block. The blocks
// of a cluster run together in the emulator (emu.h run_grid), each with its own shared memory; a launch without the
// cluster attribute is a cluster of one block, as on sm_90.
#pragma once
namespace cooperative_groups {

class thread_block {
 public:
  void sync() const { __syncthreads(); }
  unsigned long long thread_rank() const { return ::emu::tlin; }
  unsigned long long num_threads() const { return blockDim.x * blockDim.y * blockDim.z; }
  uint3 group_index() const { return blockIdx; }
  uint3 thread_index() const { return threadIdx; }
  dim3 group_dim() const { return blockDim; }
};
inline thread_block this_thread_block() { return {}; }

class cluster_group {
 public:
  // barrier.cluster.arrive + wait: every thread of the cluster that has not exited.
  void sync() const { ::emu::current->cluster_bar.wait(); }
  unsigned num_blocks() const { return unsigned(::emu::current->nblocks); }
  unsigned block_rank() const { return unsigned(::emu::blk_rank); }
  dim3 block_index() const {
    const dim3 c = ::emu::current->cluster;
    return dim3(blockIdx.x % c.x, blockIdx.y % c.y, blockIdx.z % c.z);
  }
  dim3 dim_blocks() const { return ::emu::current->cluster; }
  unsigned num_threads() const { return num_blocks() * unsigned(::emu::current->nthreads); }
  unsigned thread_rank() const { return block_rank() * unsigned(::emu::current->nthreads) + unsigned(::emu::tlin); }
  // The other block's variable; reading the shared memory of a block that has exited is undefined on the GPU
  // (the kernel needs a cluster.sync() before its blocks return), and aborts here: a fiber reads what it maps
  // before the next switch, so a block with no live thread left at the mapping has exited before the read.
  template <class T>
  T* map_shared_rank(T* addr, unsigned rank) const {
    T* p = ::emu::map_shared_rank(addr, rank);
    const ::emu::Block& b = *::emu::current->blocks[rank];
    bool live = false;
    for (char a : b.alive) live = live || a;
    if (!live) {
      std::fprintf(stderr, "EMU: map_shared_rank in block (%u,%u,%u) to rank %u, a block that has exited\n", blockIdx.x,
                   blockIdx.y, blockIdx.z, rank);
      std::abort();
    }
    return p;
  }
};
inline cluster_group this_cluster() { return {}; }

}  // namespace cooperative_groups
