// fragscope-alloc-demo: runs a training-like allocation workload through the allocator under a
// chosen configuration and prints the stats and any OomReport. Until the reference trainer exists
// this is the "main job" of the quick start.
//
//   fragscope-alloc-demo --alloc-conf backing=sim,capacity=4GiB,limit=1GiB --steps 20
//
// Exit codes: 0 ok, 1 an OOM was reported, 2 bad usage or input.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace {

using fragscope::FormatBytes;

struct Workload {
  int steps = 20;
  int layers = 24;
  std::uint64_t activation_bytes = 64 * fragscope::MiB;  // per layer at full batch
  std::uint64_t seed = 1;
};

// One device's run. Returns false on the first OOM (the report is in `oom`).
class TrainingLikeRun {
 public:
  // `names` interns tag names when a trace is recorded (nullptr: untagged).
  TrainingLikeRun(fragscope::DeviceAllocator& allocator, const Workload& workload,
                  fragscope::traces::EventSink* names)
      : allocator_(allocator), workload_(workload), rng_(workload.seed + allocator.device()),
        names_(names) {}

  bool Run(std::optional<fragscope::OomReport>* oom) {
    std::uniform_real_distribution<double> log_size(std::log(4096.0), std::log(32.0 * 1024 * 1024));
    // Weights and optimizer state: allocated once, live for the whole run.
    for (int layer = 0; layer < workload_.layers; ++layer) {
      const auto bytes = static_cast<std::uint64_t>(std::exp(log_size(rng_)));
      if (!Take(bytes, &weights_, oom, Tag(layer, "weight")) ||
          !Take(bytes, &weights_, oom, Tag(layer, "optimizer_state"))) {
        return false;
      }
    }
    std::uniform_real_distribution<double> batch_scale(0.5, 1.0);
    std::uniform_int_distribution<std::uint64_t> odd(1, 4 * fragscope::MiB);
    for (int step = 0; step < workload_.steps; ++step) {
      allocator_.Mark(fmt::format("step {} begin", step));
      // Batch sizes vary step to step, so freed activation holes do not quite fit the next step.
      const double scale = batch_scale(rng_);
      std::vector<void*> activations;
      for (int layer = 0; layer < workload_.layers; ++layer) {
        const double depth = 1.0 - 0.6 * layer / workload_.layers;  // deeper layers are smaller
        const auto bytes = static_cast<std::uint64_t>(
            static_cast<double>(workload_.activation_bytes) * scale * depth);
        if (!Take(bytes, &activations, oom, Tag(layer, "activation"))) return false;
      }
      // Backward: a gradient temporary per layer while activations are freed in reverse.
      for (int layer = workload_.layers - 1; layer >= 0; --layer) {
        std::vector<void*> temporaries;
        if (!Take(workload_.activation_bytes / 4, &temporaries, oom, Tag(layer, "gradient"))) return false;
        allocator_.Free(activations[layer]);
        allocator_.Free(temporaries.back());
      }
      // Now and then a small odd-sized tensor stays alive (a cache, a metric): it pins a hole.
      if (step % 3 == 0 && !Take(odd(rng_), &pinned_, oom, Tag(-1, "metrics_cache"))) return false;
    }
    return true;
  }

  ~TrainingLikeRun() {
    for (void* ptr : weights_) allocator_.Free(ptr);
    for (void* ptr : pinned_) allocator_.Free(ptr);
  }

 private:
  fragscope::traces::TagId Tag(int layer, const char* role) {
    if (names_ == nullptr) return fragscope::traces::kNoTag;
    return names_->Intern(layer < 0 ? std::string(role) : fmt::format("layer{}/{}", layer, role));
  }

  bool Take(std::uint64_t bytes, std::vector<void*>* into, std::optional<fragscope::OomReport>* oom,
            fragscope::traces::TagId tag) {
    fragscope::OomReport report;
    void* ptr = allocator_.TryAllocate(bytes, {.stream = 0, .tag = tag}, &report);
    if (ptr == nullptr) {
      *oom = std::move(report);
      return false;
    }
    into->push_back(ptr);
    return true;
  }

  fragscope::DeviceAllocator& allocator_;
  Workload workload_;
  std::mt19937_64 rng_;
  std::vector<void*> weights_;
  std::vector<void*> pinned_;
  fragscope::traces::EventSink* names_;
};

nlohmann::json StatsJson(const fragscope::AllocatorStats& s) {
  return {{"in_use", s.in_use},
          {"reserved", s.reserved},
          {"live_requested", s.live_requested},
          {"peak_in_use", s.peak_in_use},
          {"peak_reserved", s.peak_reserved},
          {"address_space", s.address_space},
          {"peak_address_space", s.peak_address_space},
          {"peak_load", s.peak_live_requested},
          {"overhead", s.peak_live_requested == 0 ? 0.0
                                                  : static_cast<double>(s.peak_reserved) /
                                                        static_cast<double>(s.peak_live_requested)},
          {"regions", s.regions},
          {"largest_free", s.largest_free},
          {"external_fragmentation", s.external_fragmentation()},
          {"utilization", s.utilization()},
          {"total_allocs", s.total_allocs},
          {"ooms", s.total_ooms}};
}

