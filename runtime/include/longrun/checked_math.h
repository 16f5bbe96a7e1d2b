// Checked size arithmetic. Every size that comes from a file or a user shape goes through
// these helpers, so an overflow becomes a Status instead of a short allocation.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>

#include "longrun/status.h"

namespace longrun {

// Each returns false (and leaves *out unspecified) when the exact result does not fit.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_sub(int64_t a, int64_t b, int64_t* out) { return !__builtin_sub_overflow(a, b, out); }

// Product of non-negative dims; fails on a negative dim or on overflow of int64.
inline bool checked_product(std::span<const int64_t> dims, int64_t* out) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d < 0 || !checked_mul(p, d, &p)) return false;
  }
  *out = p;
  return true;
}

// Result-returning forms for call sites that want a message: `what` names the quantity.
inline Result<uint64_t> checked_add_or_error(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (!checked_add(a, b, &r))
    return overflow_error(what + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
  return r;
}
inline Result<uint64_t> checked_mul_or_error(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (!checked_mul(a, b, &r))
    return overflow_error(what + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows 64 bits");
  return r;
}

// Rounds `v` up to a multiple of `align` (a power of two); fails on overflow.
inline bool checked_align_up(uint64_t v, uint64_t align, uint64_t* out) {
  uint64_t t;
  if (!checked_add(v, align - 1, &t)) return false;
  *out = t & ~(align - 1);
  return true;
}

}  // namespace longrun
