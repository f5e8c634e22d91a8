// Writes the seed corpus of fuzz/trace_reader_fuzz.cpp: small valid traces (each under 4 KB)
// that between them use every event type, the extra-field path, matched frees, several blocks,
// damaged tails and a trace that was never closed. Run by `fuzz/run.sh --make-corpus`.
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

using namespace fragscope::traces;

namespace {

TraceHeader Header() {
  TraceHeader h;
  h.producer = "fragscope fuzz corpus";
  h.source_format = "fragscope";
  h.alloc_conf = "backing=sim,limit=1GiB";
  h.devices = {{0, "simulated device", "sim", 1ull << 32, 1ull << 30}};
  h.created_unix_ns = 1'700'000'000'000'000'000ull;
  h.metadata = {{"seed", "corpus"}};
  return h;
}

Event Make(EventType type, std::uint32_t device, std::uint64_t address, std::uint64_t size, TagId tag) {
  Event e;
  e.type = type;
  e.device = device;
  e.address = address;
  e.size = size;
  e.rounded = (size + 255) & ~std::uint64_t{255};
  e.tag = tag;
  return e;
}

void EveryType(const std::string& path, std::uint32_t block_events, bool close) {
  auto* writer = new TraceWriter(path, Header(), {.block_events = block_events});
  const TagId weights = writer->Intern("conv1.weight");
  const TagId step = writer->Intern("step 1 begin");
  const TagId unicode = writer->Intern("层/αβ");
  std::uint64_t time = 1000;
  std::uint64_t id = 0;
  auto record = [&](Event e) {
    e.time_ns = time += 137;
    writer->Record(e);
  };
  for (std::uint32_t device = 0; device < 2; ++device) {
    record(Make(EventType::kRegionReserve, device, 0x7f0000000000ull << device, 1 << 24, kNoTag));
    record(Make(EventType::kMarker, device, 0, 0, step));
    std::vector<Event> live;
    for (int i = 0; i < 6; ++i) {
      Event a = Make(EventType::kAlloc, device, (0x7f0000000000ull << device) + 4096ull * i, 1000u + 300u * i,
                     i % 2 ? weights : unicode);
      a.alloc_id = ++id;
      a.region = 0x7f0000000000ull << device;
      a.stream = i % 3;
      record(a);
      live.push_back(a);
    }
    for (int i = 5; i >= 0; --i) {
      Event f = live[static_cast<std::size_t>(i)];
      f.type = EventType::kFree;
      if (i == 2) f.size += 1;  // not an exact copy of its alloc
      record(f);
    }
    Event oom = Make(EventType::kOom, device, 0, 1ull << 31, weights);
    oom.oom = OomRecord{1ull << 31, 1ull << 31, 1ull << 30, 1ull << 24, 1ull << 20, 1ull << 20, 1 << 22, 1 << 21,
                        (1ull << 30) - (1ull << 24), 12, 1, OomCause::kRequestTooLarge};
    record(oom);
    record(Make(EventType::kRegionRelease, device, 0x7f0000000000ull << device, 1 << 24, kNoTag));
  }
  if (close) {
    delete writer;
  } else {
    writer->Flush();  // leaked on purpose: no end-of-trace block, as after a crash
  }
}

void Extremes(const std::string& path) {
  TraceWriter writer(path, Header(), {.block_events = 4});
  std::mt19937_64 rng(7);
  const TagId tag = writer.Intern("x");
  for (int i = 0; i < 10; ++i) {
    Event e;
    e.type = static_cast<EventType>(1 + i % 6);
    e.device = i % 2 ? 0xFFFFFFFFu : 0;
    e.time_ns = i % 3 ? UINT64_MAX - static_cast<std::uint64_t>(i) : static_cast<std::uint64_t>(i);
    e.stream = rng();
    e.address = UINT64_MAX - rng() % 1000;
    e.size = i % 2 ? UINT64_MAX : 0;
    e.rounded = rng();
    e.region = 1ull << 63;
    e.alloc_id = rng();
    e.thread = static_cast<std::uint32_t>(rng());
    e.tag = tag;
    writer.Record(e);
  }
}

void Cut(const std::string& from, const std::string& to, std::uintmax_t keep) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(to, std::min(keep, std::filesystem::file_size(to)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  { TraceWriter empty(dir + "/empty.fst", Header()); }
  EveryType(dir + "/every_type.fst", 1000, true);
  EveryType(dir + "/every_type_blocks.fst", 5, true);
  EveryType(dir + "/unclosed.fst", 7, false);
  Extremes(dir + "/extremes.fst");
  Cut(dir + "/every_type_blocks.fst", dir + "/truncated.fst", std::filesystem::file_size(dir + "/every_type_blocks.fst") * 2 / 3);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const Trace trace = ReadTrace(entry.path().string());
    std::printf("%-40s %6ju bytes %4zu events %zu warnings\n", entry.path().c_str(),
                static_cast<std::uintmax_t>(entry.file_size()), trace.events.size(), trace.warnings.size());
    if (entry.file_size() >= 4096) {
      std::fprintf(stderr, "%s is over 4 KB\n", entry.path().c_str());
      return 1;
    }
  }
  return 0;
}
