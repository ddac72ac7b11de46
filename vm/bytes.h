// Little-endian integers, LEB128 varints and length-prefixed strings: the
// encoding every ppy file format uses (vm/serialize.h, asmjit-backend/code_cache.h).
// The reader checks every bound and remembers the first failure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppy {

class Writer {
 public:
  void Bytes(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  void U8(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void U32(uint32_t value) {
    for (int i = 0; i < 4; ++i) U8(static_cast<uint8_t>(value >> (8 * i)));
  }
  void U64(uint64_t value) {
    for (int i = 0; i < 8; ++i) U8(static_cast<uint8_t>(value >> (8 * i)));
  }
  void Varint(uint64_t value) {
    while (value >= 0x80) {
      U8(static_cast<uint8_t>(value | 0x80));
      value >>= 7;
    }
    U8(static_cast<uint8_t>(value));
  }
  void Signed(int64_t value) { Varint((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63)); }
  void Str(std::string_view text) {
    Varint(text.size());
    Bytes(text.data(), text.size());
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }

  std::string_view Take(size_t size) {
    if (!ok_ || size > remaining()) {
      ok_ = false;
      return {};
    }
    std::string_view taken = data_.substr(pos_, size);
    pos_ += size;
    return taken;
  }
  uint8_t U8() {
    std::string_view b = Take(1);
    return ok_ ? static_cast<uint8_t>(b[0]) : 0;
  }
  uint32_t U32() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(U8()) << (8 * i);
    return value;
  }
  uint64_t U64() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(U8()) << (8 * i);
    return value;
  }
  uint64_t Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = U8();
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    ok_ = false;
    return 0;
  }
  // A varint that counts something in memory: bounded so that a corrupt count
  // cannot make the reader allocate without limit.
  size_t Count(size_t limit) {
    uint64_t value = Varint();
    if (value > limit) ok_ = false;
    return ok_ ? static_cast<size_t>(value) : 0;
  }
  int64_t Signed() {
    uint64_t value = Varint();
    return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
  }
  std::string Str() {
    size_t size = Count(remaining());
    return std::string(Take(size));
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, no
// code point past U+10FFFF) without NUL characters. Every name and header
// string read from a cache file must be: Python decodes them strictly (a bad
// one would raise UnicodeDecodeError where a corrupt entry must be reported)
// and C code passes them on as C strings.
inline bool IsValidText(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  for (size_t i = 0; i < size;) {
    const unsigned char lead = bytes[i];
    if (lead == 0) return false;
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code, lowest;
    if ((lead & 0xE0) == 0xC0) {
      length = 2, code = lead & 0x1F, lowest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, code = lead & 0x0F, lowest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, code = lead & 0x07, lowest = 0x10000;
    } else {
      return false;  // a continuation byte, or a lead byte no code point has
    }
    if (size - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return false;
      code = (code << 6) | (bytes[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past Unicode's last.
    if (code < lowest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

}  // namespace ppy
