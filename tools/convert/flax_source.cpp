#include "flax_source.h"

#include <memory>
#include <optional>

#include "convert/flax/flax_tree.h"

namespace longrun::convert {
namespace {

using checkpoint::FlaxDType;

std::optional<SourceDType> source_dtype(FlaxDType t) {
  switch (t) {
    case FlaxDType::boolean: return SourceDType::boolean;
    case FlaxDType::i8: return SourceDType::i8;
    case FlaxDType::i16: return SourceDType::i16;
    case FlaxDType::i32: return SourceDType::i32;
    case FlaxDType::i64: return SourceDType::i64;
    case FlaxDType::u8: return SourceDType::u8;
    case FlaxDType::f16: return SourceDType::f16;
    case FlaxDType::bf16: return SourceDType::bf16;
    case FlaxDType::f32: return SourceDType::f32;
    case FlaxDType::f64: return SourceDType::f64;
    default: return std::nullopt;  // u16 / u32 / u64: no model parameter has them
  }
}

std::string scalar_text(const checkpoint::FlaxScalar& s) {
  using K = checkpoint::FlaxScalar::Kind;
  switch (s.kind) {
    case K::none: return "None";
    case K::boolean: return s.b ? "True" : "False";
    case K::integer: return std::to_string(s.i);
    case K::unsigned_integer: return std::to_string(s.u);
    case K::floating: return std::to_string(s.f);
    case K::string: return "'" + s.s.substr(0, 64) + (s.s.size() > 64 ? "...'" : "'");
  }
  return "?";
}

}  // namespace

bool looks_like_flax_msgpack(std::span<const std::byte> bytes) {
  if (bytes.empty()) return false;
  const uint8_t b0 = uint8_t(bytes[0]);
  const bool map = (b0 >= 0x81 && b0 <= 0x8f) || b0 == 0xde || b0 == 0xdf;
  if (!map) return false;
  if (bytes.size() >= 9) {
    const char c = char(bytes[8]);
    if (c == '{' || c == ' ' || c == '\t' || c == '\n' || c == '\r') return false;  // safetensors
  }
  return true;
}

Status read_flax_checkpoint(std::span<const std::byte> bytes, const std::string& label,
                            SourceCheckpoint* out) {
  auto parsed = checkpoint::read_flax_msgpack(bytes, {}, label);
  if (!parsed.ok()) return parsed.status();
  auto tree = std::make_shared<checkpoint::FlaxTree>(std::move(*parsed));
  LR_ASSIGN_OR_RETURN(std::vector<checkpoint::FlaxLeaf> leaves, checkpoint::flatten_flax_tree(*tree));
  for (const checkpoint::FlaxLeaf& leaf : leaves) {
    if (leaf.scalar) {
      out->notes.push_back(leaf.path + " = " + scalar_text(*leaf.scalar));
      continue;
    }
    const checkpoint::FlaxTensor& f = *leaf.tensor;
    const auto dtype = source_dtype(f.dtype);
    if (!dtype)
      return unsupported(label + ": tensor '" + leaf.path + "': dtype " +
                         std::string(flax_dtype_name(f.dtype)) +
                         " is not a parameter type (expected a float, int8-64, uint8 or bool array)");
    SourceTensor t;
    t.name = leaf.path;
    t.dtype = *dtype;
    t.sizes = f.shape;
    t.strides.assign(t.sizes.size(), 1);
    for (size_t i = t.sizes.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * t.sizes[i];
    t.storage = f.bytes;
    t.storage_id = label + "#" + leaf.path;
    LR_RETURN_IF_ERROR(check_view(t, label + ": tensor '" + leaf.path + "'"));
    out->tensors.push_back(std::move(t));
  }
  out->owners.push_back(std::shared_ptr<const void>(tree));
  out->format = "flax-msgpack";
  return {};
}

}  // namespace longrun::convert
