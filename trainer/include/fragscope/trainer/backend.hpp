// The arithmetic of training, behind one interface. Backends compute; they never allocate: every
// buffer, workspaces included, is allocated by the layers through the fragscope allocator before an
// op is called. That is why the `sim` backend (no arithmetic at all) reproduces the allocation
// schedule of a real backend exactly.
//
//   cpu   plain C++ reference of every op (im2col + blocked GEMM for convolutions)
//   sim   nothing computed; the schedule of `cpu` (its workspace sizes included)
//   cuda  cuDNN for conv / BN / pooling / activation, cuBLAS for linear, small kernels for the rest
//
// Layout is NCHW float32; labels are int32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/trainer/tensor.hpp"

namespace fragscope::trainer {

struct ConvGeom {
  int n = 1, cin = 1, h = 1, w = 1;  // input
  int cout = 1, k = 1, stride = 1, pad = 0;
  int ho() const { return (h + 2 * pad - k) / stride + 1; }
  int wo() const { return (w + 2 * pad - k) / stride + 1; }
};

struct PoolGeom {
  int n = 1, c = 1, h = 1, w = 1;
  int k = 2, stride = 2, pad = 0;
  int ho() const { return (h + 2 * pad - k) / stride + 1; }
  int wo() const { return (w + 2 * pad - k) / stride + 1; }
};

enum class ConvPass : std::uint8_t { kForward, kBackwardData, kBackwardFilter };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // False for `sim`: no data exists, so losses are unknown and inputs need not be generated.
  virtual bool computes() const = 0;

  virtual void Upload(const Tensor& dst, const void* src, std::uint64_t bytes) = 0;
  virtual void Download(const Tensor& src, void* dst, std::uint64_t bytes) = 0;
  virtual void Fill(const Tensor& t, float value) = 0;

  // Scratch bytes the op needs in `pass`; the layer allocates them (tag "<layer>/workspace").
  virtual std::uint64_t ConvWorkspaceBytes(const ConvGeom& g, ConvPass pass) = 0;
  virtual void ConvForward(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& y,
                           const Tensor& ws) = 0;
  virtual void ConvBackwardData(const ConvGeom& g, const Tensor& dy, const Tensor& w,
                                const Tensor& dx, const Tensor& ws) = 0;
  // dw is overwritten.
  virtual void ConvBackwardFilter(const ConvGeom& g, const Tensor& x, const Tensor& dy,
                                  const Tensor& dw, const Tensor& ws) = 0;

  // Training mode: batch statistics normalize; running statistics are updated with `momentum`
  // (running = (1 - momentum) running + momentum batch; the variance unbiased).
  virtual void BatchNormForward(const Shape& s, const Tensor& x, const Tensor& gamma,
                                const Tensor& beta, const Tensor& running_mean,
                                const Tensor& running_var, const Tensor& y, const Tensor& save_mean,
                                const Tensor& save_invstd, double momentum, double eps) = 0;
  virtual void BatchNormBackward(const Shape& s, const Tensor& x, const Tensor& dy,
                                 const Tensor& gamma, const Tensor& save_mean,
                                 const Tensor& save_invstd, const Tensor& dx, const Tensor& dgamma,
                                 const Tensor& dbeta, double eps) = 0;

  virtual void ReluForward(const Tensor& x, const Tensor& y) = 0;
  virtual void ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) = 0;

  virtual void MaxPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) = 0;
  virtual void MaxPoolBackward(const PoolGeom& g, const Tensor& x, const Tensor& y,
                               const Tensor& dy, const Tensor& dx) = 0;
  // Padding is excluded from the average.
  virtual void AvgPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) = 0;
  virtual void AvgPoolBackward(const PoolGeom& g, const Tensor& dy, const Tensor& dx) = 0;

  virtual void Add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // y[n, out] = x[n, in] w[out, in]^T + b[out]
  virtual void LinearForward(int n, int in, int out, const Tensor& x, const Tensor& w,
                             const Tensor& b, const Tensor& y) = 0;
  // dx may be undefined (first layer); dw, db are overwritten.
  virtual void LinearBackward(int n, int in, int out, const Tensor& x, const Tensor& w,
                              const Tensor& dy, const Tensor& dx, const Tensor& dw,
                              const Tensor& db) = 0;

  // Mean softmax cross-entropy over n rows of k logits. result[0] = loss, result[1] = correct
  // predictions (argmax == label). dlogits = (softmax - onehot) / n.
  virtual void SoftmaxCrossEntropy(int n, int k, const Tensor& logits, const Tensor& labels,
                                   const Tensor& dlogits, const Tensor& result) = 0;

  // v = momentum v + g + weight_decay w;  w -= lr v
  virtual void SgdStep(const Tensor& w, const Tensor& g, const Tensor& v, double lr,
                       double momentum, double weight_decay) = 0;

  // Data parallel: every tensor (one per device, same shape) becomes the mean of them all.
  virtual void AverageAcrossDevices(const std::vector<Tensor>& replicas) = 0;
};

enum class BackendKind : std::uint8_t { kCpu, kCuda, kSim };
std::string_view ToString(BackendKind kind);
bool ParseBackendKind(std::string_view text, BackendKind* out);

// Throws std::runtime_error when the backend is not available (cuda in a build without CUDA, or no
// GPU), with the reason.
std::unique_ptr<Backend> MakeBackend(BackendKind kind);

// The cpu backend's im2col scratch for one image: what `cpu` and `sim` ask for.
std::uint64_t Im2colWorkspaceBytes(const ConvGeom& g);

}  // namespace fragscope::trainer
