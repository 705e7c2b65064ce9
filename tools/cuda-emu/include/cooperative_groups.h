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
  template <class T>
  T* map_shared_rank(T* addr, unsigned rank) const {
    return ::emu::map_shared_rank(addr, rank);
  }
  // Whether this thread's block has the rank (in the cluster) of the block of shared memory address p.
  static constexpr bool is_valid() { return true; }
};
inline cluster_group this_cluster() { return {}; }

}  // namespace cooperative_groups
