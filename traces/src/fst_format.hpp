// Constants and fixed layouts of the .fst trace format, version 1.1. docs/trace-format.md is the
// specification; this file and it must agree. Internal to traces/src.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace fragscope::traces::detail {

inline constexpr std::uint16_t kFormatMajor = 1;
inline constexpr std::uint16_t kFormatMinor = 1;

// File header: magic (8), major (u16), minor (u16), header length (u32), header JSON, CRC-32C (u32)
// of every byte before it.
inline constexpr std::array<std::uint8_t, 8> kMagic = {0x89, 'F', 'S', 'T', 0x0D, 0x0A, 0x1A, 0x0A};
inline constexpr std::size_t kFileHeaderFixed = 16;   // magic + versions + length
inline constexpr std::uint32_t kMaxHeaderJson = 16u << 20;

// Block header, little endian:
//   0  sync marker (8)      8  header size (u16)     10 flags (u16)
//   12 payload size (u32)   16 raw size (u32)        20 event count (u32)
//   24 first seq (u64)      32 first time ns (u64)   40 payload CRC-32C (u32)
//   44 header CRC-32C (u32) of bytes [0, 44)
// A later minor version may put more header fields in [48, header size); the payload CRC covers
// them together with the payload, so the fixed 48 bytes always validate on their own.
inline constexpr std::array<std::uint8_t, 8> kSync = {0xF5, 'B', 'L', 'K', 0x0D, 0x0A, 0x87, 0x1A};
inline constexpr std::size_t kBlockHeaderSize = 48;
inline constexpr std::size_t kMaxBlockHeaderSize = 4096;  // later minor versions may append fields
inline constexpr std::uint16_t kFlagEnd = 0x0001;          // end-of-trace block
inline constexpr std::uint16_t kKnownFlags = kFlagEnd;

// Limits every reader enforces before allocating, and every writer respects.
inline constexpr std::uint32_t kMaxBlockEvents = 1u << 20;
inline constexpr std::uint32_t kMaxRawPayload = 64u << 20;
inline constexpr std::uint32_t kMaxNameBytes = 64u << 10;
// A writer closes a block early when its raw payload passes this many bytes.
inline constexpr std::size_t kSplitRawPayload = 8u << 20;

// Event kind byte: bits 0-3 the EventType, bit 4 "free matched to an alloc earlier in the block",
// bit 5 "extra fields follow", bits 6-7 reserved (zero).
inline constexpr std::uint8_t kKindTypeMask = 0x0F;
inline constexpr std::uint8_t kKindMatched = 0x10;
inline constexpr std::uint8_t kKindExtras = 0x20;
inline constexpr std::uint8_t kKindReserved = 0xC0;

// Extra-field mask bits (fields an event type does not normally carry but this event has).
inline constexpr std::uint32_t kExtraStream = 1u << 0;
inline constexpr std::uint32_t kExtraAddress = 1u << 1;
inline constexpr std::uint32_t kExtraSize = 1u << 2;
inline constexpr std::uint32_t kExtraRounded = 1u << 3;
inline constexpr std::uint32_t kExtraRegion = 1u << 4;
inline constexpr std::uint32_t kExtraAllocId = 1u << 5;
inline constexpr std::uint32_t kExtraTag = 1u << 6;
inline constexpr std::uint32_t kExtraKnown = 0x7F;

// Columns of a block payload, in the order they are stored.
enum Column : std::size_t {
  kColKind,
  kColSeq,
  kColTime,
  kColDevice,
  kColThread,
  kColTag,
  kColStream,
  kColAddress,
  kColSize,
  kColRounded,
  kColRegion,
  kColAllocId,
  kColRef,
  kColOom,
  kColExtra,
  // 1.1: per oom event, a varint of the OomField bits its numbers lack (traces/oom.hpp). An empty
  // or missing column (every 1.0 file) means every oom of the block has all its numbers.
  kColOomAbsent,
  kColumnCount,
};

}  // namespace fragscope::traces::detail
