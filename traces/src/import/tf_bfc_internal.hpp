// Internal to the TensorFlow BFC log reader.
#pragma once

#include <string>

#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::traces {

// Builds the regions, totals, cross-checks (warnings) and OOM cause of a parsed dump.
void FinalizeTfBfcDump(TfBfcDump& dump, const std::string& name);

}  // namespace fragscope::traces
