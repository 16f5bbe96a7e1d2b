// Element types and their conversions. Compute is f32 on CPU; weights may be stored as
// f16/bf16 and are widened on load or inside kernels.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace longrun {

// i8: signed bytes; only a quantized weight's values (docs/checkpoints.md#quantized-weights).
enum class DType : uint8_t { f32 = 0, f16, bf16, i32, i64, u8, i8 };
inline constexpr int kNumDTypes = 7;

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
    case DType::i8: return 1;
  }
  return 0;
}

constexpr bool dtype_is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
constexpr bool dtype_is_int(DType t) {
  return t == DType::i32 || t == DType::i64 || t == DType::u8 || t == DType::i8;
}

// "f32", "f16", "bf16", "i32", "i64", "u8", "i8".
std::string_view dtype_name(DType t);
// Accepts our names; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view name);
// safetensors dtype codes ("F32", "F16", "BF16", "I32", "I64", "U8", "I8", "BOOL" -> u8).
std::string_view dtype_safetensors_name(DType t);
std::optional<DType> parse_safetensors_dtype(std::string_view code);

// IEEE binary16 <-> binary32, round-to-nearest-even, NaN/Inf/subnormals preserved.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// bfloat16 <-> binary32, round-to-nearest-even; NaN stays NaN (quiet).
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// Element i of a contiguous f32, f16 or bf16 array, widened exactly to f32 (any other dtype
// is read as f32: callers check the dtype).
inline float float_element(const void* data, DType t, int64_t i) {
  switch (t) {
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

}  // namespace longrun
