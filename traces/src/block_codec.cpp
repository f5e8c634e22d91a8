#include "block_codec.hpp"

#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "crc32c.hpp"

namespace fragscope::traces::detail {
namespace {

// Which fields an event type carries in its own columns; anything else non-zero is an "extra".
std::uint32_t NativeFields(EventType type) {
  switch (type) {
    case EventType::kAlloc:
    case EventType::kFree:
      return kExtraStream | kExtraAddress | kExtraSize | kExtraRounded | kExtraRegion | kExtraAllocId | kExtraTag;
    case EventType::kRegionReserve:
    case EventType::kRegionRelease:
      return kExtraAddress | kExtraSize;
    case EventType::kOom:
      return kExtraStream | kExtraSize | kExtraRounded | kExtraTag;
    case EventType::kMarker:
      return kExtraTag;
    case EventType::kAddressReserve:
    case EventType::kAddressRelease:
    case EventType::kMap:
    case EventType::kUnmap:
      // The types of 1.1 have no columns of their own: address and size go in the extra column,
      // which a 1.0 reader decodes for types it does not know (4.8) and then drops the event.
      return 0;
  }
  return 0;
}

bool KnownType(std::uint8_t type) { return type != 0 && IsKnownEventType(static_cast<EventType>(type)); }

}  // namespace

BlockHeader ParseBlockHeader(const std::uint8_t* bytes) {
  BlockHeader h;
  h.header_size = LoadLe16(bytes + 8);
  h.flags = LoadLe16(bytes + 10);
  h.payload_size = LoadLe32(bytes + 12);
  h.raw_size = LoadLe32(bytes + 16);
  h.event_count = LoadLe32(bytes + 20);
  h.first_seq = LoadLe64(bytes + 24);
  h.first_time_ns = LoadLe64(bytes + 32);
  h.payload_crc = LoadLe32(bytes + 40);
  h.header_crc = LoadLe32(bytes + 44);
  return h;
}

std::uint32_t BlockHeaderCrc(const std::uint8_t* bytes) { return Crc32c(bytes, 44); }

// ---------------------------------------------------------------------------------------------
// Encoder

BlockEncoder::BlockEncoder(int compression_level)
    : level_(std::clamp(compression_level, ZSTD_minCLevel(), ZSTD_maxCLevel())), cctx_(ZSTD_createCCtx()) {
  if (cctx_ == nullptr) throw std::runtime_error("cannot create a zstd compression context");
  local_.assign(1, 0);
}

BlockEncoder::~BlockEncoder() { ZSTD_freeCCtx(cctx_); }

void BlockEncoder::BeginBlock() {
  for (auto& column : columns_) column.Clear();
  for (TagId id : table_) local_[id] = 0;
  table_.clear();
  table_bytes_ = 0;
  devices_.clear();
  cached_state_ = nullptr;
  block_ooms_ = 0;
  oom_absent_started_ = false;
}

void BlockEncoder::AddName(TagId id) {
  if (local_[id] != 0) return;
  local_[id] = 1;  // present; the real index is assigned once the table is sorted
  table_.push_back(id);
  table_bytes_ += VarintSize(names_[id - 1].size()) + names_[id - 1].size();
}

std::uint64_t BlockEncoder::LocalTag(TagId tag) const {
  return tag < local_.size() ? local_[tag] : 0;  // ids never interned are stored as "no tag"
}

BlockEncoder::DeviceState& BlockEncoder::State(std::uint32_t device) {
  if (cached_state_ == nullptr || cached_device_ != device) {
    cached_state_ = &devices_[device];  // unordered_map nodes are stable
    cached_device_ = device;
  }
  return *cached_state_;
}

void BlockEncoder::ResetMatches(std::size_t events) {
  const std::size_t want = std::bit_ceil(std::max<std::size_t>(1024, events * 2));
  if (matches_.size() != want) {
    matches_.assign(want, MatchEntry{0, 0, 0});
  } else {
    std::memset(static_cast<void*>(matches_.data()), 0, matches_.size() * sizeof(MatchEntry));
  }
  match_mask_ = want - 1;
}

namespace {
std::size_t MatchHash(std::uint64_t address, std::uint32_t device) {
  const std::uint64_t h = ((address >> 8) ^ (static_cast<std::uint64_t>(device) << 40)) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(h >> 20);
}
}  // namespace

void BlockEncoder::RememberAlloc(const BufferedEvent& alloc, std::size_t index) {
  std::size_t slot = MatchHash(alloc.address, alloc.device) & match_mask_;
  while (true) {
    MatchEntry& entry = matches_[slot];
    if (entry.index_plus_one == 0 || (entry.address == alloc.address && entry.device == alloc.device)) {
      entry = MatchEntry{alloc.address, alloc.device, static_cast<std::uint32_t>(index + 1)};
      return;
    }
    slot = (slot + 1) & match_mask_;
  }
}

const BufferedEvent* BlockEncoder::FindMatch(const Batch& batch, const BufferedEvent& free,
                                             std::size_t block_begin, std::size_t* index) {
  std::size_t slot = MatchHash(free.address, free.device) & match_mask_;
  while (true) {
    const MatchEntry& entry = matches_[slot];
    if (entry.index_plus_one == 0) return nullptr;
    if (entry.address == free.address && entry.device == free.device) {
      const std::size_t j = entry.index_plus_one - 1;
      if (j < block_begin) return nullptr;
      const BufferedEvent& alloc = batch.events[j];
      if (alloc.size != free.size || alloc.rounded != free.rounded || alloc.region != free.region ||
          alloc.stream != free.stream || alloc.alloc_id != free.alloc_id ||
          LocalTag(alloc.tag) != LocalTag(free.tag)) {
        return nullptr;
      }
      *index = j;
      return &alloc;
    }
    slot = (slot + 1) & match_mask_;
  }
}

void BlockEncoder::EncodeEvent(const Batch& batch, std::size_t index, std::size_t block_begin,
                               std::size_t* oom_index) {
  const BufferedEvent& e = batch.events[index];
  const auto raw_type = static_cast<std::uint8_t>(e.type);
  const std::uint8_t type = raw_type <= kKindTypeMask ? raw_type : 0;  // beyond 4 bits: unknown (0)
  const std::uint32_t native = NativeFields(e.type);
  std::uint32_t extras = 0;
  if (e.stream != 0) extras |= kExtraStream;
  if (e.address != 0) extras |= kExtraAddress;
  if (e.size != 0) extras |= kExtraSize;
  if (e.rounded != 0) extras |= kExtraRounded;
  if (e.region != 0) extras |= kExtraRegion;
  if (e.alloc_id != 0) extras |= kExtraAllocId;
  if (LocalTag(e.tag) != 0) extras |= kExtraTag;
  extras &= ~native;

  std::size_t match = 0;
  const bool matched = e.type == EventType::kFree && FindMatch(batch, e, block_begin, &match) != nullptr;

  std::uint8_t kind = type;
  if (matched) kind |= kKindMatched;
  if (extras != 0) kind |= kKindExtras;
  columns_[kColKind].PutByte(kind);

  const std::uint64_t prev_seq = index == block_begin ? batch.events[block_begin].seq - 1 : batch.events[index - 1].seq;
  const std::uint64_t prev_time = index == block_begin ? e.time_ns : batch.events[index - 1].time_ns;
  columns_[kColSeq].PutVarint(Delta(e.seq, prev_seq + 1));
  columns_[kColTime].PutVarint(Delta(e.time_ns, prev_time));
  columns_[kColDevice].PutVarint(e.device);
  columns_[kColThread].PutVarint(e.thread);

  switch (e.type) {
    case EventType::kAlloc:
    case EventType::kFree: {
      DeviceState& state = State(e.device);
      if (matched) {
        columns_[kColRef].PutVarint(index - match);
      } else {
        const bool alloc = e.type == EventType::kAlloc;
        columns_[kColTag].PutVarint(LocalTag(e.tag));
        columns_[kColStream].PutVarint(e.stream);
        columns_[kColAddress].PutVarint(Delta(e.address, state.cursor));
        columns_[kColSize].PutVarint(e.size);
        columns_[kColRounded].PutVarint(Delta(e.rounded, RoundUp256(e.size)));
        columns_[kColRegion].PutVarint(Delta(e.region, state.region));
        columns_[kColAllocId].PutVarint(Delta(e.alloc_id, state.alloc_id + (alloc ? 1 : 0)));
      }
      if (e.type == EventType::kAlloc) {
        state.cursor = e.address + e.rounded;
        state.region = e.region;
        state.alloc_id = e.alloc_id;
        RememberAlloc(e, index);
      } else {
        state.cursor = e.address;
      }
      break;
    }
    case EventType::kRegionReserve:
    case EventType::kRegionRelease: {
      DeviceState& state = State(e.device);
      columns_[kColAddress].PutVarint(Delta(e.address, state.cursor));
      columns_[kColSize].PutVarint(e.size);
      state.cursor = e.address;
      break;
    }
    case EventType::kOom: {
      columns_[kColTag].PutVarint(LocalTag(e.tag));
      columns_[kColStream].PutVarint(e.stream);
      columns_[kColSize].PutVarint(e.size);
      columns_[kColRounded].PutVarint(Delta(e.rounded, RoundUp256(e.size)));
      const OomRecord& oom = batch.ooms[(*oom_index)++];
      ByteBuffer& c = columns_[kColOom];
      for (std::uint64_t v : {oom.request, oom.rounded, oom.limit, oom.reserved, oom.in_use, oom.live_requested,
                              oom.free_in_regions, oom.largest_free, oom.headroom, oom.chunk_count, oom.region_count}) {
        c.PutVarint(v);
      }
      c.PutVarint(static_cast<std::uint8_t>(oom.cause));
      // One entry per oom once any oom of the block lacks a number; until then the column stays
      // empty (all present), so blocks of fragscope's own allocators carry no bytes for it.
      const std::uint64_t absent = ~std::uint64_t{oom.present} & kOomAllFields;
      if (absent != 0 && !oom_absent_started_) {
        for (std::size_t k = 0; k < block_ooms_; ++k) columns_[kColOomAbsent].PutVarint(0);
        oom_absent_started_ = true;
      }
      if (oom_absent_started_) columns_[kColOomAbsent].PutVarint(absent);
      ++block_ooms_;
      break;
    }
    case EventType::kMarker:
      columns_[kColTag].PutVarint(LocalTag(e.tag));
      break;
    case EventType::kAddressReserve:
    case EventType::kAddressRelease:
    case EventType::kMap:
    case EventType::kUnmap:
      break;  // address and size are extras (NativeFields); the cursor is left alone, as a 1.0 reader does
  }

  if (extras != 0) {
    ByteBuffer& c = columns_[kColExtra];
    c.PutVarint(extras);
    if (extras & kExtraStream) c.PutVarint(e.stream);
    if (extras & kExtraAddress) c.PutVarint(e.address);
    if (extras & kExtraSize) c.PutVarint(e.size);
    if (extras & kExtraRounded) c.PutVarint(e.rounded);
    if (extras & kExtraRegion) c.PutVarint(e.region);
    if (extras & kExtraAllocId) c.PutVarint(e.alloc_id);
    if (extras & kExtraTag) c.PutVarint(LocalTag(e.tag));
  }
}

std::size_t BlockEncoder::RawColumnBytes() const {
  std::size_t total = table_bytes_;
  for (const auto& column : columns_) total += column.size();
  return total;
}

void BlockEncoder::BuildPayload() {
  // Names, then the column directory, then the columns.
  raw_.Clear();
  raw_.PutVarint(table_.size());
  for (TagId id : table_) raw_.PutString(names_[id - 1]);
  raw_.PutVarint(kColumnCount);
  for (const auto& column : columns_) raw_.PutVarint(column.size());
  for (const auto& column : columns_) raw_.PutBytes(column.data(), column.size());
}

void BlockEncoder::EmitBlock(std::uint16_t flags, std::uint32_t event_count, std::uint64_t first_seq,
                             std::uint64_t first_time_ns, std::vector<std::uint8_t>* out) {
  const std::size_t bound = ZSTD_compressBound(raw_.size());
  if (compressed_.size() < bound) compressed_.resize(bound);
  const std::size_t compressed_size =
      ZSTD_compressCCtx(cctx_, compressed_.data(), compressed_.size(), raw_.data(), raw_.size(), level_);
  if (ZSTD_isError(compressed_size)) {
    throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(compressed_size));
  }

