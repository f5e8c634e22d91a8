// Out-of-memory error messages (traces::FindOomMessages): every message of
// ../shared/data/oom_messages read with its numbers checked against a table written from that
// folder's SOURCES.md (skipped when the folder is absent); messages inside 100 kB of other log
// text, several in one input, sizes in every unit, hostile numbers.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "support/shell.hpp"

namespace fragscope::traces {
namespace {

const std::string kDataDir = FRAGSCOPE_SOURCE_DIR "/../shared/data/oom_messages/";

// The whole file (support/shell.hpp).
std::string ReadText(const std::string& path) { return fragscope::testing::Slurp(path); }

// The file of the corpus whose name starts with `nn` ("04"), or "" when absent.
std::string CorpusFile(const std::string& nn) {
  if (!std::filesystem::is_directory(kDataDir)) return "";
  for (const auto& entry : std::filesystem::directory_iterator(kDataDir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(nn + "_", 0) == 0 && entry.path().extension() == ".log") return entry.path().string();
  }
  return "";
}

#define REQUIRE_CORPUS()                                                                            \
  if (!std::filesystem::is_directory(kDataDir))                                                     \
  GTEST_SKIP() << "shared data not found: " << kDataDir                                             \
               << " (the OOM message corpus lives in ../shared/data next to the project)"

// A printed size to bytes, independently of the parser: value × 1024^unit, rounded.
std::uint64_t Bytes(const std::string& printed) {
  std::size_t end = 0;
  const long double value = std::stold(printed, &end);
  std::string unit = printed.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::map<std::string, int> kPower = {
      {"B", 0},  {"bytes", 0}, {"KiB", 1}, {"MiB", 2}, {"GiB", 3}, {"TiB", 4}, {"KB", 1}, {"MB", 2},
      {"GB", 3}, {"K", 1},     {"M", 2},   {"G", 3}};
  const auto it = kPower.find(unit);
  if (it == kPower.end()) ADD_FAILURE() << "test table: unknown unit in " << printed;
  long double scale = 1;
  for (int i = 0; i < (it == kPower.end() ? 0 : it->second); ++i) scale *= 1024;
  return static_cast<std::uint64_t>(std::llround(value * scale));
}

// One row per corpus file: the numbers SOURCES.md lists for it, as printed ("" = not in the message).
struct Row {
  const char* nn;
  OomMessageKind kind;
  const char* request;
  const char* total;
  const char* free;
  const char* allocated;
  const char* reserved;
  const char* unallocated;
  const char* process;
  int processes;         // "Process N has" lines
  const char* allowed;   // "X allowed;", MPS max allowed
};

using K = OomMessageKind;
// From SOURCES.md's table ("Numbers in the message"). The old `cached` field is U. MPS: A = M,
// allowed = W; cudaMallocAsync: A = C ("Currently allocated").
const Row kRows[] = {
    {"01", K::kPytorchLegacy, "", "", "", "", "", "", "", 0, ""},
    {"02", K::kPytorchLegacy, "", "", "", "", "", "", "", 0, ""},
    {"04", K::kPytorchCaching, "1024.00 KiB", "11.17 GiB", "576.00 KiB", "10.90 GiB", "", "30.96 MiB", "", 0, ""},
    {"05", K::kPytorchCaching, "32.00 MiB", "7.79 GiB", "21.00 MiB", "6.64 GiB", "", "150.86 MiB", "", 0, ""},
    {"07", K::kPytorchCaching, "8.13 GiB", "10.76 GiB", "8.20 GiB", "643.57 MiB", "", "32.43 MiB", "", 0, ""},
    {"08", K::kPytorchCaching, "1.12 MiB", "22.37 GiB", "3.56 MiB", "15.87 GiB", "", "787.74 MiB", "", 0, ""},
    {"10", K::kPytorchCaching, "1006.00 MiB", "10.91 GiB", "569.81 MiB", "9.18 GiB", "9.49 GiB", "", "", 0, ""},
    {"11", K::kPytorchCaching, "60.00 MiB", "11.17 GiB", "12.50 MiB", "505.96 MiB", "530.00 MiB", "", "", 0, ""},
    {"13", K::kPytorchCaching, "2.00 MiB", "6.00 GiB", "0 bytes", "4.88 GiB", "4.96 GiB", "", "", 0, ""},
    {"14", K::kPytorchCaching, "20.00 MiB", "1.96 GiB", "2.88 MiB", "1.24 GiB", "1.25 GiB", "", "", 0, ""},
    {"16", K::kPytorchCaching, "10.73 GiB", "8.00 GiB", "0 bytes", "17.20 GiB", "19.15 GiB", "", "", 0, ""},
    {"17", K::kPytorchCaching, "1.69 GiB", "14.56 GiB", "1.31 GiB", "649.97 MiB", "1.01 GiB", "", "", 0, ""},
    {"19", K::kPytorchCaching, "130674.91 GiB", "79.15 GiB", "37.61 GiB", "27.53 GiB", "28.21 GiB", "", "", 0, ""},
    {"20", K::kPytorchCaching, "16.00 GiB", "47.54 GiB", "6.30 GiB", "23.76 GiB", "39.59 GiB", "", "", 0, ""},
    {"22", K::kPytorchCaching, "1.63 GiB", "44.56 GiB", "565.31 MiB", "27.91 GiB", "27.93 GiB", "", "", 0, ""},
    {"23", K::kPytorchCaching, "192.00 MiB", "4.00 GiB", "0 bytes", "3.08 GiB", "3.47 GiB", "", "", 0, ""},
    {"25", K::kPytorchCaching, "32.00 MiB", "4.00 GiB", "41.56 MiB", "2.58 GiB", "", "1.90 MiB", "3.44 GiB", 0, ""},
    {"26", K::kPytorchCaching, "55.57 GiB", "12.00 GiB", "9.02 GiB", "984.52 MiB", "", "463.48 MiB", "", 0, ""},
    {"28", K::kPytorchCaching, "2.00 GiB", "4.00 GiB", "2.80 GiB", "0 bytes", "", "0 bytes", "", 0, ""},
    {"29", K::kPytorchCaching, "27.12 GiB", "11.99 GiB", "0 bytes", "16.16 GiB", "", "144.59 MiB", "", 0, ""},
    {"31", K::kPytorchCaching, "52.00 MiB", "31.74 GiB", "39.62 MiB", "11.54 GiB", "", "677.26 MiB", "13.82 GiB", 15, ""},
    {"32", K::kPytorchCaching, "518.00 MiB", "21.67 GiB", "4.06 MiB", "21.32 GiB", "", "1018.00 KiB", "", 1, ""},
    {"34", K::kPytorchCaching, "14.00 MiB", "4.00 GiB", "0 bytes", "6.97 GiB", "", "184.73 MiB", "", 0, ""},
    {"35", K::kPytorchCaching, "86.00 MiB", "23.64 GiB", "264.00 MiB", "7.63 GiB", "", "40.11 MiB", "8.04 GiB", 2, ""},
    {"37", K::kPytorchCaching, "226.00 MiB", "15.70 GiB", "210.38 MiB", "14.81 GiB", "", "336.73 MiB", "15.48 GiB", 0, ""},
    {"38", K::kPytorchCaching, "138.00 MiB", "79.15 GiB", "2.19 MiB", "71.57 GiB", "", "611.60 MiB", "79.12 GiB", 0, ""},
    {"40", K::kPytorchCaching, "30.29 GiB", "10.74 GiB", "3.69 GiB", "6.10 GiB", "", "396.58 MiB", "6.68 GiB", 0, ""},
    {"41", K::kPytorchCaching, "122.07 GiB", "255.98 GiB", "50.64 GiB", "123.74 GiB", "", "8.94 MiB", "", 0, ""},
    {"43", K::kPytorchAsync, "320.00 MiB", "", "2.94 MiB", "6.89 GiB", "", "", "", 0, ""},
    {"44", K::kPytorchAsync, "1.88 GiB", "", "0 bytes", "12.20 GiB", "", "", "", 0, ""},
    {"46", K::kPytorchMps, "292.50 MiB", "", "", "9.57 GiB", "", "", "", 0, "27.20 GiB"},
    {"47", K::kPytorchMps, "5.81 GiB", "", "", "15.72 GiB", "", "", "", 0, "18.13 GiB"},
    {"49", K::kPytorchMps, "129.21 MB", "", "", "7.43 GB", "", "", "", 0, "32.00 GB"},
    {"50", K::kPytorchMps, "768.00 MB", "", "", "5.56 GB", "", "", "", 0, "6.80 GB"},
    {"52", K::kPytorchCaching, "8.00 GiB", "15.11 GiB", "", "0 bytes", "", "0 bytes", "", 0, ""},
    {"53", K::kPytorchCaching, "16.00 GiB", "16.48 GiB", "16.07 GiB", "0 bytes", "", "0 bytes", "", 0, ""},
    {"55", K::kPytorchCaching, "32.00 GiB", "11.59 GiB", "9.01 GiB", "0 bytes", "", "0 bytes", "", 0, ""},
    {"56", K::kPytorchCaching, "1.71 GiB", "15.56 GiB", "", "176.00 MiB", "176.00 MiB", "", "", 0, ""},
    {"58", K::kPytorchCaching, "16.00 GiB", "15.24 GiB", "15.09 GiB", "0 bytes", "", "0 bytes", "", 0, ""},
    {"59", K::kPytorchCaching, "124.00 MiB", "19.94 GiB", "554.47 MiB", "15.87 GiB", "", "165.29 MiB", "", 0, ""},
    {"61", K::kPytorchCaching, "2.00 MiB", "255.98 GiB", "244.65 GiB", "1017.01 MiB", "", "54.99 MiB", "", 0, "1.05 GiB"},
    {"62", K::kPytorchCaching, "2.00 MiB", "287.98 GiB", "203.49 GiB", "68.63 GiB", "", "14.93 GiB", "", 0, ""},
    {"64", K::kXlaRuntime, "4770354232 B", "", "", "", "", "", "", 0, ""},
    {"65", K::kXlaRuntime, "6291456 B", "", "", "", "", "", "", 0, ""},
    {"67", K::kXlaRuntime, "4398046511104 B", "", "", "", "", "", "", 0, ""},
    {"68", K::kXlaRuntime, "5520758552 B", "", "", "", "", "", "", 0, ""},
    {"70", K::kXlaRequest, "3206250496 B", "", "", "", "", "", "", 0, ""},
    {"71", K::kXlaRequest, "184549376 B", "", "", "", "", "", "", 0, ""},
    {"73", K::kXlaTpuCompile, "", "", "", "", "", "", "", 0, ""},
    {"74", K::kXlaTpuCompile, "", "", "", "", "", "", "", 0, ""},
    {"76", K::kTfTensor, "411041792 B", "", "", "", "", "", "", 0, ""},
    {"77", K::kTfTensor, "393216 B", "", "", "", "", "", "", 0, ""},
    {"79", K::kTfTensor, "501760000 B", "", "", "", "", "", "", 0, ""},
    {"80", K::kTfTensor, "1610612736 B", "", "", "", "", "", "", 0, ""},
    {"82", K::kTfDeviceAlloc, "1631518720 B", "1.94 GiB", "1.71 GiB", "", "", "", "", 0, ""},
    {"83", K::kTfDeviceAlloc, "33554432 B", "", "", "", "", "", "", 0, ""},
    {"85", K::kTfDeviceAlloc, "112066560 B", "", "", "", "", "", "", 0, ""},
    {"86", K::kTfHostAlloc, "782758144 B", "", "", "", "", "", "", 0, ""},
    {"88", K::kCublas, "", "", "", "", "", "", "", 0, ""},
    {"89", K::kCudnn, "", "", "", "", "", "", "", 0, ""},
    {"91", K::kCudnn, "", "", "", "", "", "", "", 0, ""},
    {"92", K::kCudaRaw, "", "", "", "", "", "", "", 0, ""},
    {"94", K::kCudaRaw, "", "", "", "", "", "", "", 0, ""},
    {"95", K::kCudaRaw, "", "", "", "", "", "", "", 0, ""},
    {"97", K::kCudaRaw, "", "", "", "", "", "", "", 0, ""},
    {"98", K::kCudaRaw, "", "", "", "", "", "", "", 0, ""},
};

void ExpectSize(const std::optional<PrintedSize>& got, const char* printed, const std::string& what) {
  if (printed[0] == '\0') {
    EXPECT_FALSE(got.has_value()) << what << ": not in the message, read as " << (got ? got->text : "");
    return;
  }
  ASSERT_TRUE(got.has_value()) << what << ": " << printed << " not read";
  EXPECT_EQ(got->bytes, Bytes(printed)) << what << ": " << printed << " read as " << got->text;
}

TEST(OomMessageCorpus, EveryFileOneMessageWithTheNumbersOfSources) {
  REQUIRE_CORPUS();
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDataDir)) {
    if (entry.path().extension() == ".log") ++files;
  }
  EXPECT_EQ(files, std::size(kRows)) << "the corpus changed: update the table from SOURCES.md";
  for (const Row& row : kRows) {
    const std::string path = CorpusFile(row.nn);
    if (path.empty()) {
      ADD_FAILURE() << "corpus file " << row.nn << " missing";
      continue;
    }
    SCOPED_TRACE(path);
    const std::string text = ReadText(path);
    EXPECT_TRUE(LooksLikeOomMessage(text));
    const std::vector<OomMessage> messages = FindOomMessages(text);
    ASSERT_EQ(messages.size(), 1u);
    const OomMessage& m = messages[0];
    EXPECT_EQ(m.kind, row.kind) << ToString(m.kind);
    EXPECT_TRUE(m.problems.empty());
    EXPECT_FALSE(m.text.empty());
    EXPECT_GE(m.line, 1u);
    EXPECT_LE(m.line, m.end_line);
    ExpectSize(m.request, row.request, "R");
    ExpectSize(m.total, row.total, "T");
    ExpectSize(m.free, row.free, "F");
    ExpectSize(m.allocated, row.allocated, "A");
    ExpectSize(m.reserved, row.reserved, "Rv");
    ExpectSize(m.unallocated, row.unallocated, "U");
    ExpectSize(m.process_total, row.process, "P");
    ExpectSize(m.allowed, row.allowed, "allowed");
    EXPECT_EQ(m.other_processes.size(), static_cast<std::size_t>(row.processes));
  }
}

