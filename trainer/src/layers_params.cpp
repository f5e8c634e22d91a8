// Layers with parameters: convolution, batch normalization, linear; parameter initialisation.
#include <cmath>
#include <functional>
#include <random>
#include <string_view>
#include <vector>

#include "fragscope/trainer/layers.hpp"

namespace fragscope::trainer {
namespace {

Param MakeParam(Device& dev, const std::string& owner, const char* role, Shape shape) {
  Param p;
  p.name = owner + "/" + role;
  p.value = dev.Alloc(shape, owner, role);
  return p;
}

}  // namespace

Conv2d::Conv2d(Device& dev, std::string name, int cin, int cout, int k, int stride, int pad)
    : Layer(std::move(name)), cin_(cin), cout_(cout), k_(k), stride_(stride), pad_(pad),
      weight_(MakeParam(dev, name_, "weight", Shape{cout, cin, k, k})) {}

ConvGeom Conv2d::Geom(const Shape& x) const {
  return ConvGeom{x.n, cin_, x.h, x.w, cout_, k_, stride_, pad_};
}

Tensor Conv2d::Forward(Device& dev, const Tensor& x) {
  const ConvGeom g = Geom(x.shape());
  Tensor y = dev.Alloc(Shape{g.n, cout_, g.ho(), g.wo()}, name_, "activation");
  {
    const std::uint64_t bytes = dev.backend().ConvWorkspaceBytes(g, ConvPass::kForward);
    Tensor ws = bytes > 0 ? dev.AllocBytes(bytes, name_, "workspace") : Tensor();
    dev.backend().ConvForward(g, x, weight_.value, y, ws);
  }
  saved_x_ = x;
  return y;
}

Tensor Conv2d::Backward(Device& dev, const Tensor& dy) {
  const ConvGeom g = Geom(saved_x_.shape());
  weight_.grad = dev.Alloc(weight_.value.shape(), name_, "weight_grad");
  {
    const std::uint64_t bytes = dev.backend().ConvWorkspaceBytes(g, ConvPass::kBackwardFilter);
    Tensor ws = bytes > 0 ? dev.AllocBytes(bytes, name_, "workspace") : Tensor();
    dev.backend().ConvBackwardFilter(g, saved_x_, dy, weight_.grad, ws);
  }
  Tensor dx;
  if (input_grad_) {
    dx = dev.Alloc(saved_x_.shape(), name_, "activation_grad");
    const std::uint64_t bytes = dev.backend().ConvWorkspaceBytes(g, ConvPass::kBackwardData);
    Tensor ws = bytes > 0 ? dev.AllocBytes(bytes, name_, "workspace") : Tensor();
    dev.backend().ConvBackwardData(g, dy, weight_.value, dx, ws);
  }
  saved_x_.Reset();
  return dx;
}

BatchNorm2d::BatchNorm2d(Device& dev, std::string name, int channels)
    : Layer(std::move(name)), channels_(channels),
      gamma_(MakeParam(dev, name_, "gamma", Shape{channels, 1, 1, 1})),
      beta_(MakeParam(dev, name_, "beta", Shape{channels, 1, 1, 1})),
      running_mean_(dev.Alloc(Shape{channels, 1, 1, 1}, name_, "running_mean")),
      running_var_(dev.Alloc(Shape{channels, 1, 1, 1}, name_, "running_var")) {
  dev.backend().Fill(running_mean_, 0.0f);
  dev.backend().Fill(running_var_, 1.0f);
}

void BatchNorm2d::CollectParams(std::vector<Param*>* out) {
  out->push_back(&gamma_);
  out->push_back(&beta_);
}

void BatchNorm2d::CollectBuffers(std::vector<Tensor*>* out) {
  out->push_back(&running_mean_);
  out->push_back(&running_var_);
}

Tensor BatchNorm2d::Forward(Device& dev, const Tensor& x) {
  const Shape s = x.shape();
  Tensor y = dev.Alloc(s, name_, "activation");
  saved_mean_ = dev.Alloc(Shape{channels_, 1, 1, 1}, name_, "saved_mean");
  saved_invstd_ = dev.Alloc(Shape{channels_, 1, 1, 1}, name_, "saved_invstd");
  dev.backend().BatchNormForward(s, x, gamma_.value, beta_.value, running_mean_, running_var_, y,
                                 saved_mean_, saved_invstd_, kMomentum, kEps);
  saved_x_ = x;
  return y;
}

Tensor BatchNorm2d::Backward(Device& dev, const Tensor& dy) {
  gamma_.grad = dev.Alloc(gamma_.value.shape(), name_, "gamma_grad");
  beta_.grad = dev.Alloc(beta_.value.shape(), name_, "beta_grad");
  Tensor dx = dev.Alloc(saved_x_.shape(), name_, "activation_grad");
  dev.backend().BatchNormBackward(saved_x_.shape(), saved_x_, dy, gamma_.value, saved_mean_,
                                  saved_invstd_, dx, gamma_.grad, beta_.grad, kEps);
  saved_x_.Reset();
  saved_mean_.Reset();
  saved_invstd_.Reset();
  return dx;
}

Linear::Linear(Device& dev, std::string name, int in, int out)
    : Layer(std::move(name)), in_(in), out_(out),
      weight_(MakeParam(dev, name_, "weight", Shape{out, in, 1, 1})),
      bias_(MakeParam(dev, name_, "bias", Shape{out, 1, 1, 1})) {}

void Linear::CollectParams(std::vector<Param*>* out) {
  out->push_back(&weight_);
  out->push_back(&bias_);
}

Tensor Linear::Forward(Device& dev, const Tensor& x) {
  const int n = x.shape().n;
  Tensor y = dev.Alloc(Shape{n, out_, 1, 1}, name_, "activation");
  dev.backend().LinearForward(n, in_, out_, x, weight_.value, bias_.value, y);
  saved_x_ = x;
  return y;
}

Tensor Linear::Backward(Device& dev, const Tensor& dy) {
  const int n = saved_x_.shape().n;
  weight_.grad = dev.Alloc(weight_.value.shape(), name_, "weight_grad");
  bias_.grad = dev.Alloc(bias_.value.shape(), name_, "bias_grad");
  Tensor dx = input_grad_ ? dev.Alloc(saved_x_.shape(), name_, "activation_grad") : Tensor();
  dev.backend().LinearBackward(n, in_, out_, saved_x_, weight_.value, dy, dx, weight_.grad, bias_.grad);
  saved_x_.Reset();
  return dx;
}

void InitParams(Device& dev, const std::vector<Param*>& params, std::uint64_t seed) {
  if (!dev.backend().computes()) return;
  for (Param* p : params) {
    const std::string_view role = std::string_view(p->name).substr(p->name.rfind('/') + 1);
    std::vector<float> host(static_cast<std::size_t>(p->value.count()));
    if (role == "gamma") {
      std::fill(host.begin(), host.end(), 1.0f);
    } else if (role == "weight") {
      std::mt19937_64 rng(seed ^ std::hash<std::string>{}(p->name));
      const double fan_in = static_cast<double>(p->value.shape().per_sample());
      std::normal_distribution<float> normal(0.0f, static_cast<float>(std::sqrt(2.0 / fan_in)));
      for (float& v : host) v = normal(rng);
    }  // beta, bias: zeros
    dev.backend().Upload(p->value, host.data(), host.size() * sizeof(float));
  }
}

}  // namespace fragscope::trainer
