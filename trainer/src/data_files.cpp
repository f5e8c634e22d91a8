// CIFAR-10 binary and MNIST IDX readers. Pixels are scaled to [0, 1] and standardised with the
// data set's own mean and standard deviation.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "fragscope/trainer/data.hpp"

namespace fragscope::trainer {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> ReadAll(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw DataError(fmt::format("{}: no such file", path.string()));
  if (!fs::is_regular_file(path, ec)) throw DataError(fmt::format("{}: not a regular file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("{}: cannot open", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint32_t BigEndian32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) |
         (std::uint32_t{b[at + 2]} << 8) | std::uint32_t{b[at + 3]};
}

class InMemoryData final : public DataSource {
 public:
  InMemoryData(std::string what, int channels, int size, std::vector<std::uint8_t> pixels,
               std::vector<std::int32_t> labels)
      : what_(std::move(what)), channels_(channels), size_(size), pixels_(std::move(pixels)),
        labels_(std::move(labels)) {
    double sum = 0.0, sq = 0.0;
    for (std::uint8_t p : pixels_) {
      sum += p / 255.0;
      sq += (p / 255.0) * (p / 255.0);
    }
    const double count = static_cast<double>(pixels_.size());
    mean_ = sum / count;
    std_ = std::sqrt(std::max(1e-12, sq / count - mean_ * mean_));
  }
  int channels() const override { return channels_; }
  int image_size() const override { return size_; }
  int classes() const override { return 10; }
  std::string Describe() const override {
    return fmt::format("{}: {} images of {}x{}x{}", what_, labels_.size(), channels_, size_, size_);
  }
  void NextInto(int n, float* images, std::int32_t* labels) override {
    const std::size_t sample = static_cast<std::size_t>(channels_) * static_cast<std::size_t>(size_ * size_);
    for (int i = 0; i < n; ++i) {
      const std::size_t index = next_;
      next_ = (next_ + 1) % labels_.size();
      labels[static_cast<std::size_t>(i)] = labels_[index];
      for (std::size_t j = 0; j < sample; ++j) {
        images[static_cast<std::size_t>(i) * sample + j] =
            static_cast<float>((pixels_[index * sample + j] / 255.0 - mean_) / std_);
      }
    }
  }

 private:
  std::string what_;
  int channels_, size_;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
  double mean_ = 0.0, std_ = 1.0;
  std::size_t next_ = 0;
};

constexpr std::size_t kCifarRecord = 1 + 3 * 32 * 32;

std::unique_ptr<DataSource> ReadCifar(const fs::path& path) {
  const auto bytes = ReadAll(path);
  if (bytes.empty() || bytes.size() % kCifarRecord != 0) {
    throw DataError(fmt::format("{}: {} bytes is not a whole number of CIFAR-10 records ({} bytes each)",
                                path.string(), bytes.size(), kCifarRecord));
  }
  const std::size_t count = bytes.size() / kCifarRecord;
  std::vector<std::uint8_t> pixels(count * (kCifarRecord - 1));
  std::vector<std::int32_t> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t label = bytes[i * kCifarRecord];
    if (label > 9) {
      throw DataError(fmt::format("{}: record {} has label {} (CIFAR-10 labels are 0-9)",
                                  path.string(), i, label));
    }
    labels[i] = label;
    std::copy_n(bytes.begin() + static_cast<long>(i * kCifarRecord + 1), kCifarRecord - 1,
                pixels.begin() + static_cast<long>(i * (kCifarRecord - 1)));
  }
  return std::make_unique<InMemoryData>("CIFAR-10 " + path.filename().string(), 3, 32,
                                        std::move(pixels), std::move(labels));
}

std::unique_ptr<DataSource> ReadMnist(const fs::path& images_path) {
  const auto images = ReadAll(images_path);
  if (images.size() < 16 || BigEndian32(images, 0) != 0x803) {
    throw DataError(fmt::format("{}: not an MNIST IDX image file (magic 0x00000803)", images_path.string()));
  }
  const std::uint32_t count = BigEndian32(images, 4), rows = BigEndian32(images, 8),
                      cols = BigEndian32(images, 12);
  if (rows != cols || rows == 0 || rows > 4096 ||
      images.size() != 16 + std::uint64_t{count} * rows * cols || count == 0) {
    throw DataError(fmt::format("{}: header says {} images of {}x{} but the file has {} bytes",
                                images_path.string(), count, rows, cols, images.size()));
  }
  std::string name = images_path.filename().string();
  const auto at = name.find("images-idx3");
  if (at == std::string::npos) {
    throw DataError(fmt::format("{}: cannot name its labels file (expected 'images-idx3' in the name)",
                                images_path.string()));
  }
  name.replace(at, 11, "labels-idx1");
  const fs::path labels_path = images_path.parent_path() / name;
  const auto label_bytes = ReadAll(labels_path);
  if (label_bytes.size() != 8 + std::uint64_t{count} || BigEndian32(label_bytes, 0) != 0x801 ||
      BigEndian32(label_bytes, 4) != count) {
    throw DataError(fmt::format("{}: not an MNIST IDX label file for {} images", labels_path.string(), count));
  }
  std::vector<std::int32_t> labels(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    if (label_bytes[8 + i] > 9) {
      throw DataError(fmt::format("{}: label {} of image {} is not 0-9", labels_path.string(), label_bytes[8 + i], i));
    }
    labels[i] = label_bytes[8 + i];
  }
  // 28x28 is padded to 32x32 so that every model takes it.
  const int side = static_cast<int>(rows) <= 32 ? 32 : static_cast<int>(rows);
  const int off = (side - static_cast<int>(rows)) / 2;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(count) * static_cast<std::size_t>(side * side), 0);
  for (std::uint32_t i = 0; i < count; ++i) {
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t c = 0; c < cols; ++c) {
        pixels[(static_cast<std::size_t>(i) * static_cast<std::size_t>(side) + r + static_cast<std::size_t>(off)) *
                   static_cast<std::size_t>(side) + c + static_cast<std::size_t>(off)] =
            images[16 + (static_cast<std::size_t>(i) * rows + r) * cols + c];
      }
    }
  }
  return std::make_unique<InMemoryData>("MNIST " + images_path.filename().string(), 1, side,
                                        std::move(pixels), std::move(labels));
}

}  // namespace

std::unique_ptr<DataSource> OpenDataFiles(const std::string& text) {
  fs::path path(text);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw DataError(fmt::format("{}: no such file or folder", text));
  if (fs::is_directory(path, ec)) {
    for (const char* name : {"data_batch_1.bin", "train-images-idx3-ubyte", "train-images.idx3-ubyte"}) {
      if (fs::exists(path / name, ec)) return OpenDataFiles((path / name).string());
    }
    throw DataError(fmt::format("{}: holds neither CIFAR-10 (data_batch_1.bin) nor MNIST "
                                "(train-images-idx3-ubyte)", text));
  }
  const auto head = ReadAll(path);
  if (head.size() >= 4 && BigEndian32(head, 0) == 0x803) return ReadMnist(path);
  if (head.size() >= 4 && BigEndian32(head, 0) == 0x801) {
    throw DataError(fmt::format("{}: an MNIST label file; give the images file (train-images-idx3-ubyte)", text));
  }
  return ReadCifar(path);
}

}  // namespace fragscope::trainer
