// The cpu backend: the plain C++ reference of every op. Memory is host memory (the allocator's
// `host` backing), dereferenced directly.
#pragma once

#include "fragscope/trainer/backend.hpp"

namespace fragscope::trainer {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool computes() const override { return true; }
  void Upload(const Tensor& dst, const void* src, std::uint64_t bytes) override;
  void Download(const Tensor& src, void* dst, std::uint64_t bytes) override;
  void Fill(const Tensor& t, float value) override;
  std::uint64_t ConvWorkspaceBytes(const ConvGeom& g, ConvPass pass) override;
  void ConvForward(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& y,
                   const Tensor& ws) override;
  void ConvBackwardData(const ConvGeom& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                        const Tensor& ws) override;
  void ConvBackwardFilter(const ConvGeom& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                          const Tensor& ws) override;
  void BatchNormForward(const Shape& s, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        const Tensor& running_mean, const Tensor& running_var, const Tensor& y,
                        const Tensor& save_mean, const Tensor& save_invstd, double momentum,
                        double eps) override;
  void BatchNormBackward(const Shape& s, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                         const Tensor& save_mean, const Tensor& save_invstd, const Tensor& dx,
                         const Tensor& dgamma, const Tensor& dbeta, double eps) override;
  void ReluForward(const Tensor& x, const Tensor& y) override;
  void ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) override;
  void MaxPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) override;
  void MaxPoolBackward(const PoolGeom& g, const Tensor& x, const Tensor& y, const Tensor& dy,
                       const Tensor& dx) override;
  void AvgPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) override;
  void AvgPoolBackward(const PoolGeom& g, const Tensor& dy, const Tensor& dx) override;
  void Add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void LinearForward(int n, int in, int out, const Tensor& x, const Tensor& w, const Tensor& b,
                     const Tensor& y) override;
  void LinearBackward(int n, int in, int out, const Tensor& x, const Tensor& w, const Tensor& dy,
                      const Tensor& dx, const Tensor& dw, const Tensor& db) override;
  void SoftmaxCrossEntropy(int n, int k, const Tensor& logits, const Tensor& labels,
                           const Tensor& dlogits, const Tensor& result) override;
  void SgdStep(const Tensor& w, const Tensor& g, const Tensor& v, double lr, double momentum,
               double weight_decay) override;
  void AverageAcrossDevices(const std::vector<Tensor>& replicas) override;
};

}  // namespace fragscope::trainer
