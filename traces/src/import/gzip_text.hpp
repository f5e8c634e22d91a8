// gzip, undone in memory with zlib: for importers of formats that are often stored compressed
// (torch.profiler writes .pt.trace.json.gz).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fragscope::traces::gzip {

// Whether `bytes` starts with the gzip magic (1f 8b).
bool IsGzip(std::string_view bytes);

// The uncompressed bytes of `bytes` (one gzip member or several, concatenated), at most
// `max_bytes` of them. Throws TraceError naming `name` when the data is damaged or truncated, or
// expands past `max_bytes`. With `cut_at`, data that ends before its stream does (a file cut while
// it was written) is no error: what it expands to so far is returned, and *cut_at is set to the
// compressed bytes read (left empty when the data is whole).
std::string Gunzip(std::string_view bytes, const std::string& name, std::uint64_t max_bytes,
                   std::optional<std::uint64_t>* cut_at = nullptr);

// The first `max_bytes` bytes it expands to, or fewer when it is shorter or damaged there (for
// sniffing: never throws).
std::string GunzipPrefix(std::string_view bytes, std::size_t max_bytes);

}  // namespace fragscope::traces::gzip
