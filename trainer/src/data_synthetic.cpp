#include <fmt/format.h>

#include "fragscope/trainer/data.hpp"

namespace fragscope::trainer {
namespace {

class SyntheticData final : public DataSource {
 public:
  SyntheticData(int channels, int image_size, int classes, std::uint64_t seed)
      : channels_(channels), size_(image_size), classes_(classes), rng_(seed) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    prototypes_.resize(static_cast<std::size_t>(classes) * SampleSize());
    for (float& v : prototypes_) v = normal(rng_);
  }
  int channels() const override { return channels_; }
  int image_size() const override { return size_; }
  int classes() const override { return classes_; }
  std::string Describe() const override {
    return fmt::format("synthetic {} classes of {}x{}x{}", classes_, channels_, size_, size_);
  }
  void NextInto(int n, float* images, std::int32_t* labels) override {
    const std::size_t sample = SampleSize();
    std::uniform_int_distribution<int> pick(0, classes_ - 1);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (int i = 0; i < n; ++i) {
      const int label = pick(rng_);
      labels[static_cast<std::size_t>(i)] = label;
      const float* proto = prototypes_.data() + static_cast<std::size_t>(label) * sample;
      float* out = images + static_cast<std::size_t>(i) * sample;
      for (std::size_t j = 0; j < sample; ++j) out[j] = 0.5f * proto[j] + noise(rng_);
    }
  }

 private:
  std::size_t SampleSize() const {
    return static_cast<std::size_t>(channels_) * static_cast<std::size_t>(size_ * size_);
  }
  int channels_, size_, classes_;
  std::mt19937_64 rng_;
  std::vector<float> prototypes_;
};

}  // namespace

void DataSource::Next(int n, Batch* batch) {
  const std::size_t sample = static_cast<std::size_t>(channels()) * static_cast<std::size_t>(image_size()) *
                             static_cast<std::size_t>(image_size());
  batch->n = n;
  batch->images.resize(static_cast<std::size_t>(n) * sample);
  batch->labels.resize(static_cast<std::size_t>(n));
  NextInto(n, batch->images.data(), batch->labels.data());
}

std::unique_ptr<DataSource> MakeSyntheticData(int channels, int image_size, int classes,
                                              std::uint64_t seed) {
  return std::make_unique<SyntheticData>(channels, image_size, classes, seed);
}

}  // namespace fragscope::trainer
