// read_flax_msgpack: msgpack tokens -> FlaxTree. The tree shape Flax writes is narrow (maps
// with string keys; ndarray/npscalar ext leaves; plain scalars), so anything else is refused
// with the byte offset and the key path where it was found.
#include <algorithm>
#include <cstring>
#include <new>
#include <unordered_set>

#include "flax_chunked.h"
#include "flax_tree.h"
#include "longrun/checked_math.h"
#include "msgpack_cursor.h"

namespace longrun::checkpoint {
namespace {

// flax.serialization._MsgpackExtType
constexpr int8_t kExtNdarray = 1;
constexpr int8_t kExtNativeComplex = 2;
constexpr int8_t kExtNpScalar = 3;

class Parser {
 public:
  Parser(std::span<const std::byte> buffer, const FlaxLimits& limits, std::string_view label)
      : cur_(buffer, std::string(label)), limits_(limits), label_(label) {}

  Result<FlaxTree> parse() {
    LR_ASSIGN_OR_RETURN(const MsgpackToken t, next());
    if (t.kind != MsgpackKind::map)
      return fail(t.offset, "expected a map at the top level (a Flax state dict), found " +
                                std::string(msgpack_kind_name(t.kind)));
    FlaxTree tree;
    LR_ASSIGN_OR_RETURN(tree.root, parse_map(t, 1));
    if (!cur_.at_end())
      return fail(cur_.offset(),
                  std::to_string(cur_.remaining()) + " trailing bytes after the top-level map");
    return tree;
  }

 private:
  std::string path() const {
    std::string p;
    for (const std::string_view k : path_) {
      if (!p.empty()) p += '/';
      p += k;
    }
    return p;
  }

  // "<label>: at byte N, key 'a/b': <what>".
  Status fail(size_t offset, const std::string& what, StatusCode code = StatusCode::format_error) const {
    std::string m = label_ + ": at byte " + std::to_string(offset);
    if (!path_.empty()) m += ", key '" + path() + "'";
    return {code, m + ": " + what};
  }

  // Cursor errors carry label and offset; add the key path.
  Result<MsgpackToken> next() {
    auto t = cur_.next();
    if (!t.ok() && !path_.empty())
      return Status(t.status().code(), t.status().message() + " (under key '" + path() + "')");
    return t;
  }

  Status count_node(size_t offset) {
    if (++nodes_ > limits_.max_nodes)
      return fail(offset, "the tree has more than " + std::to_string(limits_.max_nodes) + " nodes (limit)",
                  StatusCode::out_of_range);
    return {};
  }

  Result<FlaxDict> parse_map(const MsgpackToken& t, uint32_t depth) {
    if (depth > limits_.max_depth)
      return fail(t.offset, "maps nest deeper than the limit of " + std::to_string(limits_.max_depth),
                  StatusCode::out_of_range);
    if (t.count > limits_.max_map_entries)
      return fail(t.offset,
                  "map declares " + std::to_string(t.count) + " entries; the limit is " +
                      std::to_string(limits_.max_map_entries),
                  StatusCode::out_of_range);
    LR_RETURN_IF_ERROR(count_node(t.offset));
    FlaxDict d;
    // A declared count only bounds the loop; memory grows with the entries actually read, so a
    // lying count cannot make a small input allocate ~100 bytes per promised entry.
    const size_t expected = size_t(std::min<uint64_t>(t.count, 1024));
    d.keys.reserve(expected);
    d.values.reserve(expected);
    std::unordered_set<std::string_view> seen;
    for (uint64_t i = 0; i < t.count; ++i) {
      LR_ASSIGN_OR_RETURN(const MsgpackToken k, next());
      if (k.kind != MsgpackKind::str)
        return fail(k.offset, "map key is a msgpack " + std::string(msgpack_kind_name(k.kind)) +
                                  "; Flax state dicts have string keys");
      const std::string_view key = k.text();
      if (key.size() > limits_.max_key_bytes)
        return fail(k.offset,
                    "key of " + std::to_string(key.size()) + " bytes exceeds the limit of " +
                        std::to_string(limits_.max_key_bytes),
                    StatusCode::out_of_range);
      if (!is_valid_utf8(key)) return fail(k.offset, "map key is not valid UTF-8");
      if (!seen.insert(key).second) return fail(k.offset, "duplicate key '" + std::string(key) + "'");
      path_.push_back(key);
      LR_ASSIGN_OR_RETURN(FlaxNode value, parse_value(depth));
      path_.pop_back();
      d.keys.emplace_back(key);
      d.values.push_back(std::move(value));
    }
    return d;
  }

