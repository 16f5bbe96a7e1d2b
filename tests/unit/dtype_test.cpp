// DType names and the f16/bf16 conversions (round to nearest even, specials kept).
#include "longrun/dtype.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "longrun/tensor_desc.h"

using namespace longrun;

TEST_CASE("dtype names round-trip") {
  for (int i = 0; i < kNumDTypes; ++i) {
    CHECK(parse_dtype(dtype_name(DType(i))) == DType(i));
    CHECK(parse_safetensors_dtype(dtype_safetensors_name(DType(i))) == DType(i));
  }
  CHECK(parse_safetensors_dtype("BOOL") == DType::u8);
  CHECK_FALSE(parse_safetensors_dtype("F64").has_value());
  CHECK_FALSE(parse_dtype("float").has_value());
}

TEST_CASE("f16 conversion is exact on every half value and rounds to nearest even") {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
    } else {
      REQUIRE(f32_to_f16(f) == uint16_t(h));
    }
  }
  CHECK(f32_to_f16(65520.0f) == 0x7c00u);                      // rounds up to inf
  CHECK(f32_to_f16(65519.0f) == 0x7bffu);                      // max finite
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0);               // half of min subnormal: ties to even (0)
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 1);               // above half: rounds up
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00u);  // tie -> even
  CHECK(f32_to_f16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02u);  // tie -> even (up)
}

TEST_CASE("bf16 conversion") {
  CHECK(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80u);  // tie -> even
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST_CASE("TensorDesc validation and views") {
  const int64_t big[] = {int64_t(1) << 40, int64_t(1) << 40};
  CHECK(TensorDesc::make(DType::f32, big).status().code() == StatusCode::overflow);
  const int64_t neg[] = {2, -1};
  CHECK(TensorDesc::make(DType::f32, neg).status().code() == StatusCode::invalid_argument);
  const int64_t r7[] = {1, 1, 1, 1, 1, 1, 1};
  CHECK_FALSE(TensorDesc::make(DType::f32, r7).ok());

  TensorDesc d(DType::f32, {2, 3, 4});
  CHECK(d.numel() == 24);
  CHECK(d.is_contiguous());
  const int perm[] = {2, 0, 1};
  auto p = d.permute(perm);
  REQUIRE(p.ok());
  CHECK_FALSE(p->is_contiguous());
  CHECK(p->dim(0) == 4);
  CHECK(p->stride(0) == 1);
  const int64_t shape[] = {6, -1};
  auto r = d.reshape(shape);
  REQUIRE(r.ok());
  CHECK(r->dim(1) == 4);
  CHECK_FALSE(p->reshape(shape).ok());  // not contiguous
  int64_t off = 0;
  auto s = d.slice(1, 1, 3, 1, &off);
  REQUIRE(s.ok());
  CHECK(s->dim(1) == 2);
  CHECK(off == 4);
  auto s2 = d.slice(2, -3, 100, 2, &off);
  REQUIRE(s2.ok());
  CHECK(s2->dim(2) == 2);
  CHECK(s2->stride(2) == 2);
  CHECK(off == 1);
}
