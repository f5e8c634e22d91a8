// fragscope-train: the reference training loop on the fragscope allocator.
//
//   fragscope-train --backend cpu --model tiny --batch 32 --steps 20 --trace run.fst
//   fragscope-train --backend sim --model resnet50 --image-size 224 --batch 256 --alloc-conf capacity=24GiB
//   fragscope-train --scenario fragmentation --backend sim
//
// Exit codes: 0 trained, 1 stopped by an OOM (the report says why), 2 bad usage or input.
#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
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

// Checks of the text of a number option, before CLI11 converts it: CLI11 reads "nan" and "inf" as
// doubles, and "-5" into an unsigned integer as 2^64 - 5, without a word.
CLI::Validator RealNumber(std::string what, std::string expected, bool (*in_range)(double)) {
  return CLI::Validator(
      [what, expected, in_range](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || !in_range(value)) {
          return fmt::format("'{}' is not {}: expected {}", text, what, expected);
        }
        return "";
      },
      expected);
}

// A whole number in [lo, hi], with a message that says what the flag is ("'abc' is not a batch
// size"): CLI11's range check alone read "Value abc not in range 1 to 1048576".
CLI::Validator WholeNumberIn(std::string what, std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [what, lo, hi](std::string& text) -> std::string {
        std::int64_t value = 0;
        const char* last = text.data() + text.size();
        const auto [end, ec] = std::from_chars(text.data(), last, value);
        if (text.empty() || ec != std::errc() || end != last || value < lo || value > hi) {
          return fmt::format("'{}' is not {}: expected a whole number from {} to {}", text, what, lo, hi);
        }
        return "";
      },
      fmt::format("{} to {}", lo, hi));
}

CLI::Validator WholeNumber(std::string what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* last = text.data() + text.size();
        const auto [end, ec] = std::from_chars(text.data(), last, value);
        if (text.empty() || text.front() < '0' || text.front() > '9' || ec != std::errc() || end != last) {
          return fmt::format("'{}' is not {}: expected a whole number from 0 to {}", text, what,
                             std::numeric_limits<std::uint64_t>::max());
        }
        return "";
      },
      "0 to 2^64-1");
}

