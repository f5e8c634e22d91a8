// The registry of evidence readers: order, names, the messages made from it, refusals; and a
// reader added the way docs/importers.md ("Adding a reader") says, here a toy one defined in this
// file, which EvidenceInput::Open then finds by sniffing and whose events pass the same limits and
// size checks as every built-in reader's.
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <cstdio>

#include <gtest/gtest.h>

#include "fragscope/evidence/evidence_input.hpp"
#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::evidence {
namespace {

const std::string kSource = FRAGSCOPE_SOURCE_DIR;

// ---- The toy reader: one "file" (this block) plus one registry line (ToyRegistration). --------
//
// toycsv: a first line "toycsv", then one allocation per line, "device,address,size".
std::uint64_t Number(std::string_view text, const std::string& name, std::size_t line) {
  std::uint64_t value = 0;
  const int base = text.starts_with("0x") ? 16 : 10;
  if (base == 16) text.remove_prefix(2);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw traces::TraceError(name, "line " + std::to_string(line) + ": not a number: " + std::string(text));
  }
  return value;
}

Reader ToyCsvReader() {
  return {
      .name = "toycsv",
      .description = "toy CSV (device,address,size per line; a test's own format)",
      .sniff = [](std::string_view head) { return head.starts_with("toycsv\n"); },
      .open = [](const Source& source, const traces::ReadLimits&) {
        traces::Trace trace;
        trace.header.producer = "toycsv";
        trace.header.source_format = "toycsv";
        std::istringstream in{std::string(source.bytes())};
        std::string line;
        std::getline(in, line);  // "toycsv"
        for (std::size_t number = 2; std::getline(in, line); ++number) {
          if (line.empty()) continue;
          std::vector<std::string_view> fields;
          std::string_view rest = line;
          for (std::size_t comma; (comma = rest.find(',')) != std::string_view::npos; rest.remove_prefix(comma + 1)) {
            fields.push_back(rest.substr(0, comma));
          }
          fields.push_back(rest);
          if (fields.size() != 3) throw traces::TraceError(source.name(), "line " + std::to_string(number) + ": not 3 fields");
          traces::Event e;
          e.type = traces::EventType::kAlloc;
          e.seq = trace.events.size();
          e.device = static_cast<std::uint32_t>(Number(fields[0], source.name(), number));
          e.address = Number(fields[1], source.name(), number);
          e.size = Number(fields[2], source.name(), number);
          e.rounded = e.size;
          e.alloc_id = e.seq + 1;
          trace.events.push_back(e);
        }
        return InputFromTrace(std::move(trace));
      },
  };
}

// Registered for the life of a test.
class ToyRegistration {
 public:
  ToyRegistration() { RegisterReader(ToyCsvReader()); }
  ~ToyRegistration() { UnregisterReader("toycsv"); }
  ToyRegistration(const ToyRegistration&) = delete;
  ToyRegistration& operator=(const ToyRegistration&) = delete;
};

// ---- helpers ----------------------------------------------------------------------------------