  std::uint8_t header[kBlockHeaderSize];
  std::memcpy(header, kSync.data(), kSync.size());
  StoreLe16(header + 8, static_cast<std::uint16_t>(kBlockHeaderSize));
  StoreLe16(header + 10, flags);
  StoreLe32(header + 12, static_cast<std::uint32_t>(compressed_size));
  StoreLe32(header + 16, static_cast<std::uint32_t>(raw_.size()));
  StoreLe32(header + 20, event_count);
  StoreLe64(header + 24, first_seq);
  StoreLe64(header + 32, first_time_ns);
  StoreLe32(header + 40, Crc32c(compressed_.data(), compressed_size));
  StoreLe32(header + 44, BlockHeaderCrc(header));
  out->insert(out->end(), header, header + kBlockHeaderSize);
  out->insert(out->end(), compressed_.data(), compressed_.data() + compressed_size);
}

std::size_t BlockEncoder::Encode(const Batch& batch, const TagTable& tags, std::vector<std::uint8_t>* out) {
  // Names of ids that appeared since the last batch.
  if (batch.tag_count > names_.size()) {
    names_.reserve(batch.tag_count);
    for (auto id = static_cast<TagId>(names_.size() + 1); id <= batch.tag_count; ++id) {
      std::string name = tags.Name(id);
      if (name.size() > kMaxNameBytes) name.resize(kMaxNameBytes);  // documented limit
      names_.push_back(std::move(name));
    }
    local_.resize(names_.size() + 1, 0);
  }
  const std::uint32_t known = static_cast<std::uint32_t>(names_.size());
  const std::size_t name_budget = kSplitRawPayload / 2;
  const std::size_t n = batch.events.size();
  std::size_t blocks = 0;
  std::size_t i = 0;
  std::size_t oom_index = 0;
  ResetMatches(n);
  while (true) {
    BeginBlock();
    // Names interned since the last block go out first, in id order, so that a reader interning
    // them in the order it meets them gives them the writer's ids.
    while (written_names_ < batch.tag_count && (table_bytes_ < name_budget || table_.empty())) {
      AddName(++written_names_);
    }
    if (written_names_ < batch.tag_count) {  // too many new names for one block: names alone
      BuildPayload();
      EmitBlock(0, 0, batch.next_seq, 0, out);
      ++blocks;
      continue;
    }
    // Names the next events use, up to the budget; those events are the most this block holds.
    std::size_t limit = i;
    for (; limit < n; ++limit) {
      const TagId tag = batch.events[limit].tag;
      if (tag == kNoTag || tag > known || local_[tag] != 0) continue;
      const std::size_t bytes = VarintSize(names_[tag - 1].size()) + names_[tag - 1].size();
      if (table_bytes_ + bytes > name_budget && limit > i) break;
      AddName(tag);
    }
    std::sort(table_.begin(), table_.end());
    for (std::size_t k = 0; k < table_.size(); ++k) local_[table_[k]] = static_cast<std::uint32_t>(k + 1);

    const std::size_t begin = i;
    while (i < limit) {
      // The match table is larger than the caches: fetch the slot of a later event ahead of time.
      constexpr std::size_t kAhead = 8;
      if (i + kAhead < limit) {
        const BufferedEvent& ahead = batch.events[i + kAhead];
        __builtin_prefetch(&matches_[MatchHash(ahead.address, ahead.device) & match_mask_]);
      }
      EncodeEvent(batch, i, begin, &oom_index);
      ++i;
      if ((i & 63) == 0 && RawColumnBytes() >= kSplitRawPayload) break;
    }
    const auto count = static_cast<std::uint32_t>(i - begin);
    BuildPayload();
    EmitBlock(0, count, count > 0 ? batch.events[begin].seq : batch.next_seq,
              count > 0 ? batch.events[begin].time_ns : 0, out);
    ++blocks;
    if (i >= n) break;
  }
  BeginBlock();  // resets local_ for the next batch
  return blocks;
}

