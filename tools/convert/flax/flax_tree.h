// Flax msgpack checkpoints (flax.serialization.to_bytes): a tree of string-keyed maps whose
// leaves are ndarrays (msgpack ext type 1), numpy scalars (ext type 3) or plain msgpack
// scalars. read_flax_msgpack() parses an untrusted buffer into a FlaxTree; flatten_flax_tree()
// lists its leaves under "/"-joined paths ("params/encoder/layer_0/attention/query/kernel").
//
// Every length is checked against the bytes remaining, nesting depth and element counts are
// capped (FlaxLimits), keys must be UTF-8 strings and unique within their map, and chunked
// arrays ({"__msgpack_chunked_array__": true, "shape": ..., "chunks": ...}) are reassembled
// with checked sizes. Tensor bytes are little-endian, row-major (numpy's tobytes('C') on every
// machine Flax runs on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "longrun/dtype.h"
#include "longrun/status.h"

namespace longrun::checkpoint {

// numpy dtype names Flax writes that we read ("float32", "bfloat16", "int64", "bool", ...).
enum class FlaxDType : uint8_t { boolean, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64 };

size_t flax_dtype_size(FlaxDType t);
// The numpy name ("float32").
std::string_view flax_dtype_name(FlaxDType t);
// nullopt for names we do not read (complex64, object, "<f4", ...).
std::optional<FlaxDType> parse_flax_dtype(std::string_view numpy_name);
// The runtime dtype a tensor of this type is stored as without conversion; nullopt for f64
// (convert with narrow_to_f32) and for integer widths the runtime lacks. bool -> u8.
std::optional<DType> flax_runtime_dtype(FlaxDType t);

// An array leaf. `bytes` views either the parsed input buffer (zero-copy: the caller keeps the
// buffer alive while the tree is used) or `owned` (when the input bytes were not aligned to
// the element size, or the array was reassembled from chunks). Either way bytes.data() is
// aligned to flax_dtype_size(dtype) and bytes.size() == numel * flax_dtype_size(dtype).
struct FlaxTensor {
  FlaxDType dtype = FlaxDType::f32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
  std::shared_ptr<const std::vector<std::byte>> owned;  // null when zero-copy
  bool numpy_scalar = false;                            // ext type 3 (a 0-d array)

  int64_t numel() const;
  bool zero_copy() const { return owned == nullptr; }
};

// A plain msgpack leaf: nil, bool, int, float or string (Flax keeps Python scalars as is).
struct FlaxScalar {
  enum class Kind : uint8_t { none, boolean, integer, unsigned_integer, floating, string };
  Kind kind = Kind::none;
  bool b = false;
  int64_t i = 0;   // integer
  uint64_t u = 0;  // unsigned_integer: only values above INT64_MAX
  double f = 0;
  std::string s;
};

struct FlaxNode;
// A map in file order (Flax writes Python dict insertion order = module order).
struct FlaxDict {
  std::vector<std::string> keys;
  std::vector<FlaxNode> values;

  // nullptr when absent.
  const FlaxNode* find(std::string_view key) const;
};

struct FlaxNode {
  std::variant<FlaxDict, FlaxTensor, FlaxScalar> value;

  const FlaxDict* dict() const { return std::get_if<FlaxDict>(&value); }
  const FlaxTensor* tensor() const { return std::get_if<FlaxTensor>(&value); }
  const FlaxScalar* scalar() const { return std::get_if<FlaxScalar>(&value); }
};

struct FlaxTree {
  FlaxDict root;
};

// Caps on what an untrusted file may make the reader do. Counts are also bounded by the bytes
// remaining (every element takes at least one byte), so these only matter for huge files.
struct FlaxLimits {
  uint32_t max_depth = 64;                       // nested maps (Flax trees are ~10 deep)
  uint64_t max_nodes = uint64_t{1} << 22;        // maps + leaves (~150 bytes each in memory)
  uint64_t max_map_entries = uint64_t{1} << 20;  // per map
  uint64_t max_key_bytes = 1024;
  uint32_t max_rank = 16;
  uint64_t max_chunked_bytes = uint64_t{1} << 40;  // a reassembled chunked array
};

// Parses a whole buffer; `label` names it in messages ("checkpoint_100: at byte 37, key
// 'params/Dense_0': ..."). The top level must be a map; no bytes may follow it.
Result<FlaxTree> read_flax_msgpack(std::span<const std::byte> buffer, const FlaxLimits& limits = {},
                                   std::string_view label = "flax msgpack");

struct FlaxLeaf {
  std::string path;  // "params/Dense_0/kernel"
  const FlaxTensor* tensor = nullptr;
  const FlaxScalar* scalar = nullptr;  // exactly one of tensor/scalar is set
};

// Depth-first, in file order. Keys that would make paths ambiguous (empty, or containing '/')
// are refused. Empty maps contribute no leaves. Pointers stay valid while `tree` lives.
Result<std::vector<FlaxLeaf>> flatten_flax_tree(const FlaxTree& tree);

}  // namespace longrun::checkpoint
