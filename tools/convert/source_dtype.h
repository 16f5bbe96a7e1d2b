// Element types a source checkpoint can hold (wider than the runtime's DType: f64, i16, i8
// and bool appear in PyTorch files), and their conversion to the native file's dtypes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "longrun/dtype.h"

namespace longrun::convert {

enum class SourceDType : uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };

constexpr int source_dtype_size(SourceDType t) {
  switch (t) {
    case SourceDType::f64:
    case SourceDType::i64: return 8;
    case SourceDType::f32:
    case SourceDType::i32: return 4;
    case SourceDType::f16:
    case SourceDType::bf16:
    case SourceDType::i16: return 2;
    case SourceDType::i8:
    case SourceDType::u8:
    case SourceDType::boolean: return 1;
  }
  return 1;
}

constexpr bool source_dtype_is_float(SourceDType t) {
  return t == SourceDType::f64 || t == SourceDType::f32 || t == SourceDType::f16 || t == SourceDType::bf16;
}

std::string_view source_dtype_name(SourceDType t);  // "f64", "f32", ..., "bool"
// torch storage class name ("FloatStorage") -> dtype; nullopt for unknown/unsupported ones.
std::optional<SourceDType> dtype_of_storage_class(std::string_view name);
// torch dtype attribute name ("float32", "half", ...) -> dtype.
std::optional<SourceDType> dtype_of_torch_dtype(std::string_view name);
SourceDType from_runtime_dtype(DType t);
// The runtime dtype with the same bits, when there is one (f64/i16/i8/bool have none).
std::optional<DType> to_runtime_dtype(SourceDType t);

}  // namespace longrun::convert
