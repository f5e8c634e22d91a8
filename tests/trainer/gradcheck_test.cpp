// Finite-difference gradient checks of every cpu op, through the layers that use them: the
// analytic gradient of L = sum(y * r) (r random) from Backward must match central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "fragscope/trainer/layers.hpp"
#include "trainer_test_util.hpp"

namespace fragscope::trainer {
namespace {

using testing::HostDevice;
using testing::ToVector;

double Dot(const Tensor& y, const std::vector<float>& r) {
  double s = 0.0;
  for (long i = 0; i < y.count(); ++i) s += static_cast<double>(y.f()[i]) * r[static_cast<std::size_t>(i)];
  return s;
}

// Checks d(sum(y r))/d(t[i]) for up to `samples` elements of `t` against `analytic`.
void CheckAgainstFiniteDifferences(const char* what, const Tensor& t, const std::vector<float>& analytic,
                                   const std::function<double()>& objective, float eps = 1e-2f,
                                   int samples = 24) {
  ASSERT_EQ(analytic.size(), static_cast<std::size_t>(t.count())) << what;
  const long stride = std::max<long>(1, t.count() / samples);
  int checked = 0;
  for (long i = 0; i < t.count(); i += stride) {
    const float saved = t.f()[i];
    t.f()[i] = saved + eps;
    const double plus = objective();
    t.f()[i] = saved - eps;
    const double minus = objective();
    t.f()[i] = saved;
    const double numeric = (plus - minus) / (2.0 * eps);
    const double a = analytic[static_cast<std::size_t>(i)];
    EXPECT_NEAR(numeric, a, 2e-2 + 2e-2 * std::abs(a)) << what << " element " << i;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// Forward once, backward with dy = r, then checks the input and every parameter.
void CheckLayer(HostDevice& h, Layer& layer, const Tensor& x, float eps = 1e-2f) {
  Tensor y = layer.Forward(h.dev, x);
  std::vector<float> r(static_cast<std::size_t>(y.count()));
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : r) v = u(rng);
  Tensor dy = h.dev.Alloc(y.shape(), "test", "dy");
  std::copy(r.begin(), r.end(), dy.f());
  y.Reset();
  Tensor dx = layer.Backward(h.dev, dy);
  ASSERT_TRUE(dx.defined());
  std::vector<Param*> params;
  layer.CollectParams(&params);
  std::vector<std::vector<float>> grads;
  for (Param* p : params) {
    ASSERT_TRUE(p->grad.defined()) << p->name;
    grads.push_back(ToVector(p->grad));
  }
  const std::vector<float> dx_host = ToVector(dx);
  auto objective = [&] {
    Tensor out = layer.Forward(h.dev, x);
    return Dot(out, r);
  };
  CheckAgainstFiniteDifferences("input", x, dx_host, objective, eps);
  for (std::size_t i = 0; i < params.size(); ++i) {
    CheckAgainstFiniteDifferences(params[i]->name.c_str(), params[i]->value, grads[i], objective, eps);
  }
}

TEST(GradCheck, Conv3x3Padded) {
  HostDevice h;
  Conv2d conv(h.dev, "conv", 3, 4, 3, 1, 1);
  InitParams(h.dev, {}, 1);
  std::vector<Param*> params;
  conv.CollectParams(&params);
  InitParams(h.dev, params, 7);
  CheckLayer(h, conv, h.Random(Shape{2, 3, 5, 5}, 1));
}

TEST(GradCheck, ConvStride2) {
  HostDevice h;
  Conv2d conv(h.dev, "conv", 2, 3, 3, 2, 1);
  std::vector<Param*> params;
  conv.CollectParams(&params);
  InitParams(h.dev, params, 8);
  CheckLayer(h, conv, h.Random(Shape{2, 2, 7, 7}, 2));
}

TEST(GradCheck, ConvPointwise) {
  HostDevice h;
  Conv2d conv(h.dev, "conv", 4, 3, 1, 1, 0);
  std::vector<Param*> params;
  conv.CollectParams(&params);
  InitParams(h.dev, params, 9);
  CheckLayer(h, conv, h.Random(Shape{2, 4, 3, 3}, 3));
}

TEST(GradCheck, BatchNormTrainingMode) {
  HostDevice h;
  BatchNorm2d bn(h.dev, "bn", 3);
  std::vector<Param*> params;
  bn.CollectParams(&params);
  InitParams(h.dev, params, 1);
  h.dev.backend().Fill(params[0]->value, 1.5f);   // gamma
  h.dev.backend().Fill(params[1]->value, -0.25f); // beta
  CheckLayer(h, bn, h.Random(Shape{4, 3, 3, 3}, 4), 5e-3f);
}

TEST(GradCheck, BatchNormRunningStatistics) {
  HostDevice h;
  BatchNorm2d bn(h.dev, "bn", 1);
  std::vector<Param*> params;
  bn.CollectParams(&params);
  InitParams(h.dev, params, 1);
  Tensor x = h.dev.Alloc(Shape{2, 1, 1, 2}, "test", "x");
  const float values[4] = {1, 2, 3, 6};  // mean 3, biased var 3.5, unbiased 14/3
  std::copy(values, values + 4, x.f());
  Tensor y = bn.Forward(h.dev, x);
  std::vector<Tensor*> buffers;
  bn.CollectBuffers(&buffers);
  EXPECT_NEAR(buffers[0]->f()[0], 0.1 * 3.0, 1e-6);
  EXPECT_NEAR(buffers[1]->f()[0], 0.9 + 0.1 * 14.0 / 3.0, 1e-6);
  EXPECT_NEAR(y.f()[0], (1 - 3) / std::sqrt(3.5 + 1e-5), 1e-5);
}

TEST(GradCheck, Relu) {
  HostDevice h;
  Relu relu("relu");
  CheckLayer(h, relu, h.Random(Shape{2, 2, 3, 3}, 5, 1.0f, 0.05f), 1e-3f);
}

TEST(GradCheck, MaxPool) {
  HostDevice h;
  Pool2d pool("pool", Pool2d::Kind::kMax, 2, 2, 0);
  CheckLayer(h, pool, h.Random(Shape{2, 2, 4, 4}, 6), 1e-3f);
}

TEST(GradCheck, MaxPoolOverlappingPadded) {
  HostDevice h;
  Pool2d pool("pool", Pool2d::Kind::kMax, 3, 2, 1);
  CheckLayer(h, pool, h.Random(Shape{1, 2, 5, 5}, 7), 1e-3f);
}

TEST(GradCheck, AvgPoolPadded) {
  HostDevice h;
  Pool2d pool("pool", Pool2d::Kind::kAvg, 3, 2, 1);
  CheckLayer(h, pool, h.Random(Shape{2, 2, 5, 5}, 8));
}

TEST(GradCheck, GlobalAvgPool) {
  HostDevice h;
  Pool2d pool("pool", Pool2d::Kind::kAvg, 0, 1, 0);
  CheckLayer(h, pool, h.Random(Shape{2, 3, 4, 4}, 9));
}

TEST(GradCheck, Linear) {
  HostDevice h;
  Linear fc(h.dev, "fc", 5, 4);
  std::vector<Param*> params;
  fc.CollectParams(&params);
  InitParams(h.dev, params, 10);
  h.dev.backend().Fill(params[1]->value, 0.3f);
  CheckLayer(h, fc, h.Random(Shape{3, 5, 1, 1}, 10));
}

TEST(GradCheck, ResidualBlockWithDownsample) {
  HostDevice h;
  auto main = std::make_unique<Sequential>("b.main");
  main->Append(std::make_unique<Conv2d>(h.dev, "b.conv1", 2, 3, 3, 2, 1));
  main->Append(std::make_unique<BatchNorm2d>(h.dev, "b.bn1", 3));
  auto shortcut = std::make_unique<Sequential>("b.downsample");
  shortcut->Append(std::make_unique<Conv2d>(h.dev, "b.downsample.0", 2, 3, 1, 2, 0));
  Residual block("b", std::move(main), std::move(shortcut));
  std::vector<Param*> params;
  block.CollectParams(&params);
  InitParams(h.dev, params, 11);
  CheckLayer(h, block, h.Random(Shape{3, 2, 4, 4}, 11, 1.0f), 5e-3f);
}

TEST(GradCheck, ResidualIdentity) {
  HostDevice h;
  auto main = std::make_unique<Sequential>("b.main");
  main->Append(std::make_unique<Conv2d>(h.dev, "b.conv1", 2, 2, 3, 1, 1));
  Residual block("b", std::move(main), std::make_unique<Sequential>("b.downsample"));
  std::vector<Param*> params;
  block.CollectParams(&params);
  InitParams(h.dev, params, 12);
  // (seed 12 puts a pre-activation at -1e-5, on the ReLU kink, where finite differences lie)
  CheckLayer(h, block, h.Random(Shape{2, 2, 3, 3}, 13), 1e-3f);
}

TEST(GradCheck, SoftmaxCrossEntropy) {
  HostDevice h;
  Tensor logits = h.Random(Shape{4, 5, 1, 1}, 13, 2.0f);
  Tensor labels = h.dev.AllocBytes(4 * sizeof(std::int32_t), "test", "labels");
  const std::int32_t values[4] = {0, 3, 4, 1};
  std::copy(values, values + 4, labels.i32());
  LossOutput out = SoftmaxCrossEntropyLoss(h.dev, logits, labels);
  const std::vector<float> analytic = ToVector(out.dlogits);
  auto objective = [&] { return static_cast<double>(SoftmaxCrossEntropyLoss(h.dev, logits, labels).result.f()[0]); };
  CheckAgainstFiniteDifferences("logits", logits, analytic, objective, 1e-2f, 20);
  // Rows of dlogits sum to zero; the loss of uniform logits is log(k).
  h.dev.backend().Fill(logits, 0.0f);
  EXPECT_NEAR(SoftmaxCrossEntropyLoss(h.dev, logits, labels).result.f()[0], std::log(5.0), 1e-5);
}

TEST(Optimizer, SgdMomentumWeightDecay) {
  HostDevice h;
  Tensor w = h.dev.Alloc(Shape{2, 1, 1, 1}, "p", "weight");
  Tensor g = h.dev.Alloc(Shape{2, 1, 1, 1}, "p", "weight_grad");
  Tensor v = h.dev.Alloc(Shape{2, 1, 1, 1}, "p", "weight_momentum");
  w.f()[0] = 1.0f; w.f()[1] = -2.0f;
  g.f()[0] = 0.5f; g.f()[1] = 1.0f;
  h.dev.backend().Fill(v, 0.0f);
  h.dev.backend().SgdStep(w, g, v, 0.1, 0.9, 0.01);
  EXPECT_FLOAT_EQ(v.f()[0], 0.5f + 0.01f);           // v = g + wd w
  EXPECT_FLOAT_EQ(w.f()[0], 1.0f - 0.1f * 0.51f);
  h.dev.backend().SgdStep(w, g, v, 0.1, 0.9, 0.01);
  const float v2 = 0.9f * 0.51f + 0.5f + 0.01f * (1.0f - 0.051f);
  EXPECT_NEAR(v.f()[0], v2, 1e-6);
  EXPECT_NEAR(w.f()[0], 1.0f - 0.051f - 0.1f * v2, 1e-6);
}

}  // namespace
}  // namespace fragscope::trainer
