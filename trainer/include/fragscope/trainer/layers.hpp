// Layers with forward and backward. A layer allocates its outputs, the tensors it keeps for
// backward, its gradients and its workspaces through the Device, tagged "<name>/<role>", and drops
// each the moment it is dead. Roles: weight, bias, weight_grad, bias_grad, momentum, activation,
// activation_grad, workspace, saved_mean, saved_invstd, running_mean, running_var.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fragscope/trainer/backend.hpp"
#include "fragscope/trainer/tensor.hpp"

namespace fragscope::trainer {

struct Param {
  std::string name;  // "layer1.0.conv1/weight"
  Tensor value;
  Tensor grad;       // allocated by backward, freed by the optimizer step
  Tensor momentum;   // allocated by the first optimizer step, kept
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  virtual Tensor Forward(Device& dev, const Tensor& x) = 0;
  // Returns the gradient of the input (undefined when input gradients are off).
  virtual Tensor Backward(Device& dev, const Tensor& dy) = 0;
  virtual void CollectParams(std::vector<Param*>*) {}
  // Running statistics and other state that is neither a parameter nor a gradient.
  virtual void CollectBuffers(std::vector<Tensor*>*) {}
  // The first layer of a model needs no gradient of its input (the data).
  virtual void SetInputGrad(bool on) { input_grad_ = on; }
  const std::string& name() const { return name_; }

 protected:
  std::string name_;
  bool input_grad_ = true;
};

// 2-D convolution without bias (every conv of these models is followed by batch norm).
class Conv2d final : public Layer {
 public:
  Conv2d(Device& dev, std::string name, int cin, int cout, int k, int stride, int pad);
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;
  void CollectParams(std::vector<Param*>* out) override { out->push_back(&weight_); }

 private:
  ConvGeom Geom(const Shape& x) const;
  int cin_, cout_, k_, stride_, pad_;
  Param weight_;
  Tensor saved_x_;
};

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(Device& dev, std::string name, int channels);
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;
  void CollectParams(std::vector<Param*>* out) override;
  void CollectBuffers(std::vector<Tensor*>* out) override;
  static constexpr double kMomentum = 0.1, kEps = 1e-5;

 private:
  int channels_;
  Param gamma_, beta_;
  Tensor running_mean_, running_var_;
  Tensor saved_x_, saved_mean_, saved_invstd_;
};

class Relu final : public Layer {
 public:
  using Layer::Layer;
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;

 private:
  Tensor saved_y_;
};

class Pool2d final : public Layer {
 public:
  enum class Kind : std::uint8_t { kMax, kAvg };
  // k = 0: global pooling (the window is the whole input).
  Pool2d(std::string name, Kind kind, int k, int stride, int pad);
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;

 private:
  PoolGeom Geom(const Shape& x) const;
  Kind kind_;
  int k_, stride_, pad_;
  Shape x_shape_;
  Tensor saved_x_, saved_y_;  // max pooling only
};

// [n, c, h, w] -> [n, c h w, 1, 1]: a view, no memory.
class Flatten final : public Layer {
 public:
  using Layer::Layer;
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;

 private:
  Shape x_shape_;
};

class Linear final : public Layer {
 public:
  Linear(Device& dev, std::string name, int in, int out);
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;
  void CollectParams(std::vector<Param*>* out) override;

 private:
  int in_, out_;
  Param weight_, bias_;
  Tensor saved_x_;
};

class Sequential : public Layer {
 public:
  explicit Sequential(std::string name) : Layer(std::move(name)) {}
  void Append(std::unique_ptr<Layer> layer) { layers_.push_back(std::move(layer)); }
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;
  void CollectParams(std::vector<Param*>* out) override;
  void CollectBuffers(std::vector<Tensor*>* out) override;
  void SetInputGrad(bool on) override;
  std::size_t size() const { return layers_.size(); }

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
};

// y = relu(main(x) + shortcut(x)); main and shortcut are Sequentials (an empty shortcut is the
// identity). The ResNet basic block and bottleneck are built from it.
class Residual final : public Layer {
 public:
  Residual(std::string name, std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut);
  Tensor Forward(Device& dev, const Tensor& x) override;
  Tensor Backward(Device& dev, const Tensor& dy) override;
  void CollectParams(std::vector<Param*>* out) override;
  void CollectBuffers(std::vector<Tensor*>* out) override;
  void SetInputGrad(bool on) override;

 private:
  std::unique_ptr<Sequential> main_, shortcut_;
  Relu relu_;
};

// Mean softmax cross-entropy. Forward returns dlogits (tag "loss/logits_grad") and fills
// `result` (2 floats: loss, correct predictions; tag "loss/result").
struct LossOutput {
  Tensor dlogits;
  Tensor result;
};
LossOutput SoftmaxCrossEntropyLoss(Device& dev, const Tensor& logits, const Tensor& labels);

// Parameter initialisation: He-normal weights for conv and linear, ones/zeros for batch norm;
// seeded by the parameter name so that every replica and every backend starts equal.
void InitParams(Device& dev, const std::vector<Param*>& params, std::uint64_t seed);

}  // namespace fragscope::trainer
