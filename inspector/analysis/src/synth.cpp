// A synthetic training workload run through real fragscope allocators.
//
// The model: 24 to 48 layers in a conv / bn / relu pattern with a pool now and then and a linear
// layer at the end; weights allocated once, activations large at the front and small at the back
// (log-uniform sizes, multiples of 4 bytes but not of 256). A step, on every device, layer by layer
// so that the devices interleave as in data-parallel training:
//   step N begin   input batch (the batch size varies step to step, 50 % to 100 %)
//   forward        per layer: workspace (conv), activation (kept), workspace freed; once in a
//                  while a small odd-sized long-lived buffer lands in the middle and pins a hole
//   backward       per layer, in reverse: gradient of its input, workspace, weight gradient; then
//                  its activation and the gradient from above are freed
//   optimizer      momentum (first step only, kept), a temporary, the weight gradient freed
//   step N end     pinned buffers whose time is up are freed
// Sizes use integer arithmetic on std::mt19937_64 only, so a seed means the same trace everywhere.
// Timestamps come from a simulated clock and each device has one thread, so the events of two runs
// with the same options are identical.
#include <algorithm>
#include <bit>
#include <deque>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/synth.hpp"

namespace fragscope::analysis {
namespace {

constexpr std::uint64_t kMaxBatch = 64;
constexpr std::uint64_t kTickNs = 1000;  // simulated time between two events
constexpr std::uint64_t kProgressEvents = std::uint64_t{1} << 20;

std::uint64_t LogUniform(std::mt19937_64& rng, std::uint64_t lo, std::uint64_t hi) {
  // The octave [2^e, 2^(e+1)) uniformly among those that meet [lo, hi), then a point in it.
  const auto lo_exp = static_cast<std::uint64_t>(std::bit_width(lo)) - 1;
  const auto hi_exp = static_cast<std::uint64_t>(std::bit_width(hi - 1)) - 1;
  const std::uint64_t exp = lo_exp + rng() % (hi_exp - lo_exp + 1);
  const std::uint64_t base = std::uint64_t{1} << exp;
  const std::uint64_t value = base + rng() % base;
  return std::clamp(value, lo, hi);
}

// Bytes of a float tensor: a multiple of 4, rarely of 256.
std::uint64_t TensorBytes(std::uint64_t bytes) { return std::max<std::uint64_t>(4, bytes & ~std::uint64_t{3}); }

// Rewrites what a synthetic run cannot take from the real world: the device number (several
// memory systems each number their device 0), a simulated clock, one thread per device.
class SynthSink final : public traces::EventSink {
 public:
  SynthSink(traces::EventSink* target, std::uint32_t device, std::uint64_t* clock)
      : target_(target), device_(device), clock_(clock) {}
  void Record(traces::Event& event) override {
    *clock_ += kTickNs;
    event.device = device_;
    event.time_ns = *clock_;
    event.thread = device_ + 1;
    target_->Record(event);
  }
  traces::TagId Intern(std::string_view text) override { return target_->Intern(text); }

