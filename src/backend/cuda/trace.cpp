// Host side of the decode-step timeline (trace.h); empty unless configured with -DDS4_CUDA_TRACE=ON.
#include "backend/cuda/trace.h"

#ifdef DS4_CUDA_TRACE
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "backend/cuda/check.h"

namespace ds4::cuda::trace {
namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::vector<void (*)(Buf*)>& units() {
  static std::vector<void (*)(Buf*)> v;
  return v;
}
std::vector<std::string>& names() {
  static std::vector<std::string> v;
  return v;
}
}  // namespace

void register_unit(void (*set)(Buf*)) {
  std::lock_guard<std::mutex> lock(mu());
  units().push_back(set);
}

void note_launch(const void* kernel) {
  const char* raw = nullptr;
  std::string name = "?";
  if (cudaFuncGetName(&raw, kernel) == cudaSuccess && raw) {
    int status = 0;
    char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
    name = status == 0 && d ? d : raw;
    std::free(d);
  }
  std::lock_guard<std::mutex> lock(mu());
  names().push_back(name);
}

void clear_launches() {
  std::lock_guard<std::mutex> lock(mu());
  names().clear();
}

std::vector<std::string> launches() {
  std::lock_guard<std::mutex> lock(mu());
  return names();
}

Recorder::Recorder(std::string path, size_t cap) : path_(std::move(path)), cap_(cap) {
  DS4_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&buf_), sizeof(Buf) + cap * sizeof(Rec)));
  const unsigned head[4] = {0x80000000u, unsigned(cap), 0u, 0u};  // closed until the first traced step
  DS4_CUDA_CHECK(cudaMemcpy(buf_, head, sizeof(head), cudaMemcpyHostToDevice));
  std::lock_guard<std::mutex> lock(mu());
  for (auto set : units()) set(buf_);
}

Recorder::~Recorder() {
  if (!names_.empty()) dump();
  {
    std::lock_guard<std::mutex> lock(mu());
    for (auto set : units()) set(nullptr);
  }
  cudaFree(buf_);
}

void Recorder::reset(cudaStream_t s) { DS4_CUDA_CHECK(cudaMemsetAsync(buf_, 0, sizeof(unsigned), s)); }

void Recorder::step_done(std::vector<std::string> names) {
  names_ = std::move(names);
  DS4_CUDA_CHECK(cudaMemcpy(&count_, buf_, sizeof(count_), cudaMemcpyDeviceToHost));
  // A count far past the capacity: blocks still take slots, none is written (2^31 launches before it wraps).
  const unsigned closed = 0x80000000u;
  DS4_CUDA_CHECK(cudaMemcpy(buf_, &closed, sizeof(closed), cudaMemcpyHostToDevice));
}

// Runs from the destructor: reports failures instead of throwing.
void Recorder::dump() const {
  const size_t m = std::min<size_t>(count_, cap_);
  std::vector<Rec> recs(m);
  if (m && cudaMemcpy(recs.data(), buf_->rec, m * sizeof(Rec), cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::fprintf(stderr, "DS4_CUDA_TRACE: reading the records failed\n");
    return;
  }
  FILE* f = std::fopen(path_.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "DS4_CUDA_TRACE: cannot write %s\n", path_.c_str());
    return;
  }
  std::fprintf(f, "# records %u (capacity %zu)\n", count_, cap_);
  for (const auto& k : names_) std::fprintf(f, "name\t%s\n", k.c_str());
  for (const auto& r : recs) {
    std::fprintf(f, "rec\t%llu\t%u\t%u\t%llu\t%llu\t%llu", r.grid, r.block, r.sm, r.entry, r.release, r.exit);
    for (int k = 0; k < kMarks; k++) std::fprintf(f, "\t%llu", r.mark[k]);
    std::fputc('\n', f);
  }
  std::fclose(f);
}

}  // namespace ds4::cuda::trace
#endif