bool IsBlank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
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
  // Usage errors in the form of the program's own: "error: ...".
  app.failure_message([](const CLI::App*, const CLI::Error& error) {
    return fmt::format("error: {}\nRun with --help for more information.\n", error.what());
  });
  std::string backend_text = "cpu", conf_text, scenario_name;
  TrainOptions options;
  bool json = false;
  int image_size = 0, classes = 0;
  app.add_option("--backend", backend_text, "cpu, cuda or sim")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  CLI::Option* model_option = app.add_option("--model", options.model.name, "tiny, tiny-nobn, resnet18, resnet50")->capture_default_str()
      ->check(CLI::IsMember({"tiny", "tiny-nobn", "resnet18", "resnet50"}));
  CLI::Option* batch_option =
      app.add_option("--batch", options.batch, "global batch size (split over the devices)")->capture_default_str()->check(WholeNumberIn("a batch size", 1, 1 << 20));
  std::vector<int> schedule;
  app.add_option("--batch-schedule", schedule, "batch of each step, cycled (e.g. 8,16,200): batch sizes that vary")
      ->delimiter(',')
      ->check(WholeNumberIn("a batch size", 1, 1 << 20));
  CLI::Option* steps_option = app.add_option("--steps", options.steps, "training steps")->capture_default_str()->check(WholeNumberIn("a step count", 0, 1 << 24));
  app.add_option("--image-size", image_size, "square input side (default 32; 224 for ImageNet shapes)")
      ->check(WholeNumberIn("an image size", 8, 4096));
  app.add_option("--classes", classes, "classes (default 10, 1000 for inputs above 64)")->check(WholeNumberIn("a class count", 2, 1 << 20));
  app.add_option("--lr", options.lr, "SGD learning rate (finite, > 0)")->capture_default_str()
      ->check(RealNumber("a learning rate", "a finite number greater than 0", [](double v) { return v > 0.0; }));
  app.add_option("--momentum", options.momentum, "SGD momentum (in [0, 1))")->capture_default_str()
      ->check(RealNumber("a momentum", "a number from 0 up to but not including 1",
                         [](double v) { return v >= 0.0 && v < 1.0; }));
  app.add_option("--weight-decay", options.weight_decay, "SGD weight decay (finite, >= 0)")->capture_default_str()
      ->check(RealNumber("a weight decay", "a finite number of at least 0", [](double v) { return v >= 0.0; }));
  app.add_option("--seed", options.seed, "seed of the weights and the synthetic data (0 to 2^64-1)")->capture_default_str()
      ->check(WholeNumber("a seed"));
  app.add_option("--alloc-conf", conf_text,
                 "allocator configuration (default: $FRAGSCOPE_ALLOC_CONF, else defaults); the "
                 "backend's backing is added when none is named (host for cpu, sim for sim, cuda for cuda)");
  app.add_option("--trace", options.trace_path, "record every allocator event to this trace file (.fst)");
  app.add_option("--data", options.data_path, "CIFAR-10 binary or MNIST IDX file (or folder); default synthetic");
  std::vector<std::string> scenario_names;
  for (const Scenario& scenario : Scenarios()) scenario_names.push_back(scenario.name);
  app.add_option("--scenario", scenario_name, fmt::format("run an OOM scenario: {}", fmt::join(scenario_names, ", ")))
      ->check(CLI::IsMember(scenario_names));
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
  // The user's own configuration: --alloc-conf, else the environment variable; blank counts as
  // not given (all defaults).
  std::string user_conf;
  bool from_env = false;
  if (!IsBlank(conf_text)) {
    user_conf = conf_text;
  } else if (const char* env = std::getenv(kAllocConfEnv); env != nullptr && !IsBlank(env)) {
    user_conf = env;
    from_env = true;
  }
  std::string conf = user_conf;
  std::string scenario_conf;  // the scenario's own keys, for messages
  if (!scenario_name.empty()) {
    const Scenario* scenario = FindScenario(scenario_name);
    scenario_conf = scenario->alloc_conf;
    // The flags given next to it replace the scenario's, as --alloc-conf's keys do.
    const TrainOptions given = options;
    conf = ApplyScenario(*scenario, conf, &options);
    if (model_option->count() > 0) options.model.name = given.model.name;
    if (steps_option->count() > 0) options.steps = given.steps;
    if (batch_option->count() > 0) {
      options.batch = given.batch;
      options.batch_schedule.clear();  // one batch for every step, unless --batch-schedule follows
    }
  }
  if (!schedule.empty()) options.batch_schedule = schedule;
  if (image_size != 0) options.model.image_size = image_size;
  options.model.classes = classes != 0 ? classes : (options.model.image_size > 64 ? 1000 : 10);

  TrainResult result;
  try {
    // Named where the text came from, as fragscope's commands name it.
    const std::string source = from_env ? fmt::format("{}: ", kAllocConfEnv) : user_conf.empty() ? "" : "--alloc-conf: ";
    const auto from = [&source](const ConfigError& e, const std::string& context) {
      return ConfigError(e.key(), fmt::format("{}{}{}", source, e.what(), context));
    };
    // The user's text alone first, so that an error quotes what they wrote and its positions
    // count in it; then with the scenario's keys and the backend's backing added, where only how
    // the keys combine can fail.
    try {
      (void)ParseAllocConf(user_conf);
    } catch (const ConfigError& e) {
      throw from(e, "");
    }
    const std::string full_conf = WithDefaultBacking(options.backend, conf);
    try {
      options.alloc_conf = ParseAllocConf(full_conf);
    } catch (const ConfigError& e) {
      std::string context;
      if (!scenario_conf.empty()) context += fmt::format("; the scenario {} adds {}", scenario_name, scenario_conf);
      // Only where the error is about the backing the backend added ("needs backing sim or host: ...
      // on backing cuda"), not wherever the word appears ("a backing call").
      const std::string added = full_conf.substr(0, full_conf.find(','));  // "backing=cuda"
      const std::string backing = added.substr(added.find('=') + 1);
      const std::string_view what = e.what();
      if (full_conf != conf && (e.key() == "backing" || what.find("backing " + backing) != std::string_view::npos ||
                                what.find(added) != std::string_view::npos)) {
        context += fmt::format("; {} is the {} backend's own, added as none is named",
                               full_conf.substr(0, full_conf.find(',')), backend_text);
      }
      throw from(e, context);
    }
    if (!json) {
      fmt::print("fragscope-train: {} on {}, batch {}, {} steps, allocator '{}'\n", options.model.name,
                 backend_text, options.batch_schedule.empty() ? std::to_string(options.batch) : "scheduled",
                 options.steps, options.alloc_conf.ToString());
    }
    result = Train(options, [&](const StepRecord& r) {
      if (json) return;
      fmt::print("step {:4d}  batch {:4d}  loss {}  acc {}  {:9.1f} ms  {:8.1f} img/s  in use {:>11}  reserved {:>11}"
                 "  frag {:.3f}\n",
                 r.step, r.batch, std::isfinite(r.loss) ? fmt::format("{:7.4f}", r.loss) : "      -",
                 std::isfinite(r.accuracy) ? fmt::format("{:5.3f}", r.accuracy) : "    -", r.step_ms,
                 r.images_per_s, FormatBytes(r.in_use), FormatBytes(r.reserved), r.external_fragmentation);
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
  } catch (const std::bad_alloc& e) {
    // Host memory outside the allocator (a batch's host copy for the GPU, a data set, buffers of
    // the loop): no OOM report to give, but the batch that asked for it.
    const std::string why = e.what();
    if (why != std::bad_alloc().what()) {
      fmt::print(stderr, "error: out of host memory outside the allocator: {}\n", why);
    } else {
      fmt::print(stderr, "error: out of host memory outside the allocator while training with --batch {}\n",
                 options.batch_schedule.empty() ? std::to_string(options.batch) : "(a schedule)");
    }
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
                       {"images_per_s", r.images_per_s}, {"in_use", r.in_use}, {"reserved", r.reserved},
                       {"external_fragmentation", r.external_fragmentation}});
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
                          {"peak_load", result.peak_load},
                          {"overhead", result.peak_load == 0 ? nlohmann::json(nullptr) : nlohmann::json(result.overhead())},
                          {"trace", options.trace_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.trace_path)},
                          {"trace_events", result.trace_events},
                          {"oom", result.oom ? OomJson(*result.oom, result.oom_context) : nlohmann::json(nullptr)}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("peak reserved {}, peak LOAD {} (overhead {}), peak in use {}, {} parameters, data: {}\n",
               FormatBytes(result.peak_reserved), FormatBytes(result.peak_load),
               result.peak_load == 0 ? std::string("-") : fmt::format("{:.2f}", result.overhead()),
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