void BlockEncoder::EncodeEnd(std::uint64_t total_events, std::uint64_t total_blocks, std::uint64_t next_seq,
                             std::vector<std::uint8_t>* out) {
  raw_.Clear();
  raw_.PutVarint(total_events);
  raw_.PutVarint(total_blocks);
  EmitBlock(kFlagEnd, 0, next_seq, 0, out);
}

// ---------------------------------------------------------------------------------------------
// Reader side

TagId TagDictionary::Intern(std::string_view name) {
  if (name.empty()) return kNoTag;
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  names_.emplace_back(name);
  const auto id = static_cast<TagId>(names_.size());
  ids_.emplace(names_.back(), id);
  return id;
}

BlockDecoder::BlockDecoder() : dctx_(ZSTD_createDCtx()) {
  if (dctx_ == nullptr) throw std::runtime_error("cannot create a zstd decompression context");
}

BlockDecoder::~BlockDecoder() { ZSTD_freeDCtx(dctx_); }

void BlockDecoder::Decompress(const BlockHeader& header, std::span<const std::uint8_t> payload) {
  if (header.raw_size > kMaxRawPayload) throw DecodeError{"raw payload size over the limit"};
  // zstd writes the content size into the frame; it must agree before anything is allocated.
  const unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content != header.raw_size) {
    throw DecodeError{"compressed payload does not match its raw size"};
  }
  if (raw_.size() < header.raw_size || raw_.empty()) raw_.resize(std::max<std::size_t>(header.raw_size, 1));
  const std::size_t got = ZSTD_decompressDCtx(dctx_, raw_.data(), header.raw_size, payload.data(), payload.size());
  if (ZSTD_isError(got) || got != header.raw_size) throw DecodeError{"zstd decompression failed"};
  raw_size_ = got;
}