TEST(OomMessageCorpus, FamilyFields) {
  REQUIRE_CORPUS();
  auto one = [](const std::string& nn) {
    const std::string path = CorpusFile(nn);
    EXPECT_FALSE(path.empty()) << nn;
    auto messages = FindOomMessages(ReadText(path));
    EXPECT_EQ(messages.size(), 1u) << nn;
    return messages.empty() ? OomMessage{} : messages[0];
  };
  {  // 31: 15 sibling workers of 1.19 GiB each.
    const OomMessage m = one("31");
    ASSERT_EQ(m.other_processes.size(), 15u);
    EXPECT_EQ(m.other_processes[0].pid, 101553u);
    for (const auto& p : m.other_processes) EXPECT_EQ(p.size.bytes, Bytes("1.19 GiB"));
    EXPECT_EQ(m.device, "GPU 0");
    EXPECT_TRUE(m.hint_max_split_size);
  }
  {  // 35: "this process" printed between two Process lines.
    const OomMessage m = one("35");
    ASSERT_EQ(m.other_processes.size(), 2u);
    EXPECT_EQ(m.other_processes[0].pid, 2086283u);
    EXPECT_EQ(m.other_processes[0].size.bytes, Bytes("419.48 MiB"));
    EXPECT_EQ(m.other_processes[1].pid, 2797307u);
    EXPECT_EQ(m.other_processes[1].size.bytes, Bytes("14.85 GiB"));
    EXPECT_EQ(m.hint_env, "PYTORCH_CUDA_ALLOC_CONF");
    EXPECT_TRUE(m.hint_expandable_segments);
  }
  {  // 38: private pools, inside a vLLM log line and a repr.
    const OomMessage m = one("38");
    ASSERT_TRUE(m.private_pools);
    EXPECT_EQ(m.private_pools->bytes, Bytes("39.77 MiB"));
  }
  {  // 61: HIP, private pools of HIP Graphs, an allowed fraction.
    const OomMessage m = one("61");
    EXPECT_EQ(m.backend, "HIP");
    ASSERT_TRUE(m.private_pools);
    EXPECT_EQ(m.private_pools->bytes, Bytes("17.00 MiB"));
  }
  {  // 62: the device number as printed.
    EXPECT_EQ(one("62").device, "GPU 7");
    EXPECT_EQ(one("58").hint_env, "PYTORCH_HIP_ALLOC_CONF");
    EXPECT_EQ(one("52").backend, "XPU");
  }
  {  // 43: cudaMallocAsync over 7 lines; the fraction's limit printed as "no limit".
    const OomMessage m = one("43");
    ASSERT_TRUE(m.device_limit);
    EXPECT_EQ(m.device_limit->bytes, Bytes("23.69 GiB"));
    EXPECT_TRUE(m.unlimited_fraction);
    EXPECT_FALSE(m.allowed);
    EXPECT_EQ(m.end_line, 7u);
    const OomMessage flat = one("44");  // the same flattened to one line
    ASSERT_TRUE(flat.device_limit);
    EXPECT_EQ(flat.device_limit->bytes, Bytes("16.00 GiB"));
    EXPECT_TRUE(flat.unlimited_fraction);
  }
  {  // 46: MPS other allocations, a private pool request.
    const OomMessage m = one("46");
    ASSERT_TRUE(m.other_allocations);
    EXPECT_EQ(m.other_allocations->bytes, Bytes("17.35 GiB"));
    EXPECT_TRUE(m.private_pool_request);
    EXPECT_TRUE(m.hint_watermark);
    EXPECT_EQ(one("49").other_allocations->bytes, Bytes("24.46 GB"));
  }
  {  // 64: BufferAssignment stats.
    const OomMessage m = one("64");
    ASSERT_TRUE(m.xla);
    EXPECT_EQ(m.xla->parameter->bytes, Bytes("372.76 MiB"));
    EXPECT_EQ(m.xla->constant->bytes, Bytes("48.5 KiB"));
    EXPECT_EQ(m.xla->maybe_live_out->bytes, Bytes("9.64 GiB"));
    EXPECT_EQ(m.xla->preallocated_temp->bytes, Bytes("4.44 GiB"));
    EXPECT_EQ(m.xla->total->bytes, Bytes("14.44 GiB"));
    EXPECT_EQ(m.xla->fragmentation->bytes, Bytes("680.30 MiB"));
    EXPECT_EQ(one("65").xla->total->bytes, Bytes("12.00 MiB"));
    EXPECT_EQ(one("70").device, "device ordinal 0");
  }
  {  // 68: "Out \nof memory" wrapped mid-message.
    const OomMessage m = one("68");
    EXPECT_EQ(m.line, 1u);
    EXPECT_EQ(m.end_line, 2u);
  }
  {  // 73 and 74: TPU HBM.
    const OomMessage m = one("73");
    ASSERT_TRUE(m.tpu);
    EXPECT_EQ(m.tpu->space, "hbm");
    EXPECT_EQ(m.tpu->used->bytes, Bytes("21.95 G"));
    EXPECT_EQ(m.tpu->capacity->bytes, Bytes("15.48 G"));
    EXPECT_EQ(m.tpu->exceeded->bytes, Bytes("6.47 G"));
    EXPECT_EQ(m.tpu->reserved->bytes, Bytes("530.00 M"));
    EXPECT_EQ(m.tpu->program->bytes, Bytes("21.95 G"));
    EXPECT_EQ(m.tpu->arguments->bytes, 0u);
    const OomMessage big = one("74");
    EXPECT_EQ(big.tpu->used->bytes, Bytes("63.80 G"));
    EXPECT_EQ(big.tpu->capacity->bytes, Bytes("30.75 G"));
    EXPECT_EQ(big.tpu->reserved->bytes, Bytes("1.25 G"));
    EXPECT_EQ(big.tpu->largest_allocation->bytes, Bytes("2.00 G"));
  }
  {  // TensorFlow shapes × dtype.
    const OomMessage m = one("76");
    EXPECT_EQ(m.tensor_shape, (std::vector<std::uint64_t>{25088, 4096}));
    EXPECT_EQ(m.tensor_dtype, "float");
    EXPECT_EQ(m.allocator, "GPU_0_bfc");
    EXPECT_TRUE(m.tf_report_tensor_hint);
    const OomMessage old = one("79");  // TF 0.x "shapedim { size: … }", dtype from T=DT_FLOAT
    EXPECT_EQ(old.tensor_shape, (std::vector<std::uint64_t>{10000, 14, 14, 64}));
    EXPECT_EQ(old.tensor_dtype, "float");
    EXPECT_EQ(one("80").tensor_shape.size(), 6u);
  }
  {  // stream_executor: repeated failures and the ×0.9 cascade are one message each.
    const OomMessage same = one("83");
    EXPECT_EQ(same.attempts.size(), 4u);
    EXPECT_TRUE(same.cublas_init_failed);
    const OomMessage host = one("86");
    EXPECT_EQ(host.framework, "jax");  // stream_executor inside jaxlib
    ASSERT_EQ(host.attempts.size(), 3u);
    EXPECT_EQ(host.attempts[1].bytes, 704482304u);
    EXPECT_EQ(host.attempts[2].bytes, 634034176u);
    EXPECT_EQ(host.end_line, 6u);
  }
  {  // THCudaCheck and the RuntimeError ten lines later are one failure.
    const OomMessage m = one("01");
    EXPECT_EQ(m.line, 1u);
    EXPECT_EQ(m.end_line, 11u);
    EXPECT_EQ(one("91").framework, "mxnet");
    EXPECT_EQ(one("98").error_code, "CUDA_ERROR_OUT_OF_MEMORY");
  }
}

