// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF),
// the checksum of .fst headers and blocks. Crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fragscope::traces::detail {

// Continues a CRC: Crc32c(b, Crc32c(a)) == Crc32c(a followed by b). Start with crc = 0.
std::uint32_t Crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

}  // namespace fragscope::traces::detail
