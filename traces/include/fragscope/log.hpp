#pragma once
// The one logger every fragscope library writes through.
//
// Why not spdlog's default logger: that one prints to stdout and belongs to the process. Inside a
// host program (the C ABI, the PyTorch shim, a C++ consumer) our OOM summaries and warnings would
// land in the program's own stdout — in the middle of its JSON, say. This logger is named
// "fragscope", writes to stderr, and takes its level from $FRAGSCOPE_LOG_LEVEL (trace, debug,
// info, warn, error, critical, off; info by default). Being registered with spdlog, it still obeys
// `spdlog::set_level` and can be fetched with `spdlog::get("fragscope")`.
// Declared, not included: the installed headers do not make consumers find spdlog's headers.
// Code that logs includes <spdlog/spdlog.h> itself.
namespace spdlog {
class logger;
}  // namespace spdlog

namespace fragscope {

// Environment variable that sets the logger's level when it is created.
inline constexpr const char* kLogLevelEnv = "FRAGSCOPE_LOG_LEVEL";

// The "fragscope" logger: the one already registered with spdlog under that name if there is
// one, else a new stderr logger, created once (thread-safe).
spdlog::logger& Log();

}  // namespace fragscope
