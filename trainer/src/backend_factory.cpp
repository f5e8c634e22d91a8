#include <stdexcept>

#include "cpu_backend.hpp"
#include "sim_backend.hpp"

namespace fragscope::trainer {

#if FRAGSCOPE_HAVE_CUDA
std::unique_ptr<Backend> MakeCudaBackend();  // cuda/cuda_backend.cu
#endif

std::string_view ToString(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
    case BackendKind::kSim: return "sim";
  }
  return "?";
}

bool ParseBackendKind(std::string_view text, BackendKind* out) {
  for (BackendKind kind : {BackendKind::kCpu, BackendKind::kCuda, BackendKind::kSim}) {
    if (text == ToString(kind)) {
      *out = kind;
      return true;
    }
  }
  return false;
}

std::unique_ptr<Backend> MakeBackend(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return std::make_unique<CpuBackend>();
    case BackendKind::kSim: return std::make_unique<SimBackend>();
    case BackendKind::kCuda:
#if FRAGSCOPE_HAVE_CUDA
      return MakeCudaBackend();
#else
      throw std::runtime_error("the cuda backend is not in this build (built without the CUDA toolkit)");
#endif
  }
  throw std::runtime_error("unknown backend");
}

}  // namespace fragscope::trainer
