// Layers without parameters, containers and the loss.
#include "fragscope/trainer/layers.hpp"

namespace fragscope::trainer {

Tensor Relu::Forward(Device& dev, const Tensor& x) {
  Tensor y = dev.Alloc(x.shape(), name_, "activation");
  dev.backend().ReluForward(x, y);
  saved_y_ = y;
  return y;
}

Tensor Relu::Backward(Device& dev, const Tensor& dy) {
  Tensor dx = dev.Alloc(dy.shape(), name_, "activation_grad");
  dev.backend().ReluBackward(saved_y_, dy, dx);
  saved_y_.Reset();
  return dx;
}

Pool2d::Pool2d(std::string name, Kind kind, int k, int stride, int pad)
    : Layer(std::move(name)), kind_(kind), k_(k), stride_(stride), pad_(pad) {}

PoolGeom Pool2d::Geom(const Shape& x) const {
  if (k_ == 0) return PoolGeom{x.n, x.c, x.h, x.w, x.h, x.h, 0};  // global (square inputs)
  return PoolGeom{x.n, x.c, x.h, x.w, k_, stride_, pad_};
}

Tensor Pool2d::Forward(Device& dev, const Tensor& x) {
  const PoolGeom g = Geom(x.shape());
  Tensor y = dev.Alloc(Shape{g.n, g.c, g.ho(), g.wo()}, name_, "activation");
  x_shape_ = x.shape();
  if (kind_ == Kind::kMax) {
    dev.backend().MaxPoolForward(g, x, y);
    saved_x_ = x;
    saved_y_ = y;
  } else {
    dev.backend().AvgPoolForward(g, x, y);
  }
  return y;
}

Tensor Pool2d::Backward(Device& dev, const Tensor& dy) {
  const PoolGeom g = Geom(x_shape_);
  Tensor dx = dev.Alloc(x_shape_, name_, "activation_grad");
  if (kind_ == Kind::kMax) {
    dev.backend().MaxPoolBackward(g, saved_x_, saved_y_, dy, dx);
  } else {
    dev.backend().AvgPoolBackward(g, dy, dx);
  }
  saved_x_.Reset();
  saved_y_.Reset();
  return dx;
}

Tensor Flatten::Forward(Device&, const Tensor& x) {
  x_shape_ = x.shape();
  return x.View(Shape{x_shape_.n, static_cast<int>(x_shape_.per_sample()), 1, 1});
}

Tensor Flatten::Backward(Device&, const Tensor& dy) { return dy.View(x_shape_); }

Tensor Sequential::Forward(Device& dev, const Tensor& x) {
  Tensor h = x;
  for (auto& layer : layers_) h = layer->Forward(dev, h);
  return h;
}

Tensor Sequential::Backward(Device& dev, const Tensor& dy) {
  Tensor g = dy;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) g = (*it)->Backward(dev, g);
  return g;
}

void Sequential::CollectParams(std::vector<Param*>* out) {
  for (auto& layer : layers_) layer->CollectParams(out);
}

void Sequential::CollectBuffers(std::vector<Tensor*>* out) {
  for (auto& layer : layers_) layer->CollectBuffers(out);
}

void Sequential::SetInputGrad(bool on) {
  input_grad_ = on;
  if (!layers_.empty()) layers_.front()->SetInputGrad(on);
}

Residual::Residual(std::string name, std::unique_ptr<Sequential> main,
                   std::unique_ptr<Sequential> shortcut)
    : Layer(name), main_(std::move(main)), shortcut_(std::move(shortcut)), relu_(name + ".relu") {}

Tensor Residual::Forward(Device& dev, const Tensor& x) {
  Tensor sum;
  {
    Tensor a = main_->Forward(dev, x);
    Tensor b = shortcut_->size() > 0 ? shortcut_->Forward(dev, x) : x;
    sum = dev.Alloc(a.shape(), name_, "activation");
    dev.backend().Add(a, b, sum);
  }
  return relu_.Forward(dev, sum);
}

Tensor Residual::Backward(Device& dev, const Tensor& dy) {
  Tensor d = relu_.Backward(dev, dy);
  Tensor d_short = shortcut_->size() > 0 ? shortcut_->Backward(dev, d) : d;
  Tensor d_main = main_->Backward(dev, d);
  d.Reset();
  if (!input_grad_) return Tensor();
  Tensor dx = dev.Alloc(d_main.shape(), name_, "activation_grad");
  dev.backend().Add(d_main, d_short, dx);
  return dx;
}

void Residual::CollectParams(std::vector<Param*>* out) {
  main_->CollectParams(out);
  shortcut_->CollectParams(out);
}

void Residual::CollectBuffers(std::vector<Tensor*>* out) {
  main_->CollectBuffers(out);
  shortcut_->CollectBuffers(out);
}

void Residual::SetInputGrad(bool on) {
  input_grad_ = on;
  main_->SetInputGrad(on);
  shortcut_->SetInputGrad(on);
}

LossOutput SoftmaxCrossEntropyLoss(Device& dev, const Tensor& logits, const Tensor& labels) {
  LossOutput out;
  out.dlogits = dev.Alloc(logits.shape(), "loss", "logits_grad");
  out.result = dev.Alloc(Shape{2, 1, 1, 1}, "loss", "result");
  dev.backend().SoftmaxCrossEntropy(logits.shape().n, logits.shape().c, logits, labels, out.dlogits,
                                    out.result);
  return out;
}

}  // namespace fragscope::trainer
