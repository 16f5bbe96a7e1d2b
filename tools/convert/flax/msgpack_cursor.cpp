// Bounds-checked msgpack header decoding (the format is big-endian throughout).
#include "msgpack_cursor.h"

#include <bit>

namespace longrun::checkpoint {

std::string_view msgpack_kind_name(MsgpackKind k) {
  switch (k) {
    case MsgpackKind::nil: return "nil";
    case MsgpackKind::boolean: return "bool";
    case MsgpackKind::int_: return "int";
    case MsgpackKind::uint_: return "uint";
    case MsgpackKind::float_: return "float";
    case MsgpackKind::str: return "str";
    case MsgpackKind::bin: return "bin";
    case MsgpackKind::array: return "array";
    case MsgpackKind::map: return "map";
    case MsgpackKind::ext: return "ext";
  }
  return "?";
}

Status MsgpackCursor::error(size_t offset, const std::string& what) const {
  return format_error(where_ + ": at byte " + std::to_string(base_ + offset) +
                      (inside_.empty() ? "" : ", " + inside_) + ": " + what);
}

Result<uint64_t> MsgpackCursor::read_be(size_t n, size_t header_offset, std::string_view what) {
  if (remaining() < n)
    return error(header_offset, "truncated " + std::string(what) + ": needs " + std::to_string(n) +
                                    " more bytes, " + std::to_string(remaining()) + " remain");
  uint64_t v = 0;
  for (size_t k = 0; k < n; ++k) v = (v << 8) | uint64_t(bytes_[pos_ + k]);
  pos_ += n;
  return v;
}

Result<std::span<const std::byte>> MsgpackCursor::take(uint64_t n, size_t header_offset,
                                                       std::string_view what) {
  if (n > remaining())
    return error(header_offset, std::string(what) + " declares " + std::to_string(n) + " bytes but only " +
                                    std::to_string(remaining()) + " remain");
  const auto s = bytes_.subspan(pos_, size_t(n));
  pos_ += size_t(n);
  return s;
}

Result<MsgpackToken> MsgpackCursor::next() {
  MsgpackToken t;
  t.offset = pos_;
  if (at_end()) return error(pos_, "truncated: expected a msgpack object, found the end of the input");
  const uint8_t b = uint8_t(bytes_[pos_++]);
  const size_t at = t.offset;

  const auto sized = [&](MsgpackKind kind, uint64_t n) -> Result<MsgpackToken> {
    t.kind = kind;
    LR_ASSIGN_OR_RETURN(t.payload, take(n, at, msgpack_kind_name(kind)));
    return t;
  };
  const auto counted = [&](MsgpackKind kind, uint64_t n) -> Result<MsgpackToken> {
    t.kind = kind;
    t.count = n;
    // Each element is at least one byte (two per map entry).
    const uint64_t per = kind == MsgpackKind::map ? 2 : 1;
    if (n > remaining() / per)
      return error(at, std::string(msgpack_kind_name(kind)) + " declares " + std::to_string(n) +
                           " elements but only " + std::to_string(remaining()) + " bytes remain");
    return t;
  };
  const auto ext = [&](uint64_t n) -> Result<MsgpackToken> {
    LR_ASSIGN_OR_RETURN(const uint64_t type, read_be(1, at, "ext type"));
    t.ext_type = int8_t(uint8_t(type));
    return sized(MsgpackKind::ext, n);
  };
  const auto length = [&](size_t n, std::string_view what) { return read_be(n, at, what); };

  if (b <= 0x7f) {
    t.kind = MsgpackKind::int_;
    t.i = b;
    return t;
  }
  if (b >= 0xe0) {
    t.kind = MsgpackKind::int_;
    t.i = int8_t(b);
    return t;
  }
  if ((b & 0xf0) == 0x80) return counted(MsgpackKind::map, b & 0x0f);
  if ((b & 0xf0) == 0x90) return counted(MsgpackKind::array, b & 0x0f);
  if ((b & 0xe0) == 0xa0) return sized(MsgpackKind::str, b & 0x1f);
  switch (b) {
    case 0xc0: t.kind = MsgpackKind::nil; return t;
    case 0xc2:
    case 0xc3:
      t.kind = MsgpackKind::boolean;
      t.b = b == 0xc3;
      return t;
    case 0xc4:
    case 0xc5:
    case 0xc6: {
      LR_ASSIGN_OR_RETURN(const uint64_t n, length(size_t{1} << (b - 0xc4), "bin length"));
      return sized(MsgpackKind::bin, n);
    }
    case 0xc7:
    case 0xc8:
    case 0xc9: {
      LR_ASSIGN_OR_RETURN(const uint64_t n, length(size_t{1} << (b - 0xc7), "ext length"));
      return ext(n);
    }
    case 0xca: {
      LR_ASSIGN_OR_RETURN(const uint64_t v, length(4, "float32"));
      t.kind = MsgpackKind::float_;
      t.f = std::bit_cast<float>(uint32_t(v));
      return t;
    }
    case 0xcb: {
      LR_ASSIGN_OR_RETURN(const uint64_t v, length(8, "float64"));
      t.kind = MsgpackKind::float_;
      t.f = std::bit_cast<double>(v);
      return t;
    }
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
      LR_ASSIGN_OR_RETURN(const uint64_t v, length(size_t{1} << (b - 0xcc), "uint"));
      t.kind = MsgpackKind::uint_;
      t.u = v;
      return t;
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
      const size_t n = size_t{1} << (b - 0xd0);
      LR_ASSIGN_OR_RETURN(const uint64_t v, length(n, "int"));
      t.kind = MsgpackKind::int_;
      // Sign-extend from n bytes.
      const unsigned shift = unsigned(64 - 8 * n);
      t.i = int64_t(v << shift) >> shift;
      return t;
    }
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8: return ext(uint64_t{1} << (b - 0xd4));
    case 0xd9:
    case 0xda:
    case 0xdb: {
      LR_ASSIGN_OR_RETURN(const uint64_t n, length(size_t{1} << (b - 0xd9), "str length"));
      return sized(MsgpackKind::str, n);
    }
    case 0xdc:
    case 0xdd: {
      LR_ASSIGN_OR_RETURN(const uint64_t n, length(size_t{2} << (b - 0xdc), "array length"));
      return counted(MsgpackKind::array, n);
    }
    case 0xde:
    case 0xdf: {
      LR_ASSIGN_OR_RETURN(const uint64_t n, length(size_t{2} << (b - 0xde), "map length"));
      return counted(MsgpackKind::map, n);
    }
    default: break;
  }
  return error(at, "byte 0xc1 is reserved (never used) in msgpack");
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const auto cont = [&](size_t k) { return i + k < s.size() && (uint8_t(s[i + k]) & 0xc0) == 0x80; };
  while (i < s.size()) {
    const uint8_t c = uint8_t(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k < n; ++k) {
      if (!cont(k)) return false;
      cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n;
  }
  return true;
}

}  // namespace longrun::checkpoint