// ---- synthetic inputs ------------------------------------------------------------------------

const std::string kPytorch22 =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 226.00 MiB. GPU 0 has a total capacity of "
    "15.70 GiB of which 210.38 MiB is free. Including non-PyTorch memory, this process has 15.48 GiB memory in "
    "use. Of the allocated memory 14.81 GiB is allocated by PyTorch, and 336.73 MiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
const std::string kOld =
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 1.96 GiB total capacity; 1.24 GiB "
    "already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)";

// `kb` kilobytes of plausible training-log lines (seeded), none of them an OOM.
std::string Noise(std::size_t kb, unsigned seed) {
  std::mt19937 rng(seed);
  static const char* kLines[] = {
      "2024-03-01 12:00:{:02d}.123 INFO  step {} loss {:.4f} lr 3e-4 memory allocated 1234 MiB",
      "  File \"/usr/lib/python3/site-packages/torch/nn/modules/module.py\", line {}, in _call_impl",
      "W0301 12:00:{:02d} tensorflow/core/common_runtime/bfc_allocator.cc:{}] Garbage collection: {} bytes",
      "Epoch {}: 100%|██████████| {}/{} [00:{:02d}<00:00, 12.3it/s]",
      "[rank0]: memory summary: reserved {} free {} (no errors)",
  };
  std::string out;
  while (out.size() < kb * 1024) {
    const auto a = static_cast<unsigned>(rng() % 60), b = static_cast<unsigned>(rng() % 100000),
               c = static_cast<unsigned>(rng() % 1000);
    std::string line = kLines[rng() % std::size(kLines)];
    for (unsigned v : {a, b, c, a}) {
      const std::size_t at = line.find('{');
      if (at == std::string::npos) break;
      line.replace(at, line.find('}', at) - at + 1, std::to_string(v));
    }
    out += line + "\n";
  }
  return out;
}