nlohmann::json OomJson(const fragscope::OomReport& r) {
  const auto& n = r.numbers;
  return {{"device", r.device},       {"request", n.request},
          {"rounded", n.rounded},     {"limit", n.limit},
          {"reserved", n.reserved},   {"in_use", n.in_use},
          {"free_in_regions", n.free_in_regions},
          {"largest_free", n.largest_free},
          {"cause", fragscope::traces::ToString(n.cause)},
          {"explanation", r.explanation},
          {"suggestion", r.suggestion}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs a training-like allocation workload through the fragscope allocator and "
               "prints its statistics and any OOM report.",
               "fragscope-alloc-demo"};
  std::string conf_text;
  Workload workload;
  std::string activation_text = "64MiB";
  bool json = false;
  app.add_option("--alloc-conf", conf_text,
                 "allocator configuration (default: $FRAGSCOPE_ALLOC_CONF, else defaults), e.g. "
                 "backing=sim,capacity=4GiB,limit=1GiB");
  app.add_option("--steps", workload.steps, "training steps")->check(CLI::Range(1, 1000000));
  app.add_option("--layers", workload.layers, "layers per step")->check(CLI::Range(1, 10000));
  app.add_option("--activation", activation_text, "activation bytes per layer at full batch");
  app.add_option("--seed", workload.seed, "random seed (0 to 2^64-1)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // CLI11 alone reads "-5" into an unsigned integer as 2^64 - 5.
            const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
              return c >= '0' && c <= '9';
            });
            std::uint64_t value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (!digits || ec != std::errc() || end != text.data() + text.size()) {
              return "'" + text + "' is not a seed: expected a whole number from 0 to 18446744073709551615";
            }
            return "";
          },
          "0 to 2^64-1"));
  std::string trace_path;
  app.add_option("--trace", trace_path, "record every allocator event to this trace file (.fst)");
  app.add_flag("--json", json, "print one JSON document on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (105, 109, ...) are not ours: --help is 0, every usage error 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  fragscope::Log();  // the libraries' own logger (stderr) doubles as the default one
  spdlog::set_default_logger(spdlog::get("fragscope"));
  spdlog::set_level(spdlog::level::err);  // the report below says what matters

  const auto activation = fragscope::ParseSize(activation_text);
  if (!activation || *activation == 0) {
    fmt::print(stderr, "error: --activation: '{}' is not a size (e.g. 64MiB)\n", activation_text);
    return 2;
  }
  workload.activation_bytes = *activation;

  std::unique_ptr<fragscope::MemorySystem> system;
  std::string source;
  try {
    system = fragscope::MemorySystem::Create(fragscope::ResolveAllocConf(conf_text, &source));
  } catch (const fragscope::ConfigError& error) {
    fmt::print(stderr, "error: {}\n", error.what());
    return 2;
  } catch (const fragscope::Error& error) {
    fmt::print(stderr, "error: {}\n", error.what());
    return 2;
  }

  std::unique_ptr<fragscope::traces::TraceWriter> trace;
  if (!trace_path.empty()) {
    try {
      trace = std::make_unique<fragscope::traces::TraceWriter>(
          trace_path, system->MakeTraceHeader("fragscope-alloc-demo 0.1.0"));
    } catch (const fragscope::traces::TraceError& error) {
      fmt::print(stderr, "error: {}\n", error.what());
      return 2;
    }
    system->SetSink(trace.get());
  }

  nlohmann::json devices = nlohmann::json::array();
  bool any_oom = false;
  if (!json) fmt::print("allocator: {} (from {})\n", system->Describe(), source);
  for (std::size_t i = 0; i < system->device_count(); ++i) {
    fragscope::DeviceAllocator& allocator = system->device(i);
    std::optional<fragscope::OomReport> oom;
    fragscope::AllocatorStats stats;
    {
      TrainingLikeRun run(allocator, workload, trace.get());
      any_oom |= !run.Run(&oom);
      stats = allocator.Stats();  // before the run frees its long-lived tensors
    }
    allocator.CheckInvariants();
    nlohmann::json device = {{"device", i}, {"stats", StatsJson(stats)}, {"oom", nullptr}};
    if (oom) device["oom"] = OomJson(*oom);
    devices.push_back(device);
    if (!json) {
      fmt::print("\ndevice {} after {} steps{}:\n{}", i, workload.steps,
                 oom ? " (stopped by an OOM)" : "", stats.Describe());
      fmt::print("  overhead (peak reserved / peak LOAD): {:.3f}\n",
                 stats.peak_live_requested == 0
                     ? 0.0
                     : static_cast<double>(stats.peak_reserved) /
                           static_cast<double>(stats.peak_live_requested));
      if (oom) fmt::print("\n{}", oom->Describe());
    }
  }
  if (trace) {
    system->SetSink(nullptr);
    trace->Close();
    if (!json) fmt::print("\ntrace: {} events written to {}\n", trace->events_written(), trace_path);
  }
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"allocator", system->Describe()},
                                      {"conf", system->conf().ToString()},
                                      {"devices", devices}}
                           .dump(2));
  }
  return any_oom ? 1 : 0;
}
