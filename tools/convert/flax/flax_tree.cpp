// FlaxDType names, FlaxDict lookup, and flattening a tree to "/"-joined leaf paths.
#include "flax_tree.h"

#include "longrun/checked_math.h"

namespace longrun::checkpoint {
namespace {

struct DTypeRow {
  FlaxDType t;
  std::string_view name;
  size_t size;
};
constexpr DTypeRow kDTypes[] = {
    {FlaxDType::boolean, "bool", 1}, {FlaxDType::i8, "int8", 1},       {FlaxDType::i16, "int16", 2},
    {FlaxDType::i32, "int32", 4},    {FlaxDType::i64, "int64", 8},     {FlaxDType::u8, "uint8", 1},
    {FlaxDType::u16, "uint16", 2},   {FlaxDType::u32, "uint32", 4},    {FlaxDType::u64, "uint64", 8},
    {FlaxDType::f16, "float16", 2},  {FlaxDType::bf16, "bfloat16", 2}, {FlaxDType::f32, "float32", 4},
    {FlaxDType::f64, "float64", 8},
};

}  // namespace

size_t flax_dtype_size(FlaxDType t) { return kDTypes[size_t(t)].size; }
std::string_view flax_dtype_name(FlaxDType t) { return kDTypes[size_t(t)].name; }

std::optional<FlaxDType> parse_flax_dtype(std::string_view numpy_name) {
  for (const DTypeRow& r : kDTypes)
    if (r.name == numpy_name) return r.t;
  return std::nullopt;
}

std::optional<DType> flax_runtime_dtype(FlaxDType t) {
  switch (t) {
    case FlaxDType::f32: return DType::f32;
    case FlaxDType::f16: return DType::f16;
    case FlaxDType::bf16: return DType::bf16;
    case FlaxDType::i32: return DType::i32;
    case FlaxDType::i64: return DType::i64;
    case FlaxDType::u8:
    case FlaxDType::boolean: return DType::u8;
    default: return std::nullopt;
  }
}

int64_t FlaxTensor::numel() const {
  int64_t n = 0;
  return checked_product(shape, &n) ? n : -1;  // the reader only builds tensors whose product fits
}

const FlaxNode* FlaxDict::find(std::string_view key) const {
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &values[i];
  return nullptr;
}

namespace {

Status flatten_into(const FlaxDict& d, std::string& prefix, std::vector<FlaxLeaf>& out) {
  for (size_t i = 0; i < d.keys.size(); ++i) {
    const std::string& k = d.keys[i];
    if (k.empty() || k.find('/') != std::string::npos)
      return invalid_argument("flax tree: key '" + k + "' under '" + prefix +
                              "' cannot be part of a '/'-joined path (empty or contains '/')");
    const size_t mark = prefix.size();
    if (!prefix.empty()) prefix += '/';
    prefix += k;
    const FlaxNode& v = d.values[i];
    if (const FlaxDict* sub = v.dict()) {
      LR_RETURN_IF_ERROR(flatten_into(*sub, prefix, out));
    } else {
      out.push_back({prefix, v.tensor(), v.scalar()});
    }
    prefix.resize(mark);
  }
  return {};
}

}  // namespace

Result<std::vector<FlaxLeaf>> flatten_flax_tree(const FlaxTree& tree) {
  std::vector<FlaxLeaf> out;
  std::string prefix;
  LR_RETURN_IF_ERROR(flatten_into(tree.root, prefix, out));
  return out;
}

}  // namespace longrun::checkpoint