std::string TempFile(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("fragscope_evidence_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every event of `input`, through NextBlock (the limits and size checks).
std::vector<traces::Event> ReadAllEvents(EvidenceInput& input) {
  std::vector<traces::Event> all, block;
  while (input.NextBlock(&block)) all.insert(all.end(), block.begin(), block.end());
  return all;
}

// The message of the TraceError that `open_and_read` throws; fails when it throws none.
template <typename F>
std::string ErrorOf(F&& open_and_read) {
  try {
    open_and_read();
  } catch (const traces::TraceError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no TraceError";
  return {};
}

const std::vector<std::string> kBuiltinNames = {"fragscope trace",    "PyTorch memory snapshot", "torch.profiler trace",
                                                "JSON Lines",         "RMM log (CSV)",           "TensorFlow BFC log",
                                                "PyTorch memory summary", "OOM error message"};

// ---- the registry -----------------------------------------------------------------------------

TEST(ReaderRegistry, BuiltinReadersInSniffOrder) {
  EXPECT_EQ(ReaderNames(), kBuiltinNames);
  for (const Reader& reader : Readers()) {
    EXPECT_FALSE(reader.description.empty()) << reader.name;
    EXPECT_EQ(reader.description.find('\n'), std::string::npos) << reader.name;
    EXPECT_TRUE(reader.sniff && reader.open) << reader.name;
  }
}

TEST(ReaderRegistry, EachSampleIsClaimedFirstByItsOwnReader) {
  const std::vector<std::pair<std::string, std::string>> samples = {
      {kSource + "/traces/samples/synth-small.fst", "fragscope trace"},
      {kSource + "/../shared/data/torch/pt_eor_cnn_counterfactuals.pickle", "PyTorch memory snapshot"},
      {kSource + "/tests/import/fixtures/tf/tf12_separate_loops.log", "TensorFlow BFC log"},
      {TempFile("oom.log", "step 1\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB "
                           "total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total "
                           "by PyTorch)\n"),
       "OOM error message"},
      // A memory summary printed after the error: the summary's reader (the message comes with it).
      {TempFile("summary.log", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB "
                               "total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in "
                               "total by PyTorch)\n| Allocated memory      |    1269 MiB |    1300 MiB |    9000 MiB "
                               "|    7731 MiB |\n"),
       "PyTorch memory summary"},
      {TempFile("sample.jsonl", "\n  {\"type\": \"header\"}\n"), "JSON Lines"},
      // The header's keys in another order (jq -S sorts them): still ours.
      {TempFile("sorted.jsonl", "{\"producer\":\"x\",\"type\" : \"header\"}\n{\"type\":\"alloc\"}\n"), "JSON Lines"},
      // A structured log (one JSON object a line) with an OOM message inside is not JSON Lines of
      // ours: the message reader takes it.
      {TempFile("structured.log",
                "{\"level\":\"error\",\"msg\":\"RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB "
                "(GPU 0; 10.76 GiB total capacity; 9.31 GiB already allocated; 42.56 MiB free; 9.83 GiB reserved "
                "in total by PyTorch)\"}\n"),
       "OOM error message"},
      {kSource + "/../shared/data/torch_profiler/kineto_resnet50_train_memevents.pt.trace.json.gz",
       "torch.profiler trace"},
      {TempFile("profile.json", "{\"schemaVersion\": 1, \"traceEvents\": []}"), "torch.profiler trace"},
      {TempFile("sample.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,14:02:11.123456,allocate,0x1000,4096,0x0\n"),
       "RMM log (CSV)"},
  };
  for (const auto& [path, expected] : samples) {
    if (!std::filesystem::exists(path)) {
      // Third-party evidence lives in ../shared and may be absent: that sample is skipped, said so.
      if (path.find("/../shared/") != std::string::npos) {
        std::printf("[ SKIPPED  ] %s is absent: no third-party evidence to sniff\n", path.c_str());
        continue;
      }
      ADD_FAILURE() << "missing sample " << path;
      continue;
    }
    std::string head = ReadText(path);
    head.resize(std::min(head.size(), kSniffBytes));
    std::string first;
    for (const Reader& reader : Readers()) {
      if (reader.sniff(head)) {
        first = reader.name;
        break;
      }
    }
    EXPECT_EQ(first, expected) << path;
  }
}

TEST(ReaderRegistry, ListsAndMessagesComeFromTheRegistry) {
  EXPECT_EQ(ListReaders(ReaderList::kNames),
            "fragscope trace, PyTorch memory snapshot, torch.profiler trace, JSON Lines, RMM log (CSV), TensorFlow BFC log, "
            "PyTorch memory summary or OOM error message");
  const std::string descriptions = ListReaders(ReaderList::kDescriptions);
  EXPECT_EQ(UnknownFormatMessage(), "unknown format: not a " + descriptions);
  EXPECT_NE(TraceArgumentHelp().find(descriptions), std::string::npos);
  for (const Reader& reader : Readers()) {
    EXPECT_NE(descriptions.find(reader.description), std::string::npos) << reader.name;
  }
}

// A TensorFlow dump takes its whole file; a PyTorch OOM message in the same log is named in a
// warning rather than dropped without a word.
TEST(ReaderRegistry, AnotherFrameworksMessageBesideATensorflowDumpIsNamed) {
  const std::string dump = ReadText(kSource + "/tests/import/fixtures/tf/tf12_separate_loops.log");
  ASSERT_FALSE(dump.empty());
  const std::string path = TempFile(
      "mixed.log", dump + "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total "
                          "capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by "
                          "PyTorch)\n");
  auto input = EvidenceInput::Open(path);
  EXPECT_EQ(input->format(), "TensorFlow BFC log");
  bool named = false;
  for (const std::string& w : input->warnings()) {
    named = named || w.find("a pytorch out-of-memory message that is not part of the TensorFlow dump") != std::string::npos;
  }
  EXPECT_TRUE(named);
  // The dump alone warns of no such thing.
  const auto alone = EvidenceInput::Open(kSource + "/tests/import/fixtures/tf/tf12_separate_loops.log");
  for (const std::string& w : alone->warnings()) {
    EXPECT_EQ(w.find("not part of the TensorFlow dump"), std::string::npos) << w;
  }
}

// A JSON object that is neither a header nor anything else fragscope reads gets the unknown-format
// error, not JSON Lines' complaint about its first line.
TEST(ReaderRegistry, AnyOtherJsonObjectIsAnUnknownFormat) {
  const std::string path = TempFile("other.json", "{\"a\": 1}\n");
  const std::string error = ErrorOf([&] { EvidenceInput::Open(path); });
  EXPECT_NE(error.find(UnknownFormatMessage()), std::string::npos) << error;
}

TEST(ReaderRegistry, UnknownFormatNamesEveryRegisteredReader) {
  const std::string path = TempFile("unknown.txt", "this is not a trace\n");
  const std::string before = ErrorOf([&] { EvidenceInput::Open(path); });
  EXPECT_NE(before.find(path), std::string::npos) << before;
  EXPECT_NE(before.find(UnknownFormatMessage()), std::string::npos) << before;
  for (const Reader& reader : Readers()) {
    EXPECT_NE(before.find(reader.description), std::string::npos) << reader.name << ": " << before;
  }
  ToyRegistration toy;
  const std::string after = ErrorOf([&] { EvidenceInput::Open(path); });
  EXPECT_NE(after.find("toy CSV (device,address,size per line; a test's own format)"), std::string::npos) << after;
  EXPECT_NE(after.find("or toy CSV"), std::string::npos) << "the new reader is last: " << after;
}

TEST(ReaderRegistry, RefusesADuplicateNameAndAnIncompleteReader) {
  Reader duplicate = ToyCsvReader();
  duplicate.name = "JSON Lines";
  EXPECT_THROW(RegisterReader(duplicate), std::invalid_argument);
  {
    ToyRegistration toy;
    EXPECT_THROW(RegisterReader(ToyCsvReader()), std::invalid_argument);
  }
  Reader unnamed = ToyCsvReader();
  unnamed.name.clear();
  EXPECT_THROW(RegisterReader(unnamed), std::invalid_argument);
  Reader no_sniff = ToyCsvReader();
  no_sniff.sniff = nullptr;
  EXPECT_THROW(RegisterReader(no_sniff), std::invalid_argument);
  Reader no_open = ToyCsvReader();
  no_open.open = nullptr;
  EXPECT_THROW(RegisterReader(no_open), std::invalid_argument);
  EXPECT_EQ(ReaderNames(), kBuiltinNames) << "nothing refused stayed registered";
  EXPECT_FALSE(UnregisterReader("toycsv"));
}

TEST(ReaderRegistry, RegisteredAndUnregisteredInOrder) {
  {
    ToyRegistration toy;
    std::vector<std::string> expected = kBuiltinNames;
    expected.push_back("toycsv");
    EXPECT_EQ(ReaderNames(), expected);
  }
  EXPECT_EQ(ReaderNames(), kBuiltinNames);
}

// ---- the toy reader through Open --------------------------------------------------------------

TEST(ToyReader, OpenFindsItBySniffing) {
  const std::string path = TempFile("toy.csv", "toycsv\n0,0x1000,4096\n1,0x2000,512\n0,0x3000,256\n");
  EXPECT_NE(ErrorOf([&] { EvidenceInput::Open(path); }).find("unknown format"), std::string::npos)
      << "not read before it is registered";
  ToyRegistration toy;
  auto input = EvidenceInput::Open(path, traces::ReadLimits{});
  EXPECT_EQ(input->format(), "toycsv");
  EXPECT_EQ(input->path(), path);
  EXPECT_EQ(input->header().producer, "toycsv");
  const std::vector<traces::Event> events = ReadAllEvents(*input);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].device, 1u);
  EXPECT_EQ(events[1].address, 0x2000u);
  EXPECT_EQ(events[2].size, 256u);
  const auto activity = EvidenceInput::CurrentActivity();
  ASSERT_TRUE(activity.has_value());
  EXPECT_EQ(activity->format, "toycsv");
  EXPECT_EQ(activity->events, 3u);
  EXPECT_EQ(activity->devices, 2u);
  EXPECT_FALSE(activity->reading);
}

TEST(ToyReader, AStreamIsSniffedAndReadLikeAFile) {
  ToyRegistration toy;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text = "toycsv\n3,0x1000,4096\n";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const std::string path = "/dev/fd/" + std::to_string(fds[0]);
  auto input = EvidenceInput::Open(path, traces::ReadLimits{});
  EXPECT_EQ(input->format(), "toycsv");
  const std::vector<traces::Event> events = ReadAllEvents(*input);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].device, 3u);
  // Opened again by the same name: the copy read once.
  auto again = EvidenceInput::Open(path, traces::ReadLimits{});
  EXPECT_EQ(ReadAllEvents(*again).size(), 1u);
  ::close(fds[0]);
}

