// The registry of readers (fragscope/evidence/readers.hpp): the built-in ones of
// builtin_readers.def, then any registered at run time.
#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "fragscope/evidence/readers.hpp"

namespace fragscope::evidence {

namespace readers {
#define FRAGSCOPE_READER(NAME) Reader NAME##Reader();
#include "builtin_readers.def"
#undef FRAGSCOPE_READER
}  // namespace readers

namespace {

std::mutex g_mutex;

void Check(const std::vector<Reader>& registry, const Reader& reader) {
  if (reader.name.empty()) throw std::invalid_argument("a reader needs a name");
  if (!reader.sniff || !reader.open) {
    throw std::invalid_argument("the reader \"" + reader.name + "\" needs both sniff and open");
  }
  const bool taken = std::any_of(registry.begin(), registry.end(),
                                 [&](const Reader& other) { return other.name == reader.name; });
  if (taken) throw std::invalid_argument("a reader named \"" + reader.name + "\" is already registered");
}

// Under g_mutex.
std::vector<Reader>& Registry() {
  static std::vector<Reader> registry = [] {
    std::vector<Reader> builtin;
#define FRAGSCOPE_READER(NAME)               \
  {                                          \
    Reader reader = readers::NAME##Reader(); \
    Check(builtin, reader);                  \
    builtin.push_back(std::move(reader));    \
  }
#include "builtin_readers.def"
#undef FRAGSCOPE_READER
    return builtin;
  }();
  return registry;
}

}  // namespace

std::vector<Reader> Readers() {
  std::lock_guard lock(g_mutex);
  return Registry();
}

void RegisterReader(Reader reader) {
  std::lock_guard lock(g_mutex);
  std::vector<Reader>& registry = Registry();
  Check(registry, reader);
  registry.push_back(std::move(reader));
}

bool UnregisterReader(std::string_view name) {
  std::lock_guard lock(g_mutex);
  std::vector<Reader>& registry = Registry();
  const auto it = std::find_if(registry.begin(), registry.end(), [&](const Reader& r) { return r.name == name; });
  if (it == registry.end()) return false;
  registry.erase(it);
  return true;
}

std::vector<std::string> ReaderNames() {
  std::vector<std::string> names;
  for (const Reader& reader : Readers()) names.push_back(reader.name);
  return names;
}

std::string ListReaders(ReaderList what) {
  const std::vector<Reader> readers = Readers();
  std::string out;
  for (std::size_t i = 0; i < readers.size(); ++i) {
    if (i > 0) out += i + 1 == readers.size() ? " or " : ", ";
    out += what == ReaderList::kNames ? readers[i].name : readers[i].description;
  }
  return out;
}

std::string UnknownFormatMessage() { return "unknown format: not a " + ListReaders(ReaderList::kDescriptions); }

std::string TraceArgumentHelp() {
  return "trace file, or - for standard input; any format fragscope reads, recognized by content: " +
         ListReaders(ReaderList::kDescriptions);
}

}  // namespace fragscope::evidence
