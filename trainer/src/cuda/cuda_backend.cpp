// The cuda backend: cuDNN 9 (legacy API) for convolution, batch normalization, pooling and ReLU;
// cuBLAS for linear layers; small kernels (cuda_kernels.cu) for the loss, residual add, bias and
// optimizer. Convolution algorithms come from cuDNN's heuristics (the _v7 queries); the workspace
// each needs is what ConvWorkspaceBytes reports, and the layer allocates it from the allocator.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "cuda_kernels.hpp"
#include "fragscope/allocator/backing.hpp"
#include "fragscope/trainer/backend.hpp"

namespace fragscope::trainer {
namespace {

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}
void Check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{}: {}", what, cudnnGetErrorString(status)));
}
void Check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(status)));
}

struct TensorDesc {
  cudnnTensorDescriptor_t desc = nullptr;
  TensorDesc(int n, int c, int h, int w) {
    Check(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
    Check(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w), "cudnnSetTensor4dDescriptor");
  }
  explicit TensorDesc(const Shape& s) : TensorDesc(s.n, s.c, s.h, s.w) {}
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

// Descriptors of one convolution: input, filter, output, the convolution itself.
struct ConvDescs {
  TensorDesc x, y;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit ConvDescs(const ConvGeom& g) : x(g.n, g.cin, g.h, g.w), y(g.n, g.cout, g.ho(), g.wo()) {
    Check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    Check(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.cout, g.cin, g.k, g.k),
          "cudnnSetFilter4dDescriptor");
    Check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    Check(cudnnSetConvolution2dDescriptor(conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    // FP32 numerics, as the cpu reference (no TF32 tensor-core rounding).
    Check(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  }
  ~ConvDescs() {
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
  ConvDescs(const ConvDescs&) = delete;
  ConvDescs& operator=(const ConvDescs&) = delete;
};

struct PoolDesc {
  cudnnPoolingDescriptor_t desc = nullptr;
  PoolDesc(const PoolGeom& g, cudnnPoolingMode_t mode) {
    Check(cudnnCreatePoolingDescriptor(&desc), "cudnnCreatePoolingDescriptor");
    Check(cudnnSetPooling2dDescriptor(desc, mode, CUDNN_NOT_PROPAGATE_NAN, g.k, g.k, g.pad, g.pad,
                                      g.stride, g.stride),
          "cudnnSetPooling2dDescriptor");
  }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(desc); }
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
};

using ConvKey = std::tuple<int, int, int, int, int, int, int, int, int>;
ConvKey Key(const ConvGeom& g, ConvPass pass) {
  return {g.n, g.cin, g.h, g.w, g.cout, g.k, g.stride, g.pad, static_cast<int>(pass)};
}

constexpr float kOne = 1.0f, kZero = 0.0f;

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    Check(cudnnCreate(&cudnn_), "cudnnCreate");
    Check(cublasCreate(&cublas_), "cublasCreate");
    Check(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    Check(cudnnCreateActivationDescriptor(&relu_), "cudnnCreateActivationDescriptor");
    Check(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
  }
  ~CudaBackend() override {
    cudnnDestroyActivationDescriptor(relu_);
    cublasDestroy(cublas_);
    cudnnDestroy(cudnn_);
  }
  std::string_view name() const override { return "cuda"; }
  bool computes() const override { return true; }

  void Upload(const Tensor& dst, const void* src, std::uint64_t bytes) override {
    Check(cudaMemcpy(dst.data(), src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void Download(const Tensor& src, void* dst, std::uint64_t bytes) override {
    Check(cudaMemcpy(dst, src.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  void Fill(const Tensor& t, float value) override { cuda::Fill(t.f(), t.count(), value); }

  std::uint64_t ConvWorkspaceBytes(const ConvGeom& g, ConvPass pass) override { return Algo(g, pass).second; }

  void ConvForward(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& y, const Tensor& ws) override {
    ConvDescs d(g);
    const auto [algo, bytes] = Algo(g, ConvPass::kForward);
    Check(cudnnConvolutionForward(cudnn_, &kOne, d.x.desc, x.data(), d.w, w.data(), d.conv,
                                  static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws.data(), bytes, &kZero,
                                  d.y.desc, y.data()),
          "cudnnConvolutionForward");
  }
  void ConvBackwardData(const ConvGeom& g, const Tensor& dy, const Tensor& w, const Tensor& dx, const Tensor& ws) override {
    ConvDescs d(g);
    const auto [algo, bytes] = Algo(g, ConvPass::kBackwardData);
    Check(cudnnConvolutionBackwardData(cudnn_, &kOne, d.w, w.data(), d.y.desc, dy.data(), d.conv,
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws.data(), bytes,
                                       &kZero, d.x.desc, dx.data()),
          "cudnnConvolutionBackwardData");
  }
  void ConvBackwardFilter(const ConvGeom& g, const Tensor& x, const Tensor& dy, const Tensor& dw, const Tensor& ws) override {
    ConvDescs d(g);
    const auto [algo, bytes] = Algo(g, ConvPass::kBackwardFilter);
    Check(cudnnConvolutionBackwardFilter(cudnn_, &kOne, d.x.desc, x.data(), d.y.desc, dy.data(), d.conv,
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws.data(), bytes,
                                         &kZero, d.w, dw.data()),
          "cudnnConvolutionBackwardFilter");
  }

  void BatchNormForward(const Shape& s, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        const Tensor& running_mean, const Tensor& running_var, const Tensor& y,
                        const Tensor& save_mean, const Tensor& save_invstd, double momentum, double eps) override {
    TensorDesc xd(s), bn(1, s.c, 1, 1);
    // cuDNN's running variance is the unbiased one, as the cpu backend's.
    Check(cudnnBatchNormalizationForwardTraining(cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd.desc, x.data(),
                                                 xd.desc, y.data(), bn.desc, gamma.data(), beta.data(), momentum,
                                                 running_mean.data(), running_var.data(), eps, save_mean.data(),
                                                 save_invstd.data()),
          "cudnnBatchNormalizationForwardTraining");
  }
  void BatchNormBackward(const Shape& s, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                         const Tensor& save_mean, const Tensor& save_invstd, const Tensor& dx,
                         const Tensor& dgamma, const Tensor& dbeta, double eps) override {
    TensorDesc xd(s), bn(1, s.c, 1, 1);
    Check(cudnnBatchNormalizationBackward(cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, xd.desc,
                                          x.data(), xd.desc, dy.data(), xd.desc, dx.data(), bn.desc, gamma.data(),
                                          dgamma.data(), dbeta.data(), eps, save_mean.data(), save_invstd.data()),
          "cudnnBatchNormalizationBackward");
  }

  void ReluForward(const Tensor& x, const Tensor& y) override {
    TensorDesc d(x.shape());
    Check(cudnnActivationForward(cudnn_, relu_, &kOne, d.desc, x.data(), &kZero, d.desc, y.data()),
          "cudnnActivationForward");
  }
  void ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    TensorDesc d(y.shape());
    // relu'(x) is (y > 0): the output stands for the input, which the layer does not keep.
    Check(cudnnActivationBackward(cudnn_, relu_, &kOne, d.desc, y.data(), d.desc, dy.data(), d.desc, y.data(),
                                  &kZero, d.desc, dx.data()),
          "cudnnActivationBackward");
  }

  void MaxPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) override {
    Pool(g, CUDNN_POOLING_MAX, x, y);
  }
  void MaxPoolBackward(const PoolGeom& g, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    PoolBack(g, CUDNN_POOLING_MAX, x.data(), y.data(), dy, dx);
  }
  void AvgPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) override {
    Pool(g, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, x, y);
  }
  void AvgPoolBackward(const PoolGeom& g, const Tensor& dy, const Tensor& dx) override {
    // Average pooling's gradient does not read x or y; the layer keeps neither, so dy and dx
    // stand in for them (same shapes).
    PoolBack(g, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, dx.data(), dy.data(), dy, dx);
  }

  void Add(const Tensor& a, const Tensor& b, const Tensor& out) override { cuda::Add(a.f(), b.f(), out.f(), out.count()); }

  // Row-major y[n, out] = x[n, in] w[out, in]^T + b is column-major y^T = w^T(as stored) ... :
  // cuBLAS sees row-major matrices as their transposes.
  void LinearForward(int n, int in, int out, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) override {
    cuda::BroadcastRows(b.f(), y.f(), n, out);
    Check(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &kOne, w.f(), in, x.f(), in, &kOne, y.f(), out),
          "cublasSgemm (linear forward)");
  }
  void LinearBackward(int n, int in, int out, const Tensor& x, const Tensor& w, const Tensor& dy,
                      const Tensor& dx, const Tensor& dw, const Tensor& db) override {
    if (dx.defined()) {
      Check(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &kOne, w.f(), in, dy.f(), out, &kZero, dx.f(), in),
            "cublasSgemm (linear backward data)");
    }
    Check(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &kOne, x.f(), in, dy.f(), out, &kZero, dw.f(), in),
          "cublasSgemm (linear backward weights)");
    cuda::SumRows(dy.f(), db.f(), n, out);
  }

  void SoftmaxCrossEntropy(int n, int k, const Tensor& logits, const Tensor& labels, const Tensor& dlogits,
                           const Tensor& result) override {
    cuda::SoftmaxCrossEntropy(logits.f(), labels.i32(), dlogits.f(), result.f(), n, k);
  }
  void SgdStep(const Tensor& w, const Tensor& g, const Tensor& v, double lr, double momentum, double wd) override {
    cuda::Sgd(w.f(), g.f(), v.f(), w.count(), static_cast<float>(lr), static_cast<float>(momentum), static_cast<float>(wd));
  }
  // Virtual devices share one GPU, so every replica is addressable by the same kernels.
  void AverageAcrossDevices(const std::vector<Tensor>& replicas) override {
    if (replicas.size() < 2) return;
    const Tensor& first = replicas.front();
    for (std::size_t i = 1; i < replicas.size(); ++i) cuda::Accumulate(first.f(), replicas[i].f(), first.count());
    cuda::Scale(first.f(), first.count(), 1.0f / static_cast<float>(replicas.size()));
    for (std::size_t i = 1; i < replicas.size(); ++i) {
      Check(cudaMemcpy(replicas[i].data(), first.data(), first.bytes(), cudaMemcpyDeviceToDevice), "cudaMemcpy (average)");
    }
  }

 private:
  // The heuristics' first choice that cuDNN reports as supported, with its workspace; cached per
  // geometry so the layer's workspace request and the call agree.
  std::pair<int, std::uint64_t> Algo(const ConvGeom& g, ConvPass pass) {
    const ConvKey key = Key(g, pass);
    if (auto it = algos_.find(key); it != algos_.end()) return it->second;
    ConvDescs d(g);
    int returned = 0;
    int algo = -1;
    std::size_t bytes = 0;
    if (pass == ConvPass::kForward) {
      cudnnConvolutionFwdAlgoPerf_t perf[8];
      Check(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, d.x.desc, d.w, d.conv, d.y.desc, 8, &returned, perf),
            "cudnnGetConvolutionForwardAlgorithm_v7");
      for (int i = 0; i < returned && algo < 0; ++i) {
        if (perf[i].status == CUDNN_STATUS_SUCCESS) algo = static_cast<int>(perf[i].algo);
      }
      if (algo < 0) throw std::runtime_error("cuDNN has no forward convolution algorithm for " + Describe(g));
      Check(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, d.x.desc, d.w, d.conv, d.y.desc,
                                                    static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes),
            "cudnnGetConvolutionForwardWorkspaceSize");
    } else if (pass == ConvPass::kBackwardData) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[8];
      Check(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, d.w, d.y.desc, d.conv, d.x.desc, 8, &returned, perf),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      for (int i = 0; i < returned && algo < 0; ++i) {
        if (perf[i].status == CUDNN_STATUS_SUCCESS) algo = static_cast<int>(perf[i].algo);
      }
      if (algo < 0) throw std::runtime_error("cuDNN has no backward-data algorithm for " + Describe(g));
      Check(cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, d.w, d.y.desc, d.conv, d.x.desc,
                                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes),
            "cudnnGetConvolutionBackwardDataWorkspaceSize");
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
      Check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, d.x.desc, d.y.desc, d.conv, d.w, 8, &returned, perf),
            "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      for (int i = 0; i < returned && algo < 0; ++i) {
        if (perf[i].status == CUDNN_STATUS_SUCCESS) algo = static_cast<int>(perf[i].algo);
      }
      if (algo < 0) throw std::runtime_error("cuDNN has no backward-filter algorithm for " + Describe(g));
      Check(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, d.x.desc, d.y.desc, d.conv, d.w,
                                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes),
            "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    }
    return algos_[key] = {algo, static_cast<std::uint64_t>(bytes)};
  }

  static std::string Describe(const ConvGeom& g) {
    return fmt::format("{}x{}x{}x{} -> {} channels, {}x{} kernel, stride {}, pad {}", g.n, g.cin, g.h, g.w,
                       g.cout, g.k, g.k, g.stride, g.pad);
  }

  void Pool(const PoolGeom& g, cudnnPoolingMode_t mode, const Tensor& x, const Tensor& y) {
    PoolDesc p(g, mode);
    TensorDesc xd(g.n, g.c, g.h, g.w), yd(g.n, g.c, g.ho(), g.wo());
    Check(cudnnPoolingForward(cudnn_, p.desc, &kOne, xd.desc, x.data(), &kZero, yd.desc, y.data()),
          "cudnnPoolingForward");
  }
  void PoolBack(const PoolGeom& g, cudnnPoolingMode_t mode, const void* x, const void* y, const Tensor& dy,
                const Tensor& dx) {
    PoolDesc p(g, mode);
    TensorDesc xd(g.n, g.c, g.h, g.w), yd(g.n, g.c, g.ho(), g.wo());
    Check(cudnnPoolingBackward(cudnn_, p.desc, &kOne, yd.desc, y, yd.desc, dy.data(), xd.desc, x, &kZero,
                               xd.desc, dx.data()),
          "cudnnPoolingBackward");
  }

  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;
  std::map<ConvKey, std::pair<int, std::uint64_t>> algos_;
};

}  // namespace

std::unique_ptr<Backend> MakeCudaBackend() {
  std::string why;
  if (!CudaDeviceAvailable(&why)) throw std::runtime_error("the cuda backend needs a GPU: " + why);
  return std::make_unique<CudaBackend>();
}

}  // namespace fragscope::trainer