 private:
  traces::EventSink* target_;
  std::uint32_t device_;
  std::uint64_t* clock_;
};

enum class Kind { kConv, kBatchNorm, kRelu, kPool, kLinear };

struct Layer {
  std::uint64_t weight = 0;       // bytes; 0: no parameters
  std::uint64_t activation = 0;   // output bytes at the full batch
  std::uint64_t workspace = 0;    // bytes at the full batch; 0: none
  traces::TagId weight_tag = 0, activation_tag = 0, workspace_tag = 0, grad_input_tag = 0,
                weight_grad_tag = 0, momentum_tag = 0, optimizer_tag = 0;
};

struct Pinned {
  std::uint64_t free_at_step = 0;
  void* ptr = nullptr;
};

struct Device {
  DeviceAllocator* allocator = nullptr;
  std::mt19937_64 rng;
  std::uint64_t batch = kMaxBatch;
  bool step_failed = false;       // an OOM in this step: the rest of its step is skipped
  std::vector<void*> weights, momentum, activations, weight_grads;
  void* input = nullptr;
  void* grad = nullptr;           // gradient flowing down through backward
  std::deque<Pinned> pinned;      // by free_at_step, roughly
};

// The memory systems a synthetic run uses and the header that describes them: one system per
// device, or one with virtual devices when the configuration has them.
traces::TraceHeader MakeSystems(const SynthOptions& options,
                                std::vector<std::unique_ptr<MemorySystem>>* systems) {
  if (options.devices == 0) throw ConfigError("devices", "synth needs at least one device");
  const AllocConf conf = ParseAllocConf(options.alloc_conf);
  traces::TraceHeader header;
  if (conf.virtual_devices.empty()) {
    for (std::uint32_t d = 0; d < options.devices; ++d) {
      systems->push_back(MemorySystem::Create(conf));
      traces::TraceHeader one = systems->back()->MakeTraceHeader("");
      one.devices.front().index = d;
      header.alloc_conf = one.alloc_conf;
      header.devices.push_back(one.devices.front());
    }
  } else {
    if (options.devices > conf.virtual_devices.size()) {
      throw ConfigError("virtual_devices",
                        fmt::format("synth runs on {} devices but virtual_devices defines {}",
                                    options.devices, conf.virtual_devices.size()));
    }
    systems->push_back(MemorySystem::Create(conf));
    header = systems->back()->MakeTraceHeader("");
  }
  header.producer = "fragscope synth 0.1.0";
  header.source_format = "fragscope";
  header.created_unix_ns = 0;  // no wall-clock time: the same options give the same trace
  header.metadata = {{"synth.seed", std::to_string(options.seed)},
                     {"synth.events", std::to_string(options.events)},
                     {"synth.devices", std::to_string(options.devices)}};
  return header;
}

class Workload {
 public:
  Workload(const SynthOptions& options, traces::EventSink& sink)
      : options_(options), sink_(sink), model_rng_(options.seed) {}

  traces::TraceHeader Run() {
    const traces::TraceHeader header = MakeSystems(options_, &systems_);
    const AllocConf conf = systems_.front()->conf();
    BuildModel();
    devices_.resize(options_.devices);
    for (std::uint32_t d = 0; d < options_.devices; ++d) {
      Device& device = devices_[d];
      device.allocator = conf.virtual_devices.empty() ? &systems_[d]->device(0)
                                                      : &systems_[0]->device(d);
      device.rng.seed(options_.seed * 0x9E3779B97F4A7C15ull + d + 1);
      sinks_.push_back(std::make_unique<SynthSink>(&sink_, d, &clock_));
      device.allocator->SetSink(sinks_.back().get());
      device.weights.assign(layers_.size(), nullptr);
      device.momentum.assign(layers_.size(), nullptr);
      device.activations.assign(layers_.size(), nullptr);
      device.weight_grads.assign(layers_.size(), nullptr);
    }

    for (Device& device : devices_) {
      Mark(device, "init");
      for (std::size_t l = 0; l < layers_.size(); ++l) {
        if (layers_[l].weight == 0) continue;
        device.weights[l] = Alloc(device, layers_[l].weight, layers_[l].weight_tag);
        device.step_failed = false;  // a weight that does not fit is left out, not the rest
      }
    }
    for (std::uint64_t step = 0; !Done(); ++step) {
      Step(step);
      if (options_.progress && produced_ - reported_ >= kProgressEvents) {
        reported_ = produced_;
        options_.progress(produced_, options_.events);
      }
    }
    if (options_.progress) options_.progress(produced_, options_.events);

    for (Device& device : devices_) device.allocator->SetSink(nullptr);
    return header;
  }

  ~Workload() {
    // The trace ends with what was live; give it all back quietly (no sink attached any more).
    for (auto& system : systems_) {
      for (std::size_t i = 0; i < system->device_count(); ++i) {
        DeviceAllocator& allocator = system->device(i);
        allocator.SetSink(nullptr);
        for (const RegionView& region : allocator.Snapshot().regions) {
          for (const ChunkView& chunk : region.chunks) {
            if (chunk.in_use) allocator.Free(reinterpret_cast<void*>(chunk.address));
          }
        }
      }
    }
  }

 private:
  bool Done() const { return produced_ >= options_.events; }

  void Mark(Device& device, std::string_view name) {
    if (!Done()) device.allocator->Mark(name);
  }