void BlockDecoder::Decode(const BlockHeader& header, TagDictionary* tags, std::vector<Event>* out,
                          std::uint64_t* unknown) {
  ByteReader payload(raw_.data(), raw_size_);
  const std::uint64_t name_count = payload.Varint("name count");
  if (name_count > payload.remaining()) throw DecodeError{"name count larger than the payload"};
  std::vector<std::string_view> names;
  names.reserve(static_cast<std::size_t>(name_count));
  for (std::uint64_t k = 0; k < name_count; ++k) {
    const std::uint64_t length = payload.Varint("name length");
    if (length > kMaxNameBytes) throw DecodeError{"name longer than the limit"};
    names.push_back(payload.Bytes(length, "name bytes"));
  }
  const std::uint64_t column_count = payload.Varint("column count");
  if (column_count > payload.remaining()) throw DecodeError{"column count larger than the payload"};
  std::uint64_t lengths[kColumnCount] = {};
  std::uint64_t total = 0;
  for (std::uint64_t k = 0; k < column_count; ++k) {
    const std::uint64_t length = payload.Varint("column length");
    if (length > payload.remaining()) throw DecodeError{"column longer than the payload"};
    if (k < kColumnCount) lengths[k] = length;
    total += length;
  }
  if (total != payload.remaining()) throw DecodeError{"column lengths do not add up to the payload"};
  ByteReader col[kColumnCount];
  for (std::size_t k = 0; k < kColumnCount; ++k) col[k] = payload.Take(lengths[k], "column");

  if (header.event_count > kMaxBlockEvents) throw DecodeError{"event count over the limit"};
  if (header.event_count > col[kColKind].remaining()) throw DecodeError{"event count larger than the kind column"};

  struct DeviceState {
    std::uint64_t cursor = 0;
    std::uint64_t region = 0;
    std::uint64_t alloc_id = 0;
  };
  std::unordered_map<std::uint32_t, DeviceState> devices;
  DeviceState* cached = nullptr;
  std::uint32_t cached_device = 0;
  auto state = [&](std::uint32_t device) -> DeviceState& {
    if (cached == nullptr || cached_device != device) {
      cached = &devices[device];
      cached_device = device;
    }
    return *cached;
  };
  auto local_tag = [&](std::uint64_t local) -> TagId {
    if (local > names.size()) throw DecodeError{"tag index outside the block's name table"};
    return static_cast<TagId>(local);  // mapped to dictionary ids once the block decoded
  };

  // The 1.1 presence column: empty (or missing, in a 1.0 file) when every oom has all numbers.
  const bool ooms_with_absent = !col[kColOomAbsent].empty();
  const std::size_t base = out->size();
  std::uint64_t seq = header.first_seq - 1;
  std::uint64_t time = header.first_time_ns;
  std::uint64_t dropped = 0;
  try {
    out->reserve(base + header.event_count);
    for (std::uint32_t i = 0; i < header.event_count; ++i) {
      const std::uint8_t kind = col[kColKind].Byte("kind");
      if (kind & kKindReserved) throw DecodeError{"event uses encoding features of a newer format version"};
      const std::uint8_t type = kind & kKindTypeMask;
      Event& e = out->emplace_back();
      e.type = static_cast<EventType>(type);
      seq = Undelta(col[kColSeq].Varint("seq"), seq + 1);
      time = Undelta(col[kColTime].Varint("time"), time);
      e.seq = seq;
      e.time_ns = time;
      e.device = col[kColDevice].Varint32("device");
      e.thread = col[kColThread].Varint32("thread");
      if ((kind & kKindMatched) && e.type != EventType::kFree) throw DecodeError{"matched flag on a non-free event"};

      switch (e.type) {
        case EventType::kAlloc:
        case EventType::kFree: {
          DeviceState& s = state(e.device);
          if (kind & kKindMatched) {
            const std::uint64_t ref = col[kColRef].Varint("ref");
            if (ref == 0 || ref > i) throw DecodeError{"free refers outside its block"};
            const Event& alloc = (*out)[base + i - ref];
            if (alloc.type != EventType::kAlloc) throw DecodeError{"free refers to an event that is not an alloc"};
            e.tag = alloc.tag;
            e.stream = alloc.stream;
            e.address = alloc.address;
            e.size = alloc.size;
            e.rounded = alloc.rounded;
            e.region = alloc.region;
            e.alloc_id = alloc.alloc_id;
          } else {
            const bool alloc = e.type == EventType::kAlloc;
            e.tag = local_tag(col[kColTag].Varint("tag"));
            e.stream = col[kColStream].Varint("stream");
            e.address = Undelta(col[kColAddress].Varint("address"), s.cursor);
            e.size = col[kColSize].Varint("size");
            e.rounded = Undelta(col[kColRounded].Varint("rounded"), RoundUp256(e.size));
            e.region = Undelta(col[kColRegion].Varint("region"), s.region);
            e.alloc_id = Undelta(col[kColAllocId].Varint("alloc id"), s.alloc_id + (alloc ? 1 : 0));
          }
          if (e.type == EventType::kAlloc) {
            s.cursor = e.address + e.rounded;
            s.region = e.region;
            s.alloc_id = e.alloc_id;
          } else {
            s.cursor = e.address;
          }
          break;
        }
        case EventType::kRegionReserve:
        case EventType::kRegionRelease: {
          DeviceState& s = state(e.device);
          e.address = Undelta(col[kColAddress].Varint("address"), s.cursor);
          e.size = col[kColSize].Varint("size");
          s.cursor = e.address;
          break;
        }
        case EventType::kOom: {
          e.tag = local_tag(col[kColTag].Varint("tag"));
          e.stream = col[kColStream].Varint("stream");
          e.size = col[kColSize].Varint("size");
          e.rounded = Undelta(col[kColRounded].Varint("rounded"), RoundUp256(e.size));
          ByteReader& c = col[kColOom];
          OomRecord& oom = e.oom;
          for (std::uint64_t* v : {&oom.request, &oom.rounded, &oom.limit, &oom.reserved, &oom.in_use,
                                   &oom.live_requested, &oom.free_in_regions, &oom.largest_free, &oom.headroom,
                                   &oom.chunk_count, &oom.region_count}) {
            *v = c.Varint("oom field");
          }
          const std::uint64_t cause = c.Varint("oom cause");
          if (cause > 0xFF) throw DecodeError{"oom cause out of range"};
          oom.cause = static_cast<OomCause>(cause);
          // Bits of fields a later version may add are ignored: they name no number of this record.
          if (!col[kColOomAbsent].empty()) {
            oom.present = static_cast<std::uint16_t>(~col[kColOomAbsent].Varint("oom absent fields") & kOomAllFields);
          } else if (ooms_with_absent) {
            throw DecodeError{"oom presence column shorter than the block's oom events"};
          }
          break;
        }
        case EventType::kMarker:
          e.tag = local_tag(col[kColTag].Varint("tag"));
          break;
        case EventType::kAddressReserve:
        case EventType::kAddressRelease:
        case EventType::kMap:
        case EventType::kUnmap:
          break;  // address and size come from the extra column, as the writer put them (NativeFields)
      }

      if (kind & kKindExtras) {
        ByteReader& c = col[kColExtra];
        const std::uint64_t mask = c.Varint("extra mask");
        if (mask == 0 || (mask & ~std::uint64_t{kExtraKnown}) != 0) {
          throw DecodeError{"extra-field mask has bits this version does not know"};
        }
        if (KnownType(type) && (mask & NativeFields(e.type)) != 0) throw DecodeError{"extra field duplicates a column"};
        if (mask & kExtraStream) e.stream = c.Varint("extra stream");
        if (mask & kExtraAddress) e.address = c.Varint("extra address");
        if (mask & kExtraSize) e.size = c.Varint("extra size");
        if (mask & kExtraRounded) e.rounded = c.Varint("extra rounded");
        if (mask & kExtraRegion) e.region = c.Varint("extra region");
        if (mask & kExtraAllocId) e.alloc_id = c.Varint("extra alloc id");
        if (mask & kExtraTag) e.tag = local_tag(c.Varint("extra tag"));
      }
      if (const char* problem = EventSizeProblem(e)) throw DecodeError{problem};
      if (!KnownType(type)) ++dropped;
    }
    for (std::size_t k = 0; k < kColumnCount; ++k) {
      if (!col[k].empty()) throw DecodeError{"bytes left over in a column"};
    }
  } catch (...) {
    out->resize(base);
    throw;
  }

  // Intact: intern the block's names and map the local indices to dictionary ids.
  std::vector<TagId> ids(names.size() + 1, kNoTag);
  for (std::size_t k = 0; k < names.size(); ++k) ids[k + 1] = tags->Intern(names[k]);
  for (std::size_t k = base; k < out->size(); ++k) (*out)[k].tag = ids[(*out)[k].tag];
  if (dropped > 0) {
    out->erase(std::remove_if(out->begin() + static_cast<std::ptrdiff_t>(base), out->end(),
                              [](const Event& e) { return !KnownType(static_cast<std::uint8_t>(e.type)); }),
               out->end());
    *unknown += dropped;
  }
}

}  // namespace fragscope::traces::detail
