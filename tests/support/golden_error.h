// The error of a float output against its golden, as the whole-model tests measure it, and
// their f32 tolerance (derived in tests/models/golden_models_test.cpp). Shared by the model
// tests and the importer's round trips, which run converted models on the same goldens.
#pragma once

#include <span>

namespace longrun::golden {

// Error of `actual` against `expected` (both f32, same element count):
//   norm_err = sqrt(sum (a - b)^2 / sum b^2),  max_abs = max |a - b|.
struct Error {
  double norm_err = 0.0;
  double max_abs = 0.0;
  bool finite = true;  // no NaN/Inf in actual
};
Error measure(std::span<const float> actual, std::span<const float> expected);

// f32 weights and arithmetic against the float64 oracle rounded to f32.
inline constexpr double kMaxNormErr = 1e-5;
inline constexpr double kMaxAbsErr = 1e-4;

}  // namespace longrun::golden