  void* Alloc(Device& device, std::uint64_t bytes, traces::TagId tag) {
    if (Done() || device.step_failed) return nullptr;
    ++produced_;
    AllocOptions alloc_options;
    alloc_options.tag = tag;
    void* ptr = device.allocator->TryAllocate(bytes, alloc_options, nullptr);
    if (ptr == nullptr) device.step_failed = true;  // the oom event is in the trace
    return ptr;
  }

  void Free(Device& device, void*& ptr) {
    if (ptr == nullptr || Done()) return;
    ++produced_;
    device.allocator->Free(ptr);
    ptr = nullptr;
  }

  void BuildModel() {
    std::mt19937_64& rng = model_rng_;
    const std::size_t count = 24 + rng() % 25;
    layers_.resize(count);
    for (std::size_t l = 0; l < count; ++l) {
      Layer& layer = layers_[l];
      const Kind kind = l + 1 == count ? Kind::kLinear
                        : l % 7 == 6   ? Kind::kPool
                                       : static_cast<Kind>(l % 3);  // conv, bn, relu
      // Activations shrink with depth, as the spatial size does in a CNN.
      const std::size_t third = l * 3 / count;
      const std::uint64_t act_lo = third == 0 ? 48 * MiB : third == 1 ? 12 * MiB : 3 * MiB;
      layer.activation = TensorBytes(LogUniform(rng, act_lo, act_lo * 8));
      const char* suffix = "";
      switch (kind) {
        case Kind::kConv:
          suffix = "conv";
          layer.weight = TensorBytes(LogUniform(rng, 256 * KiB, 64 * MiB));
          layer.workspace = TensorBytes(LogUniform(rng, 1 * MiB, 64 * MiB));
          break;
        case Kind::kBatchNorm:
          suffix = "bn";
          layer.weight = TensorBytes(LogUniform(rng, 2 * KiB, 64 * KiB));
          layer.workspace = TensorBytes(LogUniform(rng, 4 * KiB, 256 * KiB));
          break;
        case Kind::kRelu:
          suffix = "relu";
          break;
        case Kind::kPool:
          suffix = "pool";
          layer.activation = TensorBytes(layer.activation / 4);
          break;
        case Kind::kLinear:
          suffix = "linear";
          layer.weight = TensorBytes(LogUniform(rng, 1 * MiB, 64 * MiB));
          layer.activation = TensorBytes(LogUniform(rng, 64 * KiB, 1 * MiB));
          break;
      }
      const std::string name = fmt::format("layer{}.{}", l, suffix);
      const auto tag = [&](const char* what) { return sink_.Intern(fmt::format("{}/{}", name, what)); };
      layer.activation_tag = tag("activation");
      layer.grad_input_tag = tag("grad_input");
      if (layer.weight > 0) {
        layer.weight_tag = tag("weight");
        layer.weight_grad_tag = tag("weight_grad");
        layer.momentum_tag = tag("momentum");
        layer.optimizer_tag = tag("optimizer_tmp");
      }
      if (layer.workspace > 0) layer.workspace_tag = tag("workspace");
    }
    input_bytes_ = TensorBytes(LogUniform(rng, 16 * MiB, 96 * MiB));
    input_tag_ = sink_.Intern("data/input");
    loss_tag_ = sink_.Intern("loss/grad");
    pinned_tag_ = sink_.Intern("pinned/metrics");
  }

  static std::uint64_t Scaled(const Device& device, std::uint64_t bytes) {
    return TensorBytes(bytes * device.batch / kMaxBatch);
  }

