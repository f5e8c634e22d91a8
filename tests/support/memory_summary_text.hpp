// torch.cuda.memory_summary() tables written by the tests in the format's shape (75 columns between
// '|', a 21-character metric column, 10-character number columns), with the tests' own numbers:
// the readers' tests build whole tables, cut ones and damaged ones from these pieces.
#pragma once

#include <string>

#include <fmt/format.h>

namespace fragscope::testing::summary {

inline std::string Rule(char c) { return "|" + std::string(75, c) + "|\n"; }

// The title, the counters line and the column header, as PyTorch prints them before the rows.
inline std::string Head(int device, int ooms, int retries, const char* backend = "CUDA") {
  return Rule('=') + fmt::format("|{:^75}|\n", fmt::format("PyTorch {} memory summary, device ID {}", backend, device)) +
         Rule('-') +
         fmt::format("|{:^36}|{:^38}|\n", fmt::format("{} OOMs: {}", backend, ooms),
                     fmt::format("cudaMalloc retries: {}", retries)) +
         Rule('=') + "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n";
}

inline std::string Row(const std::string& name, const std::string& cur, const std::string& peak,
                       const std::string& alloc, const std::string& freed) {
  return fmt::format("| {:<21} | {:>10} | {:>10} | {:>10} | {:>10} |\n", name, cur, peak, alloc, freed);
}

// A metric's three rows (all, large pool, small pool) after a rule.
inline std::string Metric(const std::string& name, const std::string (&all)[4], const std::string (&large)[4],
                          const std::string (&small)[4]) {
  return Rule('-') + Row(name, all[0], all[1], all[2], all[3]) +
         Row("      from large pool", large[0], large[1], large[2], large[3]) +
         Row("      from small pool", small[0], small[1], small[2], small[3]);
}

// A whole table of a recent PyTorch (KiB/MiB units, the Requested and Oversize rows): 13.99 GiB
// allocated, 14.24 GiB reserved, 261.35 MiB non-releasable on `device`.
inline std::string NewTable(int device, int ooms, int retries) {
  return Head(device, ooms, retries) +
         Metric("Allocated memory", {"14324 MiB", "14400 MiB", "20000 MiB", "5676 MiB"},
                {"14300 MiB", "14376 MiB", "19000 MiB", "4700 MiB"}, {"24 MiB", "30 MiB", "1000 MiB", "976 MiB"}) +
         Metric("Active memory", {"14324 MiB", "14400 MiB", "20000 MiB", "5676 MiB"},
                {"14300 MiB", "14376 MiB", "19000 MiB", "4700 MiB"}, {"24 MiB", "30 MiB", "1000 MiB", "976 MiB"}) +
         Metric("Requested memory", {"14320 MiB", "14396 MiB", "19990 MiB", "5670 MiB"},
                {"14297 MiB", "14373 MiB", "18991 MiB", "4694 MiB"}, {"23 MiB", "29 MiB", "999 MiB", "976 MiB"}) +
         Metric("GPU reserved memory", {"14586 MiB", "14600 MiB", "14600 MiB", "14 MiB"},
                {"14560 MiB", "14574 MiB", "14574 MiB", "14 MiB"}, {"26 MiB", "26 MiB", "26 MiB", "0 B"}) +
         Metric("Non-releasable memory", {"267624 KiB", "273856 KiB", "773 MiB", "524823 KiB"},
                {"266112 KiB", "272320 KiB", "771 MiB", "524288 KiB"}, {"1512 KiB", "2047 KiB", "1 MiB", "535 KiB"}) +
         Metric("Allocations", {"387", "390", "9220 K", "9219 K"}, {"290", "291", "1200 K", "1199 K"},
                {"97", "99", "8020 K", "8019 K"}) +
         Metric("Active allocs", {"387", "390", "9220 K", "9219 K"}, {"290", "291", "1200 K", "1199 K"},
                {"97", "99", "8020 K", "8019 K"}) +
         Metric("GPU reserved segments", {"240", "241", "242", "2"}, {"227", "228", "229", "2"}, {"13", "13", "13", "0"}) +
         Metric("Non-releasable allocs", {"67", "70", "4000 K", "4000 K"}, {"66", "69", "1000 K", "1000 K"},
                {"1", "3", "3000 K", "3000 K"}) +
         Rule('-') + Row("Oversize allocations", "0", "0", "0", "0") + Rule('-') +
         Row("Oversize GPU segments", "0", "0", "0", "0") + Rule('=');
}

// A whole table of an older PyTorch (KB/MB units, no Requested or Oversize rows).
inline std::string OldTable(int device, int ooms, int retries) {
  return Head(device, ooms, retries) +
         Metric("Allocated memory", {"1062 MB", "4877 MB", "89299 MB", "88237 MB"},
                {"1048 MB", "4865 MB", "89263 MB", "88215 MB"}, {"14 MB", "14 MB", "35 MB", "21 MB"}) +
         Metric("Active memory", {"1062 MB", "4877 MB", "89299 MB", "88237 MB"},
                {"1048 MB", "4865 MB", "89263 MB", "88215 MB"}, {"14 MB", "14 MB", "35 MB", "21 MB"}) +
         Metric("GPU reserved memory", {"12420 MB", "12420 MB", "16924 MB", "4504 MB"},
                {"12404 MB", "12404 MB", "16900 MB", "4496 MB"}, {"16 MB", "16 MB", "24 MB", "8 MB"}) +
         Metric("Non-releasable memory", {"11357 MB", "11400 MB", "60000 MB", "48643 MB"},
                {"11355 MB", "11398 MB", "59990 MB", "48635 MB"}, {"1972 KB", "2047 KB", "10240 KB", "8268 KB"}) +
         Metric("Allocations", {"300", "400", "71826", "71526"}, {"31", "150", "30693", "30662"},
                {"269", "250", "41133", "40864"}) +
         Rule('=');
}

}  // namespace fragscope::testing::summary
