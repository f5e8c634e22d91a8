// The models: `tiny` (two conv blocks and a linear layer), `tiny-nobn` (the same without batch
// norm, whose data-parallel gradients equal those of one device exactly), `resnet18`, `resnet50`.
// ResNets follow torchvision; for 32x32 inputs the stem is the CIFAR one (3x3 conv, stride 1, no
// max pool), for larger inputs the ImageNet one (7x7 stride 2 conv and a 3x3 stride 2 max pool).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/trainer/layers.hpp"

namespace fragscope::trainer {

struct ModelSpec {
  std::string name = "tiny";
  int channels = 3;      // input channels
  int image_size = 32;   // square inputs
  int classes = 10;
};

class Model {
 public:
  Model(std::string name, std::unique_ptr<Sequential> net);
  Tensor Forward(Device& dev, const Tensor& x) { return net_->Forward(dev, x); }
  void Backward(Device& dev, const Tensor& dlogits) { net_->Backward(dev, dlogits); }
  const std::vector<Param*>& params() const { return params_; }
  std::vector<Tensor*> buffers() { std::vector<Tensor*> out; net_->CollectBuffers(&out); return out; }
  std::uint64_t param_count() const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::unique_ptr<Sequential> net_;
  std::vector<Param*> params_;
};

const std::vector<std::string_view>& ModelNames();
// Allocates the parameters on `dev` (tags "<layer>/weight", ...), initialised from `seed`. Throws
// std::invalid_argument for an unknown name or an image size the model cannot take.
std::unique_ptr<Model> BuildModel(Device& dev, const ModelSpec& spec, std::uint64_t seed);

}  // namespace fragscope::trainer