  void Step(std::uint64_t step) {
    const std::string begin = fmt::format("step {} begin", step);
    for (Device& device : devices_) {
      device.step_failed = false;
      Mark(device, begin);
      device.batch = kMaxBatch / 2 + device.rng() % (kMaxBatch / 2 + 1);
      device.input = Alloc(device, Scaled(device, input_bytes_), input_tag_);
      Mark(device, "forward");
    }
    // Where this step's pinned buffer lands (if any): in the middle of the forward pass.
    std::vector<std::size_t> pin_layer(devices_.size(), layers_.size());
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      if (devices_[d].rng() % 5 == 0) pin_layer[d] = devices_[d].rng() % layers_.size();
    }
    for (std::size_t l = 0; l < layers_.size() && !Done(); ++l) {
      const Layer& layer = layers_[l];
      for (std::size_t d = 0; d < devices_.size(); ++d) {
        Device& device = devices_[d];
        void* workspace = layer.workspace > 0 ? Alloc(device, Scaled(device, layer.workspace), layer.workspace_tag) : nullptr;
        device.activations[l] = Alloc(device, Scaled(device, layer.activation), layer.activation_tag);
        Free(device, workspace);
        if (pin_layer[d] == l) {
          void* ptr = Alloc(device, LogUniform(device.rng, 300, 200 * KiB) | 1, pinned_tag_);
          if (ptr != nullptr) device.pinned.push_back(Pinned{step + 20 + device.rng() % 380, ptr});
        }
      }
    }
    for (Device& device : devices_) {
      Mark(device, "backward");
      device.grad = Alloc(device, Scaled(device, layers_.back().activation), loss_tag_);
    }
    for (std::size_t l = layers_.size(); l-- > 0 && !Done();) {
      const Layer& layer = layers_[l];
      for (Device& device : devices_) {
        const std::uint64_t input = l > 0 ? layers_[l - 1].activation : input_bytes_;
        void* grad_input = Alloc(device, Scaled(device, input), layer.grad_input_tag);
        void* workspace = layer.workspace > 0 ? Alloc(device, Scaled(device, layer.workspace), layer.workspace_tag) : nullptr;
        if (device.weights[l] != nullptr) {
          device.weight_grads[l] = Alloc(device, layer.weight, layer.weight_grad_tag);
        }
        Free(device, workspace);
        Free(device, device.activations[l]);
        Free(device, device.grad);
        device.grad = grad_input;
      }
    }
    for (Device& device : devices_) {
      Free(device, device.grad);
      Free(device, device.input);
      Mark(device, "optimizer");
    }
    for (std::size_t l = 0; l < layers_.size() && !Done(); ++l) {
      const Layer& layer = layers_[l];
      if (layer.weight == 0) continue;
      for (Device& device : devices_) {
        if (device.weight_grads[l] == nullptr) continue;
        if (device.momentum[l] == nullptr) device.momentum[l] = Alloc(device, layer.weight, layer.momentum_tag);
        void* tmp = Alloc(device, layer.weight, layer.optimizer_tag);
        Free(device, tmp);
        Free(device, device.weight_grads[l]);
      }
    }
    const std::string end = fmt::format("step {} end", step);
    for (Device& device : devices_) {
      // After an OOM the step was cut short: free what it still holds, as a framework that
      // catches the OOM and skips the batch does.
      for (void*& ptr : device.activations) Free(device, ptr);
      for (void*& ptr : device.weight_grads) Free(device, ptr);
      Free(device, device.grad);
      Free(device, device.input);
      while (!device.pinned.empty() && !Done()) {
        auto it = std::find_if(device.pinned.begin(), device.pinned.end(),
                               [&](const Pinned& p) { return p.free_at_step <= step; });
        if (it == device.pinned.end()) break;
        Free(device, it->ptr);
        device.pinned.erase(it);
      }
      Mark(device, end);
    }
  }

  const SynthOptions& options_;
  traces::EventSink& sink_;
  std::mt19937_64 model_rng_;
  std::vector<std::unique_ptr<SynthSink>> sinks_;  // outlive the allocators that point to them
  std::vector<std::unique_ptr<MemorySystem>> systems_;
  std::vector<Device> devices_;
  std::vector<Layer> layers_;
  std::uint64_t input_bytes_ = 0;
  traces::TagId input_tag_ = 0, loss_tag_ = 0, pinned_tag_ = 0;
  std::uint64_t produced_ = 0;
  std::uint64_t reported_ = 0;
  std::uint64_t clock_ = 0;
};

}  // namespace

traces::TraceHeader Synthesize(const SynthOptions& options, traces::EventSink& sink) {
  return Workload(options, sink).Run();
}

traces::TraceHeader SynthHeader(const SynthOptions& options) {
  std::vector<std::unique_ptr<MemorySystem>> systems;
  return MakeSystems(options, &systems);
}

}  // namespace fragscope::analysis
