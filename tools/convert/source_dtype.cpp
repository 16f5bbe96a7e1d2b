#include "source_dtype.h"

namespace longrun::convert {

std::string_view source_dtype_name(SourceDType t) {
  switch (t) {
    case SourceDType::f64: return "f64";
    case SourceDType::f32: return "f32";
    case SourceDType::f16: return "f16";
    case SourceDType::bf16: return "bf16";
    case SourceDType::i64: return "i64";
    case SourceDType::i32: return "i32";
    case SourceDType::i16: return "i16";
    case SourceDType::i8: return "i8";
    case SourceDType::u8: return "u8";
    case SourceDType::boolean: return "bool";
  }
  return "?";
}

std::optional<SourceDType> dtype_of_storage_class(std::string_view name) {
  if (name == "FloatStorage") return SourceDType::f32;
  if (name == "DoubleStorage") return SourceDType::f64;
  if (name == "HalfStorage") return SourceDType::f16;
  if (name == "BFloat16Storage") return SourceDType::bf16;
  if (name == "LongStorage") return SourceDType::i64;
  if (name == "IntStorage") return SourceDType::i32;
  if (name == "ShortStorage") return SourceDType::i16;
  if (name == "CharStorage") return SourceDType::i8;
  if (name == "ByteStorage") return SourceDType::u8;
  if (name == "BoolStorage") return SourceDType::boolean;
  // UntypedStorage (bytes; the dtype comes from _rebuild_tensor_v3) is handled by the caller.
  return std::nullopt;
}

std::optional<SourceDType> dtype_of_torch_dtype(std::string_view name) {
  if (name == "float32" || name == "float") return SourceDType::f32;
  if (name == "float64" || name == "double") return SourceDType::f64;
  if (name == "float16" || name == "half") return SourceDType::f16;
  if (name == "bfloat16") return SourceDType::bf16;
  if (name == "int64" || name == "long") return SourceDType::i64;
  if (name == "int32" || name == "int") return SourceDType::i32;
  if (name == "int16" || name == "short") return SourceDType::i16;
  if (name == "int8") return SourceDType::i8;
  if (name == "uint8") return SourceDType::u8;
  if (name == "bool") return SourceDType::boolean;
  return std::nullopt;
}

SourceDType from_runtime_dtype(DType t) {
  switch (t) {
    case DType::f32: return SourceDType::f32;
    case DType::f16: return SourceDType::f16;
    case DType::bf16: return SourceDType::bf16;
    case DType::i32: return SourceDType::i32;
    case DType::i64: return SourceDType::i64;
    case DType::u8: return SourceDType::u8;
    case DType::i8: return SourceDType::i8;
  }
  return SourceDType::u8;
}

std::optional<DType> to_runtime_dtype(SourceDType t) {
  switch (t) {
    case SourceDType::f32: return DType::f32;
    case SourceDType::f16: return DType::f16;
    case SourceDType::bf16: return DType::bf16;
    case SourceDType::i32: return DType::i32;
    case SourceDType::i64: return DType::i64;
    case SourceDType::u8: return DType::u8;
    default: return std::nullopt;
  }
}

}  // namespace longrun::convert
