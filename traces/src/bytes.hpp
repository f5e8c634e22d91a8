// Little-endian integers, LEB128 varints and zigzag deltas: the primitives of the .fst format
// (docs/trace-format.md, "Primitives"). Internal to traces/src.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fragscope::traces::detail {

// Zigzag maps a signed 64-bit value to an unsigned one so that small magnitudes stay small:
// 0, -1, 1, -2, 2 ... -> 0, 1, 2, 3, 4 ...
inline std::uint64_t ZigZag(std::int64_t value) {
  return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}
inline std::int64_t UnZigZag(std::uint64_t value) {
  return static_cast<std::int64_t>((value >> 1) ^ (0 - (value & 1)));
}
// `value - base` modulo 2^64, read as a signed difference and zigzagged: exact for every pair.
inline std::uint64_t Delta(std::uint64_t value, std::uint64_t base) {
  return ZigZag(static_cast<std::int64_t>(value - base));
}
inline std::uint64_t Undelta(std::uint64_t zigzagged, std::uint64_t base) {
  return base + static_cast<std::uint64_t>(UnZigZag(zigzagged));
}
// Sizes round up to 256 bytes; modulo 2^64, so that every value has a defined prediction.
inline std::uint64_t RoundUp256(std::uint64_t size) { return (size + 255) & ~std::uint64_t{255}; }

inline void StoreLe16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
inline void StoreLe32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline void StoreLe64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint16_t LoadLe16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
inline std::uint32_t LoadLe32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline std::uint64_t LoadLe64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A growable byte buffer that appends varints without bounds checks per byte.
class ByteBuffer {
 public:
  void Clear() { size_ = 0; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::uint8_t* data() const { return data_.data(); }

  void PutByte(std::uint8_t byte) {
    Ensure(1);
    data_[size_++] = byte;
  }
  void PutVarint(std::uint64_t value) {
    Ensure(10);
    std::uint8_t* p = data_.data() + size_;
    while (value >= 0x80) {
      *p++ = static_cast<std::uint8_t>(value | 0x80);
      value >>= 7;
    }
    *p++ = static_cast<std::uint8_t>(value);
    size_ = static_cast<std::size_t>(p - data_.data());
  }
  void PutBytes(const void* bytes, std::size_t n) {
    if (n == 0) return;
    Ensure(n);
    std::memcpy(data_.data() + size_, bytes, n);
    size_ += n;
  }
  void PutString(std::string_view text) {
    PutVarint(text.size());
    PutBytes(text.data(), text.size());
  }

 private:
  void Ensure(std::size_t n) {
    if (data_.size() - size_ < n) data_.resize(std::max<std::size_t>(data_.size() * 2, size_ + n + 256));
  }
  std::vector<std::uint8_t> data_;
  std::size_t size_ = 0;
};

inline std::size_t VarintSize(std::uint64_t value) {
  std::size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Thrown by ByteReader (and the block decoder) on malformed bytes; the reader turns it into a
// warning about the block. Never escapes traces/src.
struct DecodeError {
  const char* what;
};

// Reads primitives from [begin, end), every read bounds-checked.
class ByteReader {
 public:
  ByteReader() = default;
  ByteReader(const std::uint8_t* begin, std::size_t size) : p_(begin), end_(begin + size) {}

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }
  bool empty() const { return p_ == end_; }
  const std::uint8_t* position() const { return p_; }

  std::uint8_t Byte(const char* what) {
    if (p_ == end_) throw DecodeError{what};
    return *p_++;
  }
  std::uint64_t Varint(const char* what) {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw DecodeError{what};
      const std::uint8_t byte = *p_++;
      // The tenth byte may only carry the top bit of a 64-bit value.
      if (shift == 63 && byte > 1) throw DecodeError{"varint overflows 64 bits"};
      value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    throw DecodeError{"varint longer than 10 bytes"};
  }
  std::uint32_t Varint32(const char* what) {
    const std::uint64_t value = Varint(what);
    if (value > 0xFFFFFFFFu) throw DecodeError{what};
    return static_cast<std::uint32_t>(value);
  }
  // A slice of the next `n` bytes.
  ByteReader Take(std::uint64_t n, const char* what) {
    if (n > remaining()) throw DecodeError{what};
    ByteReader slice(p_, static_cast<std::size_t>(n));
    p_ += n;
    return slice;
  }
  std::string_view Bytes(std::uint64_t n, const char* what) {
    if (n > remaining()) throw DecodeError{what};
    std::string_view view(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
    p_ += n;
    return view;
  }

 private:
  const std::uint8_t* p_ = nullptr;
  const std::uint8_t* end_ = nullptr;
};

}  // namespace fragscope::traces::detail
