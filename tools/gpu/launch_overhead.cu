// What a kernel boundary costs on this GPU, apart from any kernel's own work: chains of N dependent launches of
// empty kernels, timed with events, with and without programmatic dependent launch (griddepcontrol), eager and
// from a CUDA graph, for a one-block grid and for grids that fill the GPU (8 or 16 blocks of 256 per SM).
// Build and run on the GPU machine: nvcc -O2 -arch=sm_90a tools/gpu/launch_overhead.cu -o /tmp/lo && /tmp/lo
#include <cstdio>
#include <cuda_runtime.h>

__global__ void step(int* sink) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0 && blockIdx.x == 0) sink[0] += 1;  // a write the next kernel may depend on
}

static void launch(cudaStream_t s, int blocks, bool pdl, int* sink) {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
  cudaLaunchConfig_t c{};
  c.gridDim = dim3(blocks);
  c.blockDim = dim3(256);
  c.stream = s;
  c.attrs = &a;
  c.numAttrs = 1;
  cudaLaunchKernelEx(&c, step, sink);
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int* sink;
  cudaMalloc(&sink, 4);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int N = 1000;
  printf("| grid | PDL | graph | us per kernel |\n|---:|---|---|---:|\n");
  for (int blocks : {1, 8 * sms, 16 * sms})
    for (int pdl = 0; pdl < 2; pdl++)
      for (int graph = 0; graph < 2; graph++) {
        cudaGraphExec_t exec = nullptr;
        if (graph) {
          cudaGraph_t g;
          cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
          for (int i = 0; i < N; i++) launch(s, blocks, pdl, sink);
          cudaStreamEndCapture(s, &g);
          cudaGraphInstantiate(&exec, g, 0);
          cudaGraphDestroy(g);
        }
        float best = 1e30f;
        for (int rep = 0; rep < 5; rep++) {
          cudaEventRecord(e0, s);
          if (graph) cudaGraphLaunch(exec, s);
          else
            for (int i = 0; i < N; i++) launch(s, blocks, pdl, sink);
          cudaEventRecord(e1, s);
          cudaEventSynchronize(e1);
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          if (ms < best) best = ms;
        }
        printf("| %d | %s | %s | %.2f |\n", blocks, pdl ? "yes" : "no", graph ? "yes" : "no", best * 1000.0f / N);
        if (exec) cudaGraphExecDestroy(exec);
      }
  printf("status: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
