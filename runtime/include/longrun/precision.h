// The number format a session computes in (docs/usage.md#precision).
//   f32:  every op in f32 (the default; results as without the setting, bit for bit).
//   int8: the cpu backend runs linear layers (a matmul with a constant weight W[N, K]) on the
//         int8 GEMM: W quantized per output channel at prepare, activations per row on each
//         run, exact int32 sums (docs/cpu-kernels.md#int8-gemm); every other op stays f32.
//         The reference backend runs the format's scalar definition
//         (ops/include/longrun/ops/reduced_precision.h) on linear layers, the cpu's oracle.
//   bf16: the cpu (AVX2 and up) and reference backends compute linear layers (a matmul with
//         a constant rank-2 weight) from bf16-rounded inputs and weights with f32 (cpu) or
//         double (reference) sums (docs/cpu-kernels.md#bf16-gemm); every other op stays f32.
#pragma once

#include <optional>
#include <string_view>

namespace longrun {

enum class Precision { f32, bf16, int8 };

constexpr std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::f32: return "f32";
    case Precision::bf16: return "bf16";
    case Precision::int8: return "int8";
  }
  return "?";
}

constexpr std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : {Precision::f32, Precision::bf16, Precision::int8})
    if (precision_name(p) == name) return p;
  return std::nullopt;
}

}  // namespace longrun
