// Training data on the host; the loop uploads each batch into allocator memory ("input/images",
// "input/labels").
//
//   synthetic   seeded, learnable: each class has a fixed random prototype image, a sample is
//               0.5 prototype + unit Gaussian noise
//   CIFAR-10    the binary version: records of 1 label byte + 3072 pixel bytes (data_batch_*.bin)
//   MNIST       IDX files: train-images-idx3-ubyte with train-labels-idx1-ubyte beside it
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fragscope::trainer {

// A data file that is missing or not in a format we read. The command line exits 2 on it.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Batch {
  int n = 0;
  std::vector<float> images;    // n x channels x size x size
  std::vector<std::int32_t> labels;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual int channels() const = 0;
  virtual int image_size() const = 0;
  virtual int classes() const = 0;
  virtual std::string Describe() const = 0;
  // The next `n` samples (wrapping around a finite data set) into `batch`, resized to hold them.
  void Next(int n, Batch* batch);
  // The same, written straight into `images` (n x channels x size x size floats) and `labels`
  // (n): the cpu backend fills its allocator memory with no copy of the batch on the side.
  virtual void NextInto(int n, float* images, std::int32_t* labels) = 0;
};

std::unique_ptr<DataSource> MakeSyntheticData(int channels, int image_size, int classes,
                                              std::uint64_t seed);
// Detects CIFAR-10 binary or MNIST IDX from `path` (a file or a folder holding one). Throws
// DataError naming the file and what is wrong with it.
std::unique_ptr<DataSource> OpenDataFiles(const std::string& path);

}  // namespace fragscope::trainer
