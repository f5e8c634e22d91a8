// Small CUDA kernels of the cuda backend: what cuDNN and cuBLAS do not do. Every launch is on the
// default stream; every pointer is device memory from the fragscope allocator.
#pragma once

#include <cstdint>

namespace fragscope::trainer::cuda {

void Fill(float* x, std::int64_t count, float value);
void Add(const float* a, const float* b, float* out, std::int64_t count);
// acc += x
void Accumulate(float* acc, const float* x, std::int64_t count);
void Scale(float* x, std::int64_t count, float factor);
// y[r, :] = b for every row r of n rows of `out` columns
void BroadcastRows(const float* b, float* y, int n, int out);
// db[o] = sum over rows r of dy[r, o]
void SumRows(const float* dy, float* db, int n, int out);
// Mean softmax cross-entropy; result[0] = loss, result[1] = correct predictions.
void SoftmaxCrossEntropy(const float* logits, const std::int32_t* labels, float* dlogits,
                         float* result, int n, int k);
// v = momentum v + g + wd w; w -= lr v
void Sgd(float* w, const float* g, float* v, std::int64_t count, float lr, float momentum, float wd);

}  // namespace fragscope::trainer::cuda
