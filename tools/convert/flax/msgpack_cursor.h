// A bounds-checked msgpack token reader over a byte span: one call reads one object header
// (and, for str/bin/ext, takes its payload as a view). Maps and arrays report their element
// count; the caller reads the elements. Counts are checked against the bytes remaining (each
// element needs at least one byte), so no count can make a caller loop past the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "longrun/status.h"

namespace longrun::checkpoint {

enum class MsgpackKind : uint8_t { nil, boolean, int_, uint_, float_, str, bin, array, map, ext };

std::string_view msgpack_kind_name(MsgpackKind k);

struct MsgpackToken {
  MsgpackKind kind = MsgpackKind::nil;
  size_t offset = 0;  // of the first byte of the header, within the cursor's buffer
  bool b = false;
  int64_t i = 0;                       // int_ (negative or small) values
  uint64_t u = 0;                      // uint_ values
  double f = 0;                        // float_ (float32 widened)
  uint64_t count = 0;                  // array / map element (pair) count
  int8_t ext_type = 0;                 // ext
  std::span<const std::byte> payload;  // str / bin / ext

  std::string_view text() const { return {reinterpret_cast<const char*>(payload.data()), payload.size()}; }
};

class MsgpackCursor {
 public:
  // `where` prefixes messages (the file's label); `base` is the offset of bytes[0] in the whole
  // file and `inside` names the enclosing object, so that a cursor over an ext payload
  // reports "ckpt: at byte 40, in an ndarray (ext type 1) payload: ...".
  MsgpackCursor(std::span<const std::byte> bytes, std::string where, size_t base = 0, std::string inside = "")
      : bytes_(bytes), where_(std::move(where)), inside_(std::move(inside)), base_(base) {}

  // Reads the next header; non-ok on truncation, the reserved byte 0xc1, or a count/length
  // larger than the bytes remaining.
  Result<MsgpackToken> next();

  size_t offset() const { return pos_; }
  size_t base() const { return base_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  std::span<const std::byte> bytes() const { return bytes_; }

  // "<where>: at byte base+N[, <inside>]: <what>".
  Status error(size_t offset, const std::string& what) const;

 private:
  Result<uint64_t> read_be(size_t n, size_t header_offset, std::string_view what);
  Result<std::span<const std::byte>> take(uint64_t n, size_t header_offset, std::string_view what);

  std::span<const std::byte> bytes_;
  std::string where_;
  std::string inside_;
  size_t base_ = 0;
  size_t pos_ = 0;
};

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace longrun::checkpoint