  // A value inside a map at nesting `depth` (its own maps are depth + 1).
  Result<FlaxNode> parse_value(uint32_t depth) {
    LR_ASSIGN_OR_RETURN(const MsgpackToken t, next());
    if (t.kind != MsgpackKind::map) LR_RETURN_IF_ERROR(count_node(t.offset));
    FlaxScalar s;
    switch (t.kind) {
      case MsgpackKind::map: {
        LR_ASSIGN_OR_RETURN(FlaxDict d, parse_map(t, depth + 1));
        if (d.find(kChunkedMarker) != nullptr) {
          auto joined = join_chunked_array(d, limits_);
          if (!joined.ok()) return fail(t.offset, joined.status().message(), joined.status().code());
          return FlaxNode{std::move(joined).value()};
        }
        return FlaxNode{std::move(d)};
      }
      case MsgpackKind::ext: {
        LR_ASSIGN_OR_RETURN(FlaxTensor x, parse_ext(t));
        return FlaxNode{std::move(x)};
      }
      case MsgpackKind::array:
        return fail(
            t.offset,
            "msgpack array in the tree; Flax state dicts store lists as maps keyed \"0\", \"1\", ...");
      case MsgpackKind::bin:
        return fail(t.offset, "raw bin value in the tree; Flax stores arrays as ext type 1");
      case MsgpackKind::nil: break;
      case MsgpackKind::boolean:
        s.kind = FlaxScalar::Kind::boolean;
        s.b = t.b;
        break;
      case MsgpackKind::int_:
        s.kind = FlaxScalar::Kind::integer;
        s.i = t.i;
        break;
      case MsgpackKind::uint_:
        if (t.u <= uint64_t(INT64_MAX)) {
          s.kind = FlaxScalar::Kind::integer;
          s.i = int64_t(t.u);
        } else {
          s.kind = FlaxScalar::Kind::unsigned_integer;
          s.u = t.u;
        }
        break;
      case MsgpackKind::float_:
        s.kind = FlaxScalar::Kind::floating;
        s.f = t.f;
        break;
      case MsgpackKind::str:
        if (!is_valid_utf8(t.text())) return fail(t.offset, "string value is not valid UTF-8");
        s.kind = FlaxScalar::Kind::string;
        s.s = std::string(t.text());
        break;
    }
    return FlaxNode{std::move(s)};
  }

  Result<FlaxTensor> parse_ext(const MsgpackToken& t) {
    if (t.ext_type == kExtNativeComplex)
      return fail(t.offset, "native complex number (ext type 2): complex values are not supported",
                  StatusCode::unsupported);
    if (t.ext_type != kExtNdarray && t.ext_type != kExtNpScalar)
      return fail(t.offset, "unknown msgpack ext type " + std::to_string(t.ext_type) +
                                " (Flax writes 1 = ndarray, 2 = complex, 3 = numpy scalar)");
    const size_t payload_at = size_t(t.payload.data() - cur_.bytes().data());
    auto x = parse_ndarray_payload(t.payload, payload_at, t.ext_type == kExtNpScalar);
    if (!x.ok()) {
      std::string m = x.status().message();
      if (!path_.empty()) m += " (under key '" + path() + "')";
      return Status(x.status().code(), m);
    }
    return x;
  }

