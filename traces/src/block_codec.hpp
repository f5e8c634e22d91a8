// Encoding and decoding of .fst blocks (docs/trace-format.md, "Blocks" and "Payload"). The writer
// buffers compact BufferedEvents; BlockEncoder turns a sealed batch of them into one or more
// on-disk blocks; BlockDecoder turns one block's raw payload back into Events. Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bytes.hpp"
#include "fragscope/traces/event.hpp"
#include "fragscope/traces/tag_table.hpp"
#include "fst_format.hpp"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace fragscope::traces::detail {

// An Event without its OomRecord: what TraceWriter::Record copies under the lock.
struct BufferedEvent {
  std::uint64_t seq;
  std::uint64_t time_ns;
  std::uint64_t stream;
  std::uint64_t address;
  std::uint64_t size;
  std::uint64_t rounded;
  std::uint64_t region;
  std::uint64_t alloc_id;
  std::uint32_t device;
  std::uint32_t thread;
  TagId tag;
  EventType type;
};

// Events sealed for writing, and what the tag table looked like when they were sealed.
struct Batch {
  std::vector<BufferedEvent> events;
  std::vector<OomRecord> ooms;   // one per kOom event, in order
  std::uint32_t tag_count = 0;   // tag table size at sealing: names up to this id go out with it
  std::uint64_t next_seq = 0;    // the writer's next seq at sealing
  void clear() {
    events.clear();
    ooms.clear();
  }
};

// The fixed part of a block header, as read from disk.
struct BlockHeader {
  std::uint16_t header_size = 0;
  std::uint16_t flags = 0;
  std::uint32_t payload_size = 0;
  std::uint32_t raw_size = 0;
  std::uint32_t event_count = 0;
  std::uint64_t first_seq = 0;
  std::uint64_t first_time_ns = 0;
  std::uint32_t payload_crc = 0;
  std::uint32_t header_crc = 0;
};

// Parses the 48 fixed bytes at `bytes` (sync marker included). Does not check the CRC.
BlockHeader ParseBlockHeader(const std::uint8_t* bytes);
// CRC of the 48 fixed header bytes at `bytes` (covers bytes [0, 44)).
std::uint32_t BlockHeaderCrc(const std::uint8_t* bytes);

class BlockEncoder {
 public:
  explicit BlockEncoder(int compression_level);
  ~BlockEncoder();
  BlockEncoder(const BlockEncoder&) = delete;
  BlockEncoder& operator=(const BlockEncoder&) = delete;

  // Appends to `out` the on-disk blocks for `batch`: usually one; more when the names or the raw
  // payload would pass kSplitRawPayload. Names of ids that no earlier block carried come from
  // `tags`. Returns the number of blocks appended. Throws std::runtime_error on a zstd failure.
  std::size_t Encode(const Batch& batch, const TagTable& tags, std::vector<std::uint8_t>* out);
  // Appends the end-of-trace block.
  void EncodeEnd(std::uint64_t total_events, std::uint64_t total_blocks, std::uint64_t next_seq,
                 std::vector<std::uint8_t>* out);
  // True when `tag_count` names include some that no block has carried yet.
  bool HasNewNames(std::uint32_t tag_count) const { return tag_count > written_names_; }

 private:
  struct DeviceState {
    std::uint64_t cursor = 0;
    std::uint64_t region = 0;
    std::uint64_t alloc_id = 0;
  };
  struct MatchEntry {
    std::uint64_t address;
    std::uint32_t device;
    std::uint32_t index_plus_one;  // 0: empty slot
  };

  void BeginBlock();
  void AddName(TagId id);
  std::uint64_t LocalTag(TagId tag) const;
  DeviceState& State(std::uint32_t device);
  void EncodeEvent(const Batch& batch, std::size_t index, std::size_t block_begin, std::size_t* oom_index);
  void ResetMatches(std::size_t events);
  const BufferedEvent* FindMatch(const Batch& batch, const BufferedEvent& free, std::size_t block_begin,
                                 std::size_t* index);
  void RememberAlloc(const BufferedEvent& alloc, std::size_t index);
  std::size_t RawColumnBytes() const;
  // Assembles raw_ from the name table and the columns.
  void BuildPayload();
  // Compresses raw_ and appends header and payload to `out`.
  void EmitBlock(std::uint16_t flags, std::uint32_t event_count, std::uint64_t first_seq,
                 std::uint64_t first_time_ns, std::vector<std::uint8_t>* out);

  int level_;
  ZSTD_CCtx_s* cctx_ = nullptr;
  std::vector<std::string> names_;         // every name seen, by id - 1
  std::uint32_t written_names_ = 0;        // ids 1..this went out in some block
  std::vector<std::uint32_t> local_;       // by id: block-local index (1-based), 0 when absent
  std::vector<TagId> table_;               // this block's names, ascending id
  std::size_t table_bytes_ = 0;
  ByteBuffer columns_[kColumnCount];
  ByteBuffer raw_;
  std::vector<std::uint8_t> compressed_;
  std::unordered_map<std::uint32_t, DeviceState> devices_;
  std::uint32_t cached_device_ = 0;
  DeviceState* cached_state_ = nullptr;
  std::size_t block_ooms_ = 0;         // oom events encoded in the current block
  bool oom_absent_started_ = false;   // the presence column holds an entry per oom of this block
  std::vector<MatchEntry> matches_;
  std::size_t match_mask_ = 0;
};

// Reader-side tag dictionary: names in order of first appearance, ids 1, 2, 3, ...
class TagDictionary {
 public:
  TagId Intern(std::string_view name);
  const std::vector<std::string>& names() const { return names_; }
  std::string Name(TagId id) const { return id == kNoTag || id > names_.size() ? std::string() : names_[id - 1]; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> names_;
  std::unordered_map<std::string, TagId, Hash, std::equal_to<>> ids_;
};

class BlockDecoder {
 public:
  BlockDecoder();
  ~BlockDecoder();
  BlockDecoder(const BlockDecoder&) = delete;
  BlockDecoder& operator=(const BlockDecoder&) = delete;

  // Decompresses `payload` (`header` describes it) into raw bytes. Throws DecodeError.
  void Decompress(const BlockHeader& header, std::span<const std::uint8_t> payload);
  // Decodes the decompressed payload into events appended to `out`, tags interned in `tags`.
  // All or nothing: on DecodeError, `out` and `tags` are as before. Events of event types this
  // version does not know are dropped; their number is added to `*unknown`.
  void Decode(const BlockHeader& header, TagDictionary* tags, std::vector<Event>* out, std::uint64_t* unknown);
  // The raw payload of the last Decompress (for the end-of-trace block).
  std::span<const std::uint8_t> raw() const { return {raw_.data(), raw_size_}; }

 private:
  ZSTD_DCtx_s* dctx_ = nullptr;
  std::vector<std::uint8_t> raw_;
  std::size_t raw_size_ = 0;
};

}  // namespace fragscope::traces::detail
