#include "gzip_text.hpp"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces::gzip {
namespace {

// Inflates `bytes` into `out` until the input ends or `out` holds `limit` bytes; returns zlib's
// last status (Z_STREAM_END when every member ended cleanly) and sets *over when output was cut.
int Inflate(std::string_view bytes, std::uint64_t limit, std::string* out, bool* over, std::uint64_t* consumed) {
  z_stream stream{};
  // 15 + 32: a zlib or gzip header, detected.
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return Z_MEM_ERROR;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  int status = Z_OK;
  std::uint64_t left = bytes.size();
  char buffer[1 << 16];
  *over = false;
  while (true) {
    if (stream.avail_in == 0 && left > 0) {
      const auto chunk = static_cast<uInt>(std::min<std::uint64_t>(left, 1u << 30));
      stream.avail_in = chunk;
      left -= chunk;
    }
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    const std::size_t produced = sizeof buffer - stream.avail_out;
    if (out->size() + produced > limit) {
      out->append(buffer, static_cast<std::size_t>(limit - out->size()));
      *over = true;
      break;
    }
    out->append(buffer, produced);
    if (status == Z_STREAM_END) {
      // Another member may follow (concatenated .gz files are one stream to gunzip).
      if (stream.avail_in == 0 && left == 0) break;
      if (inflateReset(&stream) != Z_OK) break;
      continue;
    }
    if (status != Z_OK) break;                                        // damaged
    if (stream.avail_in == 0 && left == 0 && produced == 0) break;    // truncated
  }
  *consumed = stream.total_in;
  inflateEnd(&stream);
  return status;
}

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string Gunzip(std::string_view bytes, const std::string& name, std::uint64_t max_bytes,
                   std::optional<std::uint64_t>* cut_at) {
  std::string out;
  bool over = false;
  std::uint64_t consumed = 0;
  const int status = Inflate(bytes, max_bytes, &out, &over, &consumed);
  if (over) {
    throw TraceError(name, fmt::format("gzip data expands past {} ({} bytes), more than fragscope reads of "
                                       "one compressed file", FormatBytes(max_bytes), max_bytes));
  }
  const bool truncated = status == Z_OK || status == Z_BUF_ERROR;
  if (truncated && cut_at != nullptr) {
    *cut_at = consumed;
    return out;
  }
  if (status != Z_STREAM_END) {
    throw TraceError(name, consumed, fmt::format("gzip data is {} after {} compressed bytes ({} bytes out)",
                                                 truncated ? "truncated" : "damaged",
                                                 consumed, out.size()));
  }
  return out;
}

std::string GunzipPrefix(std::string_view bytes, std::size_t max_bytes) {
  std::string out;
  bool over = false;
  std::uint64_t consumed = 0;
  (void)Inflate(bytes, max_bytes, &out, &over, &consumed);
  return out;
}

}  // namespace fragscope::traces::gzip