TEST(OomMessageText, FoundInside100kBOfLogTextInLinearTime) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const std::string before = Noise(50, seed), after = Noise(50, seed + 100);
    const std::string text = before + kPytorch22 + "\n" + after;
    ASSERT_FALSE(LooksLikeOomMessage(before + after)) << "noise alone is no message (seed " << seed << ")";
    const auto start = std::chrono::steady_clock::now();
    const std::vector<OomMessage> messages = FindOomMessages(text);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(messages.size(), 1u) << "seed " << seed;
    EXPECT_EQ(messages[0].offset, before.size());
    EXPECT_EQ(messages[0].line, static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n')) + 1);
    EXPECT_EQ(messages[0].request->bytes, Bytes("226.00 MiB"));
    EXPECT_TRUE(LooksLikeOomMessage(text));
    EXPECT_LT(ms, 250.0) << "100 kB should take well under a millisecond or so";
  }
  // 10 MB of the same: linear, not quadratic. The same message with the same numbers 100 times is
  // one failure printed 100 times.
  std::string big;
  for (int i = 0; i < 100; ++i) big += Noise(100, static_cast<unsigned>(i)) + kOld + "\n";
  const auto start = std::chrono::steady_clock::now();
  const auto found = FindOomMessages(big);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].repeat_lines.size(), 99u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(OomMessageText, SeveralInOneInputEachWithItsLine) {
  const std::string text = "log start\n" + kOld + "\nmore log\n" + kPytorch22 + "\n" +
                           "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for "
                           "176.00MiB (184549376B) on device ordinal 1\n";
  const auto messages = FindOomMessages(text);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].line, 2u);
  EXPECT_EQ(messages[0].device, "GPU 1");
  EXPECT_EQ(messages[1].line, 4u);
  EXPECT_EQ(messages[2].kind, OomMessageKind::kXlaRequest);
  EXPECT_EQ(messages[2].request->bytes, 184549376u);
  EXPECT_EQ(messages[2].device, "device ordinal 1");
  // Two on one line (a log whose newlines were lost).
  const auto flat = FindOomMessages(kOld + " " + kPytorch22);
  ASSERT_EQ(flat.size(), 2u);
  EXPECT_EQ(flat[0].request->bytes, Bytes("20.00 MiB"));
  EXPECT_EQ(flat[0].total->bytes, Bytes("1.96 GiB"));
  EXPECT_EQ(flat[1].request->bytes, Bytes("226.00 MiB"));
  EXPECT_EQ(flat[1].total->bytes, Bytes("15.70 GiB"));
  EXPECT_FALSE(flat[1].reserved);
}

