// fragscope-train: the reference training loop on the fragscope allocator.
//
//   fragscope-train --backend cpu --model tiny --batch 32 --steps 20 --trace run.fst
//   fragscope-train --backend sim --model resnet50 --image-size 224 --batch 256 --alloc-conf capacity=16GiB
//   fragscope-train --scenario fragmentation --backend sim
//
// Exit codes: 0 trained, 1 stopped by an OOM (the report says why), 2 bad usage or input.
#include <cmath>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/trainer/data.hpp"
#include "fragscope/trainer/scenarios.hpp"
#include "fragscope/trainer/trainer.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace {

using namespace fragscope;
using namespace fragscope::trainer;

nlohmann::json NumberOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json OomJson(const OomReport& r, const OomContext& ctx) {
  nlohmann::json json = nlohmann::json::parse(ToJson(r));  // the one shape of an OomReport
  json["step"] = ctx.step;
  json["phase"] = ctx.phase;
  json["tag"] = ctx.tag;
  json["diagnosis"] = ctx.diagnosis.empty() ? nlohmann::json(nullptr) : nlohmann::json(ctx.diagnosis);
  json["diagnosis_text"] = ctx.diagnosis_text;
  return json;
}

std::string ScenarioList() {
  std::string text;
  for (const Scenario& s : trainer::Scenarios()) text += fmt::format("\n  {:<14} {}", s.name, s.summary);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Trains an image classifier with every buffer on the fragscope allocator, "
               "recording the allocations to a trace. Exit codes: 0 trained, 1 stopped by an "
               "out-of-memory (the report says why), 2 bad usage or input.\n\nScenarios:" + ScenarioList(),
               "fragscope-train"};
  std::string backend_text = "cpu", conf_text, scenario_name;
  TrainOptions options;
  bool json = false;
  int image_size = 0, classes = 0;
  app.add_option("--backend", backend_text, "cpu, cuda or sim")->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  app.add_option("--model", options.model.name, "tiny, tiny-nobn, resnet18, resnet50")
      ->check(CLI::IsMember({"tiny", "tiny-nobn", "resnet18", "resnet50"}));
  app.add_option("--batch", options.batch, "global batch size (split over the devices)")->check(CLI::Range(1, 1 << 20));
  std::vector<int> schedule;
  app.add_option("--batch-schedule", schedule, "batch of each step, cycled (e.g. 8,16,200): batch sizes that vary")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--steps", options.steps, "training steps")->check(CLI::Range(0, 1 << 24));
  app.add_option("--image-size", image_size, "square input side (default 32; 224 for ImageNet shapes)")
      ->check(CLI::Range(8, 4096));
  app.add_option("--classes", classes, "classes (default 10, 1000 for inputs above 64)")->check(CLI::Range(2, 1 << 20));
  app.add_option("--lr", options.lr, "SGD learning rate");
  app.add_option("--momentum", options.momentum, "SGD momentum");
  app.add_option("--weight-decay", options.weight_decay, "SGD weight decay");
  app.add_option("--seed", options.seed, "seed of the weights and the synthetic data");
  app.add_option("--alloc-conf", conf_text,
                 "allocator configuration (default: $FRAGSCOPE_ALLOC_CONF, else defaults); the "
                 "backend's backing is added when none is named (host for cpu, sim for sim)");
  app.add_option("--trace", options.trace_path, "record every allocator event to this trace file (.fst)");
  app.add_option("--data", options.data_path, "CIFAR-10 binary or MNIST IDX file (or folder); default synthetic");
  app.add_option("--scenario", scenario_name, "run an OOM scenario: capacity, fragmentation, leak")
      ->check(CLI::IsMember({"capacity", "fragmentation", "leak"}));
  app.add_flag("--json", json, "print one JSON document on stdout at the end");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; every usage error is 2
  }
  fragscope::Log();  // the libraries' own logger (stderr) doubles as the default one
  spdlog::set_default_logger(spdlog::get("fragscope"));
  spdlog::set_level(spdlog::level::warn);

  ParseBackendKind(backend_text, &options.backend);
  std::string conf = conf_text;
  if (conf.empty()) {
    if (const char* env = std::getenv(kAllocConfEnv)) conf = env;
  }
  if (!scenario_name.empty()) {
    const Scenario* scenario = FindScenario(scenario_name);
    conf = ApplyScenario(*scenario, conf, &options);
  }
  if (!schedule.empty()) options.batch_schedule = schedule;
  if (image_size != 0) options.model.image_size = image_size;
  options.model.classes = classes != 0 ? classes : (options.model.image_size > 64 ? 1000 : 10);
  const std::string full_conf = WithDefaultBacking(options.backend, conf);

  TrainResult result;
  try {
    options.alloc_conf = ParseAllocConf(full_conf);
    if (!json) {
      fmt::print("fragscope-train: {} on {}, batch {}, {} steps, allocator '{}'\n", options.model.name,
                 backend_text, options.batch_schedule.empty() ? std::to_string(options.batch) : "scheduled",
                 options.steps, options.alloc_conf.ToString());
    }
    result = Train(options, [&](const StepRecord& r) {
      if (json) return;
      fmt::print("step {:4d}  batch {:4d}  loss {}  acc {}  {:9.1f} ms  {:8.1f} img/s  in use {:>11}  reserved {:>11}\n",
                 r.step, r.batch, std::isfinite(r.loss) ? fmt::format("{:7.4f}", r.loss) : "      -",
                 std::isfinite(r.accuracy) ? fmt::format("{:5.3f}", r.accuracy) : "    -", r.step_ms,
                 r.images_per_s, FormatBytes(r.in_use), FormatBytes(r.reserved));
      std::fflush(stdout);
    });
  } catch (const ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const DataError& e) {
    fmt::print(stderr, "error: --data: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const traces::TraceError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }

  if (json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const StepRecord& r : result.steps) {
      steps.push_back({{"step", r.step}, {"batch", r.batch}, {"loss", NumberOrNull(r.loss)},
                       {"accuracy", NumberOrNull(r.accuracy)}, {"step_ms", r.step_ms},
                       {"images_per_s", r.images_per_s}, {"in_use", r.in_use}, {"reserved", r.reserved}});
    }
    nlohmann::json doc = {{"backend", backend_text},
                          {"model", options.model.name},
                          {"allocator", result.allocator},
                          {"alloc_conf", options.alloc_conf.ToString()},
                          {"params", result.param_count},
                          {"steps", steps},
                          {"final_loss", result.steps.empty() ? nlohmann::json(nullptr) : NumberOrNull(result.final_loss())},
                          {"peak_reserved", result.peak_reserved},
                          {"peak_in_use", result.peak_in_use},
                          {"trace", options.trace_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.trace_path)},
                          {"trace_events", result.trace_events},
                          {"oom", result.oom ? OomJson(*result.oom, result.oom_context) : nlohmann::json(nullptr)}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("peak reserved {}, peak in use {}, {} parameters, data: {}\n", FormatBytes(result.peak_reserved),
               FormatBytes(result.peak_in_use), result.param_count, result.data);
    if (result.oom) {
      const OomContext& ctx = result.oom_context;
      fmt::print("\nout of memory at step {} ({}), allocating '{}':\n{}", ctx.step, ctx.phase, ctx.tag,
                 result.oom->Describe());
      if (!ctx.diagnosis_text.empty()) fmt::print("{}\n", ctx.diagnosis_text);
    }
    if (!options.trace_path.empty()) {
      fmt::print("trace: {} events written to {}\n", result.trace_events, options.trace_path);
    }
  }
  return result.oom ? 1 : 0;
}
