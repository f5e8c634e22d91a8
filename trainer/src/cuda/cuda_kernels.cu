#include "cuda_kernels.hpp"

#include <cuda_runtime.h>

namespace fragscope::trainer::cuda {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

#define GRID_STRIDE(i, count) \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

__global__ void FillKernel(float* x, std::int64_t count, float value) {
  GRID_STRIDE(i, count) x[i] = value;
}

__global__ void AddKernel(const float* a, const float* b, float* out, std::int64_t count) {
  GRID_STRIDE(i, count) out[i] = a[i] + b[i];
}

__global__ void AccumulateKernel(float* acc, const float* x, std::int64_t count) {
  GRID_STRIDE(i, count) acc[i] += x[i];
}

__global__ void ScaleKernel(float* x, std::int64_t count, float factor) {
  GRID_STRIDE(i, count) x[i] *= factor;
}

__global__ void BroadcastRowsKernel(const float* b, float* y, int n, int out) {
  GRID_STRIDE(i, static_cast<std::int64_t>(n) * out) y[i] = b[i % out];
}

__global__ void SumRowsKernel(const float* dy, float* db, int n, int out) {
  GRID_STRIDE(o, out) {
    float sum = 0.0f;
    for (int r = 0; r < n; ++r) sum += dy[static_cast<std::int64_t>(r) * out + o];
    db[o] = sum;
  }
}

// One thread per row; the loss and correct count are reduced with atomics (n is a batch).
__global__ void SoftmaxCrossEntropyKernel(const float* logits, const std::int32_t* labels,
                                          float* dlogits, float* result, int n, int k) {
  GRID_STRIDE(r, n) {
    const float* z = logits + r * k;
    float* d = dlogits + r * k;
    const int label = labels[r];
    float zmax = z[0];
    int argmax = 0;
    for (int j = 1; j < k; ++j) {
      if (z[j] > zmax) {
        zmax = z[j];
        argmax = j;
      }
    }
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += exp(static_cast<double>(z[j] - zmax));
    for (int j = 0; j < k; ++j) {
      const double p = exp(static_cast<double>(z[j] - zmax)) / sum;
      d[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) / n);
    }
    atomicAdd(&result[0], static_cast<float>((log(sum) - (z[label] - zmax)) / n));
    if (argmax == label) atomicAdd(&result[1], 1.0f);
  }
}

__global__ void SgdKernel(float* w, const float* g, float* v, std::int64_t count, float lr,
                          float momentum, float wd) {
  GRID_STRIDE(i, count) {
    v[i] = momentum * v[i] + g[i] + wd * w[i];
    w[i] -= lr * v[i];
  }
}

}  // namespace

void Fill(float* x, std::int64_t count, float value) { FillKernel<<<Blocks(count), kThreads>>>(x, count, value); }
void Add(const float* a, const float* b, float* out, std::int64_t count) {
  AddKernel<<<Blocks(count), kThreads>>>(a, b, out, count);
}
void Accumulate(float* acc, const float* x, std::int64_t count) {
  AccumulateKernel<<<Blocks(count), kThreads>>>(acc, x, count);
}
void Scale(float* x, std::int64_t count, float factor) { ScaleKernel<<<Blocks(count), kThreads>>>(x, count, factor); }
void BroadcastRows(const float* b, float* y, int n, int out) {
  BroadcastRowsKernel<<<Blocks(static_cast<std::int64_t>(n) * out), kThreads>>>(b, y, n, out);
}
void SumRows(const float* dy, float* db, int n, int out) { SumRowsKernel<<<Blocks(out), kThreads>>>(dy, db, n, out); }
void SoftmaxCrossEntropy(const float* logits, const std::int32_t* labels, float* dlogits, float* result,
                         int n, int k) {
  cudaMemsetAsync(result, 0, 2 * sizeof(float));
  SoftmaxCrossEntropyKernel<<<Blocks(n), kThreads>>>(logits, labels, dlogits, result, n, k);
}
void Sgd(float* w, const float* g, float* v, std::int64_t count, float lr, float momentum, float wd) {
  SgdKernel<<<Blocks(count), kThreads>>>(w, g, v, count, lr, momentum, wd);
}

}  // namespace fragscope::trainer::cuda