// XLA's log line and the Python exception of the same failure, a traceback apart, are one message
// (with the statistics); a different request after them is another.
TEST(OomMessageText, XlasRepeatOfOneFailureIsOneMessage) {
  std::string text =
      "E0528 07:02:44.350251   27487 pjrt_stream_executor_client.cc:2826] Execution of replica 0 failed: "
      "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2110783616 bytes.\n"
      "BufferAssignment OOM Debugging.\nBufferAssignment stats:\n"
      "             parameter allocation:    1.02GiB\n"
      "                 total allocation:    7.88GiB\n\n"
      "Traceback (most recent call last):\n";
  for (int i = 0; i < 40; ++i) text += "  File \"model.py\", line " + std::to_string(i) + ", in f\n    y = g(x)\n";
  text += "ValueError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2110783616 bytes.\n";
  auto messages = FindOomMessages(text);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].request->bytes, 2110783616u);
  EXPECT_TRUE(messages[0].xla.has_value());
  text += "ValueError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1048576 bytes.\n";
  messages = FindOomMessages(text);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].request->bytes, 1048576u);
}

TEST(OomMessageText, WrappedAndCrLfLines) {
  const std::string wrapped =
      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity;\r\n"
      "1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\r\n";
  const auto messages = FindOomMessages(wrapped);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].end_line, 2u);
  ASSERT_TRUE(messages[0].reserved);
  EXPECT_EQ(messages[0].reserved->bytes, Bytes("1.25 GiB"));
}

