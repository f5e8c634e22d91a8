#include <stdexcept>

#include <fmt/format.h>

#include "fragscope/trainer/model.hpp"

namespace fragscope::trainer {
namespace {

using Kind = Pool2d::Kind;

void ConvBn(Device& dev, Sequential& seq, const std::string& prefix, const std::string& suffix,
            int cin, int cout, int k, int stride, int pad, bool relu) {
  seq.Append(std::make_unique<Conv2d>(dev, prefix + ".conv" + suffix, cin, cout, k, stride, pad));
  seq.Append(std::make_unique<BatchNorm2d>(dev, prefix + ".bn" + suffix, cout));
  if (relu) seq.Append(std::make_unique<Relu>(prefix + ".relu" + suffix));
}

std::unique_ptr<Sequential> Tiny(Device& dev, const ModelSpec& spec, bool batch_norm) {
  if (spec.image_size % 4 != 0) throw std::invalid_argument(fmt::format("--image-size {}: tiny needs an image size divisible by 4", spec.image_size));
  auto net = std::make_unique<Sequential>("tiny");
  int cin = spec.channels;
  const int widths[2] = {16, 32};
  for (int b = 0; b < 2; ++b) {
    const std::string block = fmt::format("block{}", b + 1);
    net->Append(std::make_unique<Conv2d>(dev, block + ".conv", cin, widths[b], 3, 1, 1));
    if (batch_norm) net->Append(std::make_unique<BatchNorm2d>(dev, block + ".bn", widths[b]));
    net->Append(std::make_unique<Relu>(block + ".relu"));
    net->Append(std::make_unique<Pool2d>(block + ".pool", Kind::kMax, 2, 2, 0));
    cin = widths[b];
  }
  net->Append(std::make_unique<Flatten>("flatten"));
  const int side = spec.image_size / 4;
  net->Append(std::make_unique<Linear>(dev, "fc", cin * side * side, spec.classes));
  return net;
}

std::unique_ptr<Layer> BasicBlock(Device& dev, const std::string& name, int cin, int cout, int stride) {
  auto main = std::make_unique<Sequential>(name + ".main");
  ConvBn(dev, *main, name, "1", cin, cout, 3, stride, 1, true);
  ConvBn(dev, *main, name, "2", cout, cout, 3, 1, 1, false);
  auto shortcut = std::make_unique<Sequential>(name + ".downsample");
  if (stride != 1 || cin != cout) {
    shortcut->Append(std::make_unique<Conv2d>(dev, name + ".downsample.0", cin, cout, 1, stride, 0));
    shortcut->Append(std::make_unique<BatchNorm2d>(dev, name + ".downsample.1", cout));
  }
  return std::make_unique<Residual>(name, std::move(main), std::move(shortcut));
}

std::unique_ptr<Layer> Bottleneck(Device& dev, const std::string& name, int cin, int width, int stride) {
  const int cout = width * 4;
  auto main = std::make_unique<Sequential>(name + ".main");
  ConvBn(dev, *main, name, "1", cin, width, 1, 1, 0, true);
  ConvBn(dev, *main, name, "2", width, width, 3, stride, 1, true);
  ConvBn(dev, *main, name, "3", width, cout, 1, 1, 0, false);
  auto shortcut = std::make_unique<Sequential>(name + ".downsample");
  if (stride != 1 || cin != cout) {
    shortcut->Append(std::make_unique<Conv2d>(dev, name + ".downsample.0", cin, cout, 1, stride, 0));
    shortcut->Append(std::make_unique<BatchNorm2d>(dev, name + ".downsample.1", cout));
  }
  return std::make_unique<Residual>(name, std::move(main), std::move(shortcut));
}

std::unique_ptr<Sequential> ResNet(Device& dev, const ModelSpec& spec, bool bottleneck) {
  const int blocks18[4] = {2, 2, 2, 2}, blocks50[4] = {3, 4, 6, 3};
  const int* blocks = bottleneck ? blocks50 : blocks18;
  auto net = std::make_unique<Sequential>(bottleneck ? "resnet50" : "resnet18");
  if (spec.image_size <= 64) {
    ConvBn(dev, *net, "stem", "", spec.channels, 64, 3, 1, 1, true);
  } else {
    ConvBn(dev, *net, "stem", "", spec.channels, 64, 7, 2, 3, true);
    net->Append(std::make_unique<Pool2d>("stem.maxpool", Kind::kMax, 3, 2, 1));
  }
  int cin = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string name = fmt::format("layer{}.{}", stage + 1, b);
      const int stride = (b == 0 && stage > 0) ? 2 : 1;
      if (bottleneck) {
        net->Append(Bottleneck(dev, name, cin, width, stride));
        cin = width * 4;
      } else {
        net->Append(BasicBlock(dev, name, cin, width, stride));
        cin = width;
      }
    }
  }
  net->Append(std::make_unique<Pool2d>("avgpool", Kind::kAvg, 0, 1, 0));
  net->Append(std::make_unique<Flatten>("flatten"));
  net->Append(std::make_unique<Linear>(dev, "fc", cin, spec.classes));
  return net;
}

}  // namespace

Model::Model(std::string name, std::unique_ptr<Sequential> net)
    : name_(std::move(name)), net_(std::move(net)) {
  net_->CollectParams(&params_);
  net_->SetInputGrad(false);
}

std::uint64_t Model::param_count() const {
  std::uint64_t total = 0;
  for (const Param* p : params_) total += static_cast<std::uint64_t>(p->value.count());
  return total;
}

const std::vector<std::string_view>& ModelNames() {
  static const std::vector<std::string_view> names = {"tiny", "tiny-nobn", "resnet18", "resnet50"};
  return names;
}

std::unique_ptr<Model> BuildModel(Device& dev, const ModelSpec& spec, std::uint64_t seed) {
  if (spec.image_size < 8 || spec.channels < 1 || spec.classes < 2) {
    throw std::invalid_argument("image size must be at least 8, channels at least 1, classes at least 2");
  }
  std::unique_ptr<Sequential> net;
  if (spec.name == "tiny") {
    net = Tiny(dev, spec, true);
  } else if (spec.name == "tiny-nobn") {
    net = Tiny(dev, spec, false);
  } else if (spec.name == "resnet18" || spec.name == "resnet50") {
    if (spec.image_size < 32 || spec.image_size % 32 != 0) {
      throw std::invalid_argument(fmt::format("--image-size {}: {} needs an image size that is a multiple of 32", spec.image_size, spec.name));
    }
    net = ResNet(dev, spec, spec.name == "resnet50");
  } else {
    throw std::invalid_argument(fmt::format("unknown model '{}' (models: tiny, tiny-nobn, resnet18, resnet50)", spec.name));
  }
  auto model = std::make_unique<Model>(spec.name, std::move(net));
  InitParams(dev, model->params(), seed);
  return model;
}

}  // namespace fragscope::trainer
