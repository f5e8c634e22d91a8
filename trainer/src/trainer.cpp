#include "fragscope/trainer/trainer.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <new>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/trainer/data.hpp"
#include "fragscope/traces/atomic_file.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace fragscope::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Live bytes per tag on every device: what the leak hunt compares between steps.
std::map<std::string, std::uint64_t> LiveByTag(MemorySystem& system, const TagNames& names) {
  std::map<std::string, std::uint64_t> live;
  for (std::size_t d = 0; d < system.device_count(); ++d) {
    for (const RegionView& region : system.device(d).Snapshot().regions) {
      for (const ChunkView& chunk : region.chunks) {
        if (chunk.in_use) live[names.Name(chunk.tag)] += chunk.requested;
      }
    }
  }
  return live;
}

struct LeakWatch {
  std::vector<std::uint64_t> live_between_steps;  // LOAD summed over devices at each step end
  std::map<std::string, std::uint64_t> first, last;
  int first_step = -1;

  // A leak: memory live between steps grew at each of the last three step ends (at least).
  void Diagnose(OomContext* ctx) const {
    const std::size_t n = live_between_steps.size();
    if (n < 3) return;
    for (std::size_t i = 1; i < n; ++i) {
      if (live_between_steps[i] <= live_between_steps[i - 1]) return;
    }
    std::string worst;
    std::uint64_t worst_growth = 0;
    for (const auto& [tag, bytes] : last) {
      const auto it = first.find(tag);
      const std::uint64_t before = it == first.end() ? 0 : it->second;
      if (bytes > before && bytes - before > worst_growth) {
        worst_growth = bytes - before;
        worst = tag;
      }
    }
    const std::uint64_t growth = live_between_steps[n - 1] - live_between_steps[0];
    ctx->diagnosis = "leak";
    ctx->diagnosis_text = fmt::format(
        "leak: memory live between steps grew at every step ({} over {} steps, about {} per "
        "step); most of the growth is '{}' (+{} since step {}): something keeps a tensor from "
        "every step alive",
        FormatBytes(growth), n - 1, FormatBytes(growth / (n - 1)), worst.empty() ? "?" : worst,
        FormatBytes(worst_growth), first_step);
  }
};

// std::bad_alloc that says what the host could not give: a batch's host copy for the GPU.
class HostAllocFailure : public std::bad_alloc {
 public:
  explicit HostAllocFailure(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Whether the configuration text has a `backing` key (not merely the word somewhere).
bool NamesBacking(std::string_view text) {
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (TrimSpace(item.substr(0, item.find('='))) == "backing") return true;
    if (comma == std::string_view::npos) return false;
    text.remove_prefix(comma + 1);
  }
}

std::string Owner(const std::string& param_name) { return param_name.substr(0, param_name.rfind('/')); }
std::string Role(const std::string& param_name) { return param_name.substr(param_name.rfind('/') + 1); }

}  // namespace

std::string WithDefaultBacking(BackendKind backend, const std::string& text) {
  if (NamesBacking(text)) return text;
  const char* backing = backend == BackendKind::kCpu ? "host" : backend == BackendKind::kSim ? "sim" : "cuda";
  // Blank text is all defaults: the backing alone (not "backing=host,   ", an empty item).
  return TrimSpace(text).empty() ? fmt::format("backing={}", backing) : fmt::format("backing={},{}", backing, text);
}

void CheckBacking(BackendKind backend, const AllocConf& conf) {
  if (backend == BackendKind::kCpu && conf.backing != BackingKind::kHost) {
    throw std::invalid_argument(fmt::format(
        "the cpu backend computes on host memory: it needs backing=host, not backing={}",
        ToString(conf.backing)));
  }
  if (backend == BackendKind::kCuda && !TraitsOf(conf.backing).needs_gpu) {
    throw std::invalid_argument(fmt::format(
        "the cuda backend computes on GPU memory: it needs backing=cuda, vmm or async, not backing={}",
        ToString(conf.backing)));
  }
}