TEST(OomMessageSizes, EveryUnitAndTolerance) {
  struct Case {
    const char* text;
    std::uint64_t bytes;
    std::uint64_t tolerance;
  };
  const Case cases[] = {
      {"0 bytes", 0, 0},
      {"4770354232 bytes", 4770354232u, 0},
      {"3206250496B", 3206250496u, 0},
      {"0B", 0, 0},
      {"1024.00 KiB", 1048576, 5},
      {"48.5KiB", 49664, 51},
      {"1.69 GiB", 1814623683u, 5368709},
      {"21.95G", 23568633037u, 5368709},
      {"32.00M", 33554432, 5242},
      {"7.43 GB", 7977901752u, 5368709},
      {"129.21 MB", 135486505, 5242},
      {"2.00 TiB", std::uint64_t{2} << 40, 5497558138u},
  };
  for (const Case& c : cases) {
    const auto size = ParsePrintedSize(c.text);
    ASSERT_TRUE(size) << c.text;
    EXPECT_EQ(size->bytes, c.bytes) << c.text;
    EXPECT_EQ(size->tolerance, c.tolerance) << c.text;
  }
  for (const char* bad : {"", "GiB", "12", "1.5 parsecs", "-3 MiB", "1.2.3 GiB"}) {
    EXPECT_FALSE(ParsePrintedSize(bad)) << bad;
  }
  bool oversize = false;
  EXPECT_FALSE(ParsePrintedSize("99999999999 GiB", &oversize));
  EXPECT_TRUE(oversize);
  EXPECT_FALSE(ParsePrintedSize("17179869184.00 GiB", &oversize));  // 2^64: SIZE_MAX as PyTorch prints it
  EXPECT_TRUE(oversize);
  EXPECT_TRUE(ParsePrintedSize("4.00 EiB", &oversize));  // the cap itself
  EXPECT_FALSE(oversize);
  EXPECT_FALSE(ParsePrintedSize("4.01 EiB", &oversize));
  EXPECT_TRUE(oversize);
  EXPECT_FALSE(ParsePrintedSize(std::string(5000, '9') + " GiB", &oversize));
  EXPECT_TRUE(oversize);
}