  // payload = msgpack [shape: array<int>, dtype name: str, data: bin], nothing after it.
  Result<FlaxTensor> parse_ndarray_payload(std::span<const std::byte> payload, size_t base, bool npscalar) {
    MsgpackCursor c(
        payload, label_, base,
        npscalar ? "in a numpy scalar (ext type 3) payload" : "in an ndarray (ext type 1) payload");
    const auto bad = [&](size_t at, const std::string& m) { return c.error(at, m); };
    LR_ASSIGN_OR_RETURN(const MsgpackToken top, c.next());
    if (top.kind != MsgpackKind::array || top.count != 3)
      return bad(top.offset, "payload must be a msgpack array [shape, dtype, data], found " +
                                 std::string(msgpack_kind_name(top.kind)) +
                                 (top.kind == MsgpackKind::array ? " of " + std::to_string(top.count) : ""));
    LR_ASSIGN_OR_RETURN(const MsgpackToken shape, c.next());
    if (shape.kind != MsgpackKind::array)
      return bad(shape.offset,
                 "shape must be an array of integers, found " + std::string(msgpack_kind_name(shape.kind)));
    if (shape.count > limits_.max_rank)
      return Status(StatusCode::out_of_range,
                    c.error(shape.offset, "rank " + std::to_string(shape.count) + " exceeds the limit of " +
                                              std::to_string(limits_.max_rank))
                        .message());
    FlaxTensor x;
    x.numpy_scalar = npscalar;
    for (uint64_t i = 0; i < shape.count; ++i) {
      LR_ASSIGN_OR_RETURN(const MsgpackToken d, c.next());
      const bool ok_int = (d.kind == MsgpackKind::int_ && d.i >= 0) ||
                          (d.kind == MsgpackKind::uint_ && d.u <= uint64_t(INT64_MAX));
      if (!ok_int) return bad(d.offset, "shape[" + std::to_string(i) + "] is not a non-negative integer");
      x.shape.push_back(d.kind == MsgpackKind::int_ ? d.i : int64_t(d.u));
    }
    if (npscalar && !x.shape.empty())
      return bad(shape.offset,
                 "a numpy scalar must have shape [], found rank " + std::to_string(x.shape.size()));
    LR_ASSIGN_OR_RETURN(const MsgpackToken name, c.next());
    if (name.kind != MsgpackKind::str)
      return bad(name.offset, "dtype must be a string, found " + std::string(msgpack_kind_name(name.kind)));
    const auto dtype = parse_flax_dtype(name.text());
    if (!dtype) {
      std::string shown(name.text().substr(0, 64));
      for (char& ch : shown)
        if (uint8_t(ch) < 0x20 || uint8_t(ch) >= 0x7f) ch = '?';
      return Status(StatusCode::unsupported,
                    c.error(name.offset, "dtype '" + shown + "' is not supported").message());
    }
    x.dtype = *dtype;
    LR_ASSIGN_OR_RETURN(const MsgpackToken data, c.next());
    if (data.kind != MsgpackKind::bin)
      return bad(data.offset, "data must be msgpack bin, found " + std::string(msgpack_kind_name(data.kind)));
    if (!c.at_end()) return bad(c.offset(), std::to_string(c.remaining()) + " trailing bytes in the payload");

    int64_t numel = 0;
    uint64_t nbytes = 0;
    if (!checked_product(x.shape, &numel) || !checked_mul(uint64_t(numel), flax_dtype_size(x.dtype), &nbytes))
      return Status(StatusCode::overflow,
                    c.error(shape.offset, "element count or byte size overflows").message());
    if (nbytes != data.payload.size())
      return bad(data.offset, "shape and dtype '" + std::string(flax_dtype_name(x.dtype)) + "' need " +
                                  std::to_string(nbytes) + " bytes, data has " +
                                  std::to_string(data.payload.size()));
    const size_t align = flax_dtype_size(x.dtype);
    if (reinterpret_cast<uintptr_t>(data.payload.data()) % align == 0) {
      x.bytes = data.payload;
    } else {
      try {
        auto copy = std::make_shared<std::vector<std::byte>>(data.payload.begin(), data.payload.end());
        x.bytes = *copy;
        x.owned = std::move(copy);
      } catch (const std::bad_alloc&) {
        return out_of_memory(label_ + ": cannot allocate " + std::to_string(nbytes) +
                             " bytes for an unaligned array");
      }
    }
    return x;
  }

  MsgpackCursor cur_;
  const FlaxLimits& limits_;
  std::string label_;
  std::vector<std::string_view> path_;
  uint64_t nodes_ = 0;
};

}  // namespace

Result<FlaxTree> read_flax_msgpack(std::span<const std::byte> buffer, const FlaxLimits& limits,
                                   std::string_view label) {
  return Parser(buffer, limits, label).parse();
}

}  // namespace longrun::checkpoint