TEST(ToyReader, TooManyDevicesIsRefusedAsForEveryReader) {
  ToyRegistration toy;
  const std::string path = TempFile("devices.csv", "toycsv\n0,0x1000,256\n1,0x1000,256\n2,0x1000,256\n");
  traces::ReadLimits limits;
  limits.max_devices = 2;
  auto input = EvidenceInput::Open(path, limits);
  const std::string error = ErrorOf([&] { ReadAllEvents(*input); });
  EXPECT_EQ(error, path + ": " +
                       traces::TooManyDevicesMessage(3, "device 2 at event 2 is one more", limits));
}

TEST(ToyReader, TooManyEventsIsRefused) {
  ToyRegistration toy;
  const std::string path = TempFile("events.csv", "toycsv\n0,0x1000,256\n0,0x2000,256\n0,0x3000,256\n");
  traces::ReadLimits limits;
  limits.max_events = 2;
  auto input = EvidenceInput::Open(path, limits);
  const std::string error = ErrorOf([&] { ReadAllEvents(*input); });
  EXPECT_EQ(error, path + ": " + traces::TooManyEventsMessage(3, "read so far", 0, 1, limits));
}

TEST(ToyReader, AnEventSizeNoMemoryHasIsRefused) {
  ToyRegistration toy;
  // 2^63 bytes: more than any size fragscope takes (kMaxBytes).
  const std::string path = TempFile("size.csv", "toycsv\n0,0x1000,256\n0,0x2000,9223372036854775808\n");
  auto input = EvidenceInput::Open(path, traces::ReadLimits{});
  const std::string error = ErrorOf([&] { ReadAllEvents(*input); });
  EXPECT_TRUE(error.starts_with(path + ": event 1 (alloc, device 0, 9223372036854775808 bytes at 0x2000): "))
      << error;
}

TEST(ToyReader, ItsOwnErrorsNameTheFile) {
  ToyRegistration toy;
  const std::string path = TempFile("bad.csv", "toycsv\n0,0x1000\n");
  EXPECT_NE(ErrorOf([&] { EvidenceInput::Open(path); }).find(path + ": line 2: not 3 fields"), std::string::npos);
}

// ---- docs quote the registry ------------------------------------------------------------------

TEST(ReaderRegistry, DocsQuoteTheGeneratedText) {
  const std::string importers = ReadText(kSource + "/docs/importers.md");
  EXPECT_NE(importers.find(UnknownFormatMessage()), std::string::npos)
      << "docs/importers.md should quote: " << UnknownFormatMessage();
  const std::string cli = ReadText(kSource + "/docs/cli.md");
  EXPECT_NE(cli.find(TraceArgumentHelp()), std::string::npos) << "docs/cli.md should quote: " << TraceArgumentHelp();
}

}  // namespace
}  // namespace fragscope::evidence