TEST(OomMessageHostile, HugeNumbersAreProblemsNotCrashes) {
  const auto messages = FindOomMessages(
      "RuntimeError: CUDA out of memory. Tried to allocate 99999999999 GiB (GPU 0; 11.17 GiB total capacity; "
      "10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_FALSE(messages[0].request);
  ASSERT_EQ(messages[0].problems.size(), 1u);
  EXPECT_NE(messages[0].problems[0].find("99999999999 GiB"), std::string::npos) << messages[0].problems[0];
  EXPECT_NE(messages[0].problems[0].find("4 EiB"), std::string::npos);
  EXPECT_TRUE(messages[0].total);  // the rest is read

  const auto tensor = FindOomMessages(
      "OOM when allocating tensor with shape[4294967296,4294967296,4294967296] and type float on GPU");
  ASSERT_EQ(tensor.size(), 1u);
  EXPECT_FALSE(tensor[0].request);
  EXPECT_EQ(tensor[0].problems.size(), 1u);
}

TEST(OomMessageHostile, TruncatedAndGarbageLinesNeverThrow) {
  const std::string full = kPytorch22 + "\n" + kOld + "\nMPS backend out of memory (MPS allocated: 9.57 GiB, other "
                           "allocations: 17.35 GiB, max allowed: 27.20 GiB). Tried to allocate 292.50 MiB on private pool.\n"
                           "Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated : 1 GiB\n"
                           "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.\nBufferAssignment stats:\n"
                           "   total allocation:   12.00MiB\n"
                           "Ran out of memory in memory space hbm. Used 21.95G of 15.48G hbm.\n";
  // Every prefix of the text: no throw, no crash, each found message sane.
  for (std::size_t n = 0; n <= full.size(); n += 7) {
    const std::string_view prefix(full.data(), n);
    std::vector<OomMessage> messages;
    ASSERT_NO_THROW(messages = FindOomMessages(prefix)) << n;
    for (const OomMessage& m : messages) {
      EXPECT_LE(m.line, m.end_line);
      if (m.request) {
        EXPECT_TRUE(IsRepresentableSize(m.request->bytes));
      }
    }
  }
  EXPECT_TRUE(FindOomMessages(std::string("CUDA out of memory\0binary", 25)).empty());
  EXPECT_TRUE(FindOomMessages("Tried to allocate").size() == 1u);
  EXPECT_FALSE(FindOomMessages("Tried to allocate")[0].request);
  EXPECT_TRUE(FindOomMessages("").empty());
  EXPECT_FALSE(LooksLikeOomMessage("the memory of an elephant"));
}

}  // namespace
}  // namespace fragscope::traces
