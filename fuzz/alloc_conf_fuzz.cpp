// libFuzzer target: the configuration parser (the one string of --alloc-conf and
// FRAGSCOPE_ALLOC_CONF) over arbitrary text. It either throws a ConfigError that names a key or
// the string, or returns a configuration whose canonical form parses back equal; a sim
// configuration must then build a MemorySystem or fail with ConfigError / BackingError. Anything
// else escaping, a sanitizer report or a hang is a finding. Built by `fuzz/run.sh alloc_conf`.
#include <cstdint>
#include <string>
#include <string_view>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fuzz_check.hpp"

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  AllocConf conf;
  try {
    conf = ParseAllocConf(text);
  } catch (const ConfigError& error) {
    Check(std::string_view(error.what()).size() > 0);
    return 0;
  }
  const std::string canonical = conf.ToString();
  Check(ParseAllocConf(canonical) == conf);
  Check(ParseAllocConf(canonical).ToString() == canonical);
  if (conf.backing != BackingKind::kSim) return 0;  // host would touch real memory
  try {
    auto system = MemorySystem::Create(conf);
    for (std::size_t d = 0; d < system->device_count(); ++d) system->device(d).CheckInvariants();
  } catch (const ConfigError&) {
  } catch (const BackingError&) {
  }
  return 0;
}
