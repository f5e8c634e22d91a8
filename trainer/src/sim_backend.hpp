#pragma once

#include "fragscope/trainer/backend.hpp"

namespace fragscope::trainer {

class SimBackend final : public Backend {
 public:
  std::string_view name() const override { return "sim"; }
  bool computes() const override { return false; }
  void Upload(const Tensor&, const void*, std::uint64_t) override {}
  void Download(const Tensor&, void*, std::uint64_t) override {}
  void Fill(const Tensor&, float) override {}
  std::uint64_t ConvWorkspaceBytes(const ConvGeom& g, ConvPass pass) override;
  void ConvForward(const ConvGeom&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void ConvBackwardData(const ConvGeom&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void ConvBackwardFilter(const ConvGeom&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void BatchNormForward(const Shape&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, const Tensor&, const Tensor&, const Tensor&, double,
                        double) override {}
  void BatchNormBackward(const Shape&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, const Tensor&, const Tensor&, const Tensor&, double) override {}
  void ReluForward(const Tensor&, const Tensor&) override {}
  void ReluBackward(const Tensor&, const Tensor&, const Tensor&) override {}
  void MaxPoolForward(const PoolGeom&, const Tensor&, const Tensor&) override {}
  void MaxPoolBackward(const PoolGeom&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void AvgPoolForward(const PoolGeom&, const Tensor&, const Tensor&) override {}
  void AvgPoolBackward(const PoolGeom&, const Tensor&, const Tensor&) override {}
  void Add(const Tensor&, const Tensor&, const Tensor&) override {}
  void LinearForward(int, int, int, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void LinearBackward(int, int, int, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                      const Tensor&, const Tensor&) override {}
  void SoftmaxCrossEntropy(int, int, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void SgdStep(const Tensor&, const Tensor&, const Tensor&, double, double, double) override {}
  void AverageAcrossDevices(const std::vector<Tensor>&) override {}
};

}  // namespace fragscope::trainer
