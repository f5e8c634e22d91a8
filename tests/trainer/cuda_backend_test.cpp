// The cuda backend against the cpu reference: every op through its layer, forward and backward,
// on the same inputs and weights, within a tolerance. Skips with the reason where no GPU is.
#include <gtest/gtest.h>

#include <cmath>

#include "fragscope/trainer/layers.hpp"
#include "fragscope/trainer/trainer.hpp"
#include "trainer_test_util.hpp"

namespace fragscope::trainer {
namespace {

// One device per backend: host memory for cpu, GPU memory for cuda.
struct Pair {
  Pair()
      : cpu(BackendKind::kCpu, "backing=host"), gpu_system(MemorySystem::Create(ParseAllocConf("backing=cuda"))),
        gpu_backend(MakeBackend(BackendKind::kCuda)), gpu(gpu_system->device(0), *gpu_backend, gpu_names) {}
  testing::HostDevice cpu;
  std::unique_ptr<MemorySystem> gpu_system;
  std::unique_ptr<Backend> gpu_backend;
  TagNames gpu_names;
  Device gpu;
};

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    std::string why;                                                    \
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;  \
  } while (0)

std::vector<float> Values(std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = u(rng);
  return v;
}

Tensor Upload(Device& dev, Shape shape, const std::vector<float>& values) {
  Tensor t = dev.Alloc(shape, "test", "input");
  dev.backend().Upload(t, values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> Read(Device& dev, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.count()));
  dev.backend().Download(t, v.data(), v.size() * sizeof(float));
  return v;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, const char* what, float tol = 1e-3f) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tol * std::max(1.0f, std::abs(a[i]))) << what << " element " << i;
  }
}

// Builds the same layer on both devices (make(dev)), gives both the same parameters, input and
// output gradient, and compares output, input gradient and parameter gradients.
template <typename Factory>
void CompareLayer(Shape x_shape, Factory make) {
  Pair p;
  auto cpu_layer = make(p.cpu.dev);
  auto gpu_layer = make(p.gpu);
  std::vector<Param*> cpu_params, gpu_params;
  cpu_layer->CollectParams(&cpu_params);
  gpu_layer->CollectParams(&gpu_params);
  for (std::size_t i = 0; i < cpu_params.size(); ++i) {
    const auto v = Values(cpu_params[i]->value.count(), 100 + i);
    p.cpu.backend->Upload(cpu_params[i]->value, v.data(), v.size() * 4);
    p.gpu_backend->Upload(gpu_params[i]->value, v.data(), v.size() * 4);
  }
  const auto xv = Values(x_shape.count(), 1);
  Tensor cx = Upload(p.cpu.dev, x_shape, xv), gx = Upload(p.gpu, x_shape, xv);
  Tensor cy = cpu_layer->Forward(p.cpu.dev, cx), gy = gpu_layer->Forward(p.gpu, gx);
  ExpectClose(Read(p.cpu.dev, cy), Read(p.gpu, gy), "output");
  const auto dyv = Values(cy.count(), 2);
  Tensor cdy = Upload(p.cpu.dev, cy.shape(), dyv), gdy = Upload(p.gpu, gy.shape(), dyv);
  cy.Reset();
  gy.Reset();
  Tensor cdx = cpu_layer->Backward(p.cpu.dev, cdy), gdx = gpu_layer->Backward(p.gpu, gdy);
  ExpectClose(Read(p.cpu.dev, cdx), Read(p.gpu, gdx), "input gradient");
  for (std::size_t i = 0; i < cpu_params.size(); ++i) {
    ExpectClose(Read(p.cpu.dev, cpu_params[i]->grad), Read(p.gpu, gpu_params[i]->grad), cpu_params[i]->name.c_str());
  }
}

TEST(CudaBackend, Conv) {
  SKIP_WITHOUT_GPU();
  CompareLayer(Shape{2, 3, 9, 9}, [](Device& d) { return std::make_unique<Conv2d>(d, "conv", 3, 5, 3, 2, 1); });
  CompareLayer(Shape{2, 4, 6, 6}, [](Device& d) { return std::make_unique<Conv2d>(d, "conv", 4, 6, 1, 1, 0); });
}

TEST(CudaBackend, BatchNorm) {
  SKIP_WITHOUT_GPU();
  CompareLayer(Shape{4, 3, 5, 5}, [](Device& d) { return std::make_unique<BatchNorm2d>(d, "bn", 3); });
}

TEST(CudaBackend, ReluAndPooling) {
  SKIP_WITHOUT_GPU();
  CompareLayer(Shape{2, 3, 6, 6}, [](Device&) { return std::make_unique<Relu>("relu"); });
  CompareLayer(Shape{2, 3, 7, 7}, [](Device&) { return std::make_unique<Pool2d>("p", Pool2d::Kind::kMax, 3, 2, 1); });
  CompareLayer(Shape{2, 3, 7, 7}, [](Device&) { return std::make_unique<Pool2d>("p", Pool2d::Kind::kAvg, 3, 2, 1); });
  CompareLayer(Shape{2, 3, 4, 4}, [](Device&) { return std::make_unique<Pool2d>("p", Pool2d::Kind::kAvg, 0, 1, 0); });
}

TEST(CudaBackend, Linear) {
  SKIP_WITHOUT_GPU();
  CompareLayer(Shape{3, 7, 1, 1}, [](Device& d) { return std::make_unique<Linear>(d, "fc", 7, 4); });
}

TEST(CudaBackend, LossAndSgd) {
  SKIP_WITHOUT_GPU();
  Pair p;
  const auto logits = Values(4 * 5, 3);
  const std::vector<std::int32_t> labels = {0, 3, 4, 1};
  auto run = [&](Device& dev) {
    Tensor z = Upload(dev, Shape{4, 5, 1, 1}, logits);
    Tensor l = dev.AllocBytes(16, "test", "labels");
    dev.backend().Upload(l, labels.data(), 16);
    LossOutput out = SoftmaxCrossEntropyLoss(dev, z, l);
    auto result = Read(dev, out.result);
    auto grad = Read(dev, out.dlogits);
    grad.insert(grad.end(), result.begin(), result.begin() + 2);
    Tensor w = Upload(dev, Shape{8, 1, 1, 1}, Values(8, 4)), g = Upload(dev, Shape{8, 1, 1, 1}, Values(8, 5)),
           v = Upload(dev, Shape{8, 1, 1, 1}, Values(8, 6));
    dev.backend().SgdStep(w, g, v, 0.1, 0.9, 0.01);
    const auto wv = Read(dev, w);
    grad.insert(grad.end(), wv.begin(), wv.end());
    return grad;
  };
  ExpectClose(run(p.cpu.dev), run(p.gpu), "loss, dlogits, sgd");
}

TEST(CudaBackend, TinyTrainsLikeCpu) {
  SKIP_WITHOUT_GPU();
  TrainOptions options;
  options.model.name = "tiny";
  options.batch = 16;
  options.steps = 3;
  options.alloc_conf = ParseAllocConf("backing=host");
  const TrainResult cpu = Train(options);
  options.backend = BackendKind::kCuda;
  options.alloc_conf = ParseAllocConf("backing=cuda");
  const TrainResult gpu = Train(options);
  ASSERT_FALSE(gpu.oom);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(cpu.steps[i].loss, gpu.steps[i].loss, 1e-2) << i;
}

}  // namespace
}  // namespace fragscope::trainer
