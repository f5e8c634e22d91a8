#include "fragscope/log.hpp"
#include <cstdlib>
#include <memory>
#include <string_view>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace fragscope {

namespace {

std::shared_ptr<spdlog::logger> MakeLogger() {
  if (std::shared_ptr<spdlog::logger> existing = spdlog::get("fragscope")) return existing;
  auto logger = std::make_shared<spdlog::logger>(
      "fragscope", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  if (const char* level = std::getenv(kLogLevelEnv); level != nullptr && *level != '\0') {
    // from_str maps an unknown name to "off"; an unknown name more likely means a typo, so keep
    // the default and say so.
    const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
    if (parsed == spdlog::level::off && std::string_view(level) != "off") {
      logger->warn("{}='{}' is not a level (trace, debug, info, warn, error, critical, off); "
                   "keeping info", kLogLevelEnv, level);
    } else {
      logger->set_level(parsed);
    }
  }
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    // Another thread registered "fragscope" between get and here: use that one.
    if (std::shared_ptr<spdlog::logger> existing = spdlog::get("fragscope")) return existing;
  }
  return logger;
}

}  // namespace

spdlog::logger& Log() {
  // Held for the life of the process so that destructors running at exit can still log.
  static const std::shared_ptr<spdlog::logger> logger = MakeLogger();
  return *logger;
}

}  // namespace fragscope