TrainResult Train(const TrainOptions& options, const std::function<void(const StepRecord&)>& on_step) {
  if (options.batch < 1 || options.steps < 0) throw std::invalid_argument("batch must be at least 1, steps at least 0");
  for (int b : options.batch_schedule) {
    if (b < 1) throw std::invalid_argument("every batch of the schedule must be at least 1");
  }
  // Before the data is read: a trace written over the data file would destroy it.
  if (!options.trace_path.empty()) traces::RefuseOutputOverInput(options.trace_path, {options.data_path});
  if (!std::isfinite(options.lr) || options.lr <= 0.0) {
    throw std::invalid_argument(fmt::format("the learning rate must be a finite number greater than 0, not {}", options.lr));
  }
  if (!(options.momentum >= 0.0 && options.momentum < 1.0)) {
    throw std::invalid_argument(fmt::format("the momentum must be in [0, 1), not {}", options.momentum));
  }
  if (!std::isfinite(options.weight_decay) || options.weight_decay < 0.0) {
    throw std::invalid_argument(
        fmt::format("the weight decay must be a finite number of at least 0, not {}", options.weight_decay));
  }
  CheckBacking(options.backend, options.alloc_conf);
  std::unique_ptr<DataSource> data;
  ModelSpec spec = options.model;
  if (!options.data_path.empty()) {
    data = OpenDataFiles(options.data_path);
    spec.channels = data->channels();
    spec.image_size = data->image_size();
    spec.classes = data->classes();
  }
  auto backend = MakeBackend(options.backend);
  if (!data && backend->computes()) {
    try {
      data = MakeSyntheticData(spec.channels, spec.image_size, spec.classes, options.seed);
    } catch (const std::bad_alloc&) {
      const double bytes = 4.0 * spec.classes * spec.channels * spec.image_size * spec.image_size;
      throw HostAllocFailure(fmt::format(
          "--classes {} with --image-size {} needs {} of host memory for the synthetic data's class "
          "prototypes ({} images of {}x{}x{} floats)",
          spec.classes, spec.image_size, FormatBytes(static_cast<std::uint64_t>(bytes)), spec.classes,
          spec.channels, spec.image_size, spec.image_size));
    }
  }
  auto system = MemorySystem::Create(options.alloc_conf);
  const auto devices = static_cast<int>(system->device_count());

  TrainResult result;
  result.allocator = system->Describe();
  result.data = data ? data->Describe()
                     : fmt::format("none on sim ({}x{}x{} inputs, {} classes)", spec.channels,
                                   spec.image_size, spec.image_size, spec.classes);
  std::unique_ptr<traces::TraceWriter> writer;
  if (!options.trace_path.empty()) {
    traces::TraceHeader header = system->MakeTraceHeader("fragscope-train 0.1.0");
    header.metadata = {{"backend", std::string(ToString(options.backend))},
                       {"model", spec.name},
                       {"image_size", std::to_string(spec.image_size)},
                       {"batch", std::to_string(options.batch)},
                       {"steps", std::to_string(options.steps)},
                       {"seed", std::to_string(options.seed)}};
    traces::TraceWriterOptions writer_options;
    writer_options.inputs = {options.data_path};  // never write the trace over the data
    writer = std::make_unique<traces::TraceWriter>(options.trace_path, header, writer_options);
    system->SetSink(writer.get());
  }
  TagNames names(writer.get());
  std::vector<Device> devs;
  for (int d = 0; d < devices; ++d) devs.emplace_back(system->device(static_cast<std::size_t>(d)), *backend, names);

  LeakWatch leaks;
  OomContext ctx;
  {
    std::vector<std::unique_ptr<Model>> models;
    std::vector<Tensor> kept;  // keep_inputs: the leak scenario's mistake
    try {
      ctx.phase = "setup";
      for (auto& dev : devs) {
        dev.Mark("setup");
        models.push_back(BuildModel(dev, spec, options.seed));
      }
      result.param_count = models.front()->param_count();
      Batch host;
      for (int step = 0; step < options.steps; ++step) {
        ctx.step = step;
        const auto start = Clock::now();
        const int n = options.batch_schedule.empty()
                          ? options.batch
                          : options.batch_schedule[static_cast<std::size_t>(step) % options.batch_schedule.size()];
        if (n < devices) throw std::invalid_argument("the batch must have at least one sample per device");
        for (auto& dev : devs) dev.Mark(fmt::format("step {} begin", step));
        double loss_sum = 0.0, correct = 0.0;
        for (int d = 0; d < devices; ++d) {
          Device& dev = devs[static_cast<std::size_t>(d)];
          const int share = n / devices + (d < n % devices ? 1 : 0);
          ctx.phase = "forward";
          dev.Mark("forward");
          const Shape shape{share, spec.channels, spec.image_size, spec.image_size};
          // The allocator first: a batch too big for the device is its OOM, with its report.
          Tensor images = dev.Alloc(shape, "input", "images");
          Tensor labels = dev.AllocBytes(static_cast<std::uint64_t>(share) * sizeof(std::int32_t), "input", "labels");
          if (backend->computes() && options.backend == BackendKind::kCpu) {
            // Host memory from the allocator: the samples go straight in, no copy on the side.
            data->NextInto(share, images.f(), labels.i32());
          } else if (backend->computes()) {
            // Each device's share of the batch in turn (the same samples as the whole batch at
            // once), staged on the host for the upload.
            try {
              data->Next(share, &host);
            } catch (const std::bad_alloc&) {
              throw HostAllocFailure(fmt::format(
                  "--batch {} needs {} of host memory to stage device {}'s {} images of {}x{}x{} floats "
                  "for the upload",
                  n, FormatBytes(images.bytes() + labels.bytes()), d, share, spec.channels, spec.image_size,
                  spec.image_size));
            }
            backend->Upload(images, host.images.data(), images.bytes());
            backend->Upload(labels, host.labels.data(), labels.bytes());
          }
          Model& model = *models[static_cast<std::size_t>(d)];
          Tensor logits = model.Forward(dev, images);
          LossOutput loss = SoftmaxCrossEntropyLoss(dev, logits, labels);
          logits.Reset();
          ctx.phase = "backward";
          dev.Mark("backward");
          model.Backward(dev, loss.dlogits);
          loss.dlogits.Reset();
          float values[2] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()};
          backend->Download(loss.result, values, sizeof(values));
          loss_sum += static_cast<double>(values[0]) * share;
          correct += values[1];
          if (options.keep_inputs) kept.push_back(images);
        }
        ctx.phase = "optimizer";
        if (devices > 1) {
          const std::size_t count = models.front()->params().size();
          for (std::size_t i = 0; i < count; ++i) {
            std::vector<Tensor> replicas;
            for (auto& model : models) replicas.push_back(model->params()[i]->grad);
            backend->AverageAcrossDevices(replicas);
          }
        }
        for (int d = 0; d < devices; ++d) {
          Device& dev = devs[static_cast<std::size_t>(d)];
          dev.Mark("optimizer");
          for (Param* p : models[static_cast<std::size_t>(d)]->params()) {
            if (!p->momentum.defined()) {
              p->momentum = dev.Alloc(p->value.shape(), Owner(p->name), Role(p->name) + "_momentum");
              backend->Fill(p->momentum, 0.0f);
            }
            backend->SgdStep(p->value, p->grad, p->momentum, options.lr, options.momentum, options.weight_decay);
            p->grad.Reset();  // gradients are dead after the step (zero_grad(set_to_none=True))
          }
          dev.Mark(fmt::format("step {} end", step));
        }
        StepRecord record;
        record.step = step;
        record.batch = n;
        record.loss = loss_sum / n;
        record.accuracy = correct / n;
        record.step_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        record.images_per_s = record.step_ms > 0 ? n * 1000.0 / record.step_ms : 0.0;
        std::uint64_t live = 0;
        for (std::size_t d = 0; d < system->device_count(); ++d) {
          const AllocatorStats stats = system->device(d).Stats();
          record.in_use += stats.in_use;
          record.reserved += stats.reserved;
          record.external_fragmentation = std::max(record.external_fragmentation, stats.external_fragmentation());
          live += stats.live_requested;
        }
        leaks.live_between_steps.push_back(live);
        if (step >= 1) {
          leaks.last = LiveByTag(*system, names);
          if (leaks.first_step < 0) {
            leaks.first = leaks.last;
            leaks.first_step = step;
          }
        } else {
          leaks.live_between_steps.clear();  // step 0 allocates the momentum buffers
        }
        result.steps.push_back(record);
        if (on_step) on_step(record);
      }
    } catch (const OutOfMemory& oom) {
      result.oom = oom.report();
      ctx.tag = names.Name(oom.report().tag);
      leaks.Diagnose(&ctx);
    }
    for (std::size_t d = 0; d < system->device_count(); ++d) {
      const AllocatorStats stats = system->device(d).Stats();
      result.peak_reserved += stats.peak_reserved;
      result.peak_in_use += stats.peak_in_use;
      result.peak_load += stats.peak_live_requested;
    }
    result.oom_context = ctx;
    if (result.oom) {
      // On the device that ran out only: the inspector draws a device's markers on its own
      // timeline, and device 0 of a data-parallel run did not fail when device 1 did.
      for (auto& dev : devs) {
        if (dev.allocator().device() == result.oom->device) dev.Mark(fmt::format("oom at step {} ({})", ctx.step, ctx.phase));
      }
    }
  }  // every tensor is freed here, so the trace ends with nothing live
  // An OOM must leave the allocators intact (a broken invariant is a fragscope bug: it throws).
  for (std::size_t d = 0; d < system->device_count(); ++d) system->device(d).CheckInvariants();
  if (writer) {
    system->SetSink(nullptr);
    writer->Close();
    result.trace_events = writer->events_written();
  }
  return result;
}

}  // namespace fragscope::trainer
