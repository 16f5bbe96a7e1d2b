// Checked size arithmetic (checked_math.h) at the overflow edges.
#include "longrun/checked_math.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace longrun {
namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

TEST_CASE("checked_math: unsigned add and mul") {
  uint64_t r = 0;
  CHECK(checked_add(kU64Max - 1, uint64_t(1), &r));
  CHECK(r == kU64Max);
  CHECK_FALSE(checked_add(kU64Max, uint64_t(1), &r));
  CHECK_FALSE(checked_add(kU64Max, kU64Max, &r));
  CHECK(checked_mul(uint64_t(1) << 32, (uint64_t(1) << 32) - 1, &r));
  CHECK(r == (uint64_t(1) << 32) * ((uint64_t(1) << 32) - 1));
  CHECK_FALSE(checked_mul(uint64_t(1) << 32, uint64_t(1) << 32, &r));
  CHECK_FALSE(checked_mul(kU64Max, uint64_t(2), &r));
  CHECK(checked_mul(kU64Max, uint64_t(0), &r));
  CHECK(r == 0);
  CHECK(checked_mul(kU64Max, uint64_t(1), &r));
  CHECK(r == kU64Max);
}

TEST_CASE("checked_math: signed add, sub and mul") {
  int64_t r = 0;
  CHECK(checked_add(kI64Max - 1, int64_t(1), &r));
  CHECK(r == kI64Max);
  CHECK_FALSE(checked_add(kI64Max, int64_t(1), &r));
  CHECK_FALSE(checked_add(kI64Min, int64_t(-1), &r));
  CHECK(checked_add(kI64Max, kI64Min, &r));
  CHECK(r == -1);
  CHECK_FALSE(checked_sub(kI64Min, int64_t(1), &r));
  CHECK_FALSE(checked_sub(int64_t(0), kI64Min, &r));
  CHECK(checked_sub(int64_t(-1), kI64Min, &r));
  CHECK(r == kI64Max);
  CHECK_FALSE(checked_mul(kI64Max, int64_t(2), &r));
  CHECK_FALSE(checked_mul(kI64Min, int64_t(-1), &r));
  CHECK_FALSE(checked_mul(int64_t(1) << 32, int64_t(1) << 31, &r));
  CHECK(checked_mul(int64_t(1) << 31, int64_t(1) << 31, &r));
  CHECK(r == int64_t(1) << 62);
  CHECK(checked_mul(kI64Max, int64_t(-1), &r));
  CHECK(r == -kI64Max);
}

TEST_CASE("checked_math: products of dims") {
  int64_t r = -7;
  CHECK(checked_product({}, &r));
  CHECK(r == 1);
  const std::vector<int64_t> ok = {2, 3, 4};
  CHECK(checked_product(ok, &r));
  CHECK(r == 24);
  const std::vector<int64_t> at_max = {kI64Max, 1};
  CHECK(checked_product(at_max, &r));
  CHECK(r == kI64Max);
  const std::vector<int64_t> zero = {0, kI64Max, kI64Max};
  CHECK(checked_product(zero, &r));
  CHECK(r == 0);
  const std::vector<int64_t> over = {int64_t(1) << 32, int64_t(1) << 32};
  CHECK_FALSE(checked_product(over, &r));
  const std::vector<int64_t> over3 = {int64_t(1) << 21, int64_t(1) << 21, int64_t(1) << 21};
  CHECK_FALSE(checked_product(over3, &r));
  const std::vector<int64_t> negative = {4, -1, 2};
  CHECK_FALSE(checked_product(negative, &r));
  const std::vector<int64_t> two_negatives = {-2, -3};  // positive product, still invalid dims
  CHECK_FALSE(checked_product(two_negatives, &r));
  const std::vector<int64_t> min_dim = {kI64Min};
  CHECK_FALSE(checked_product(min_dim, &r));
}

TEST_CASE("checked_math: align_up") {
  uint64_t r = 1;
  CHECK(checked_align_up(0, 64, &r));
  CHECK(r == 0);
  CHECK(checked_align_up(1, 64, &r));
  CHECK(r == 64);
  CHECK(checked_align_up(64, 64, &r));
  CHECK(r == 64);
  CHECK(checked_align_up(65, 64, &r));
  CHECK(r == 128);
  CHECK(checked_align_up(12345, 1, &r));
  CHECK(r == 12345);
  CHECK(checked_align_up(kU64Max - 63, 64, &r));  // already a multiple of 64
  CHECK(r == kU64Max - 63);
  CHECK_FALSE(checked_align_up(kU64Max - 62, 64, &r));
  CHECK_FALSE(checked_align_up(kU64Max, 64, &r));
  CHECK(checked_align_up(kU64Max, 1, &r));
  CHECK(r == kU64Max);
  CHECK_FALSE(checked_align_up(kU64Max, 2, &r));
}

TEST_CASE("checked_math: Result forms name the quantity") {
  Result<uint64_t> a = checked_add_or_error(kU64Max, 1, "header size");
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == StatusCode::overflow);
  CHECK(a.status().message().find("header size") != std::string::npos);
  Result<uint64_t> m = checked_mul_or_error(uint64_t(1) << 40, uint64_t(1) << 40, "tensor 'w' bytes");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::overflow);
  CHECK(m.status().message().find("tensor 'w' bytes") != std::string::npos);
  Result<uint64_t> fine = checked_mul_or_error(1 << 20, 4, "x");
  REQUIRE(fine.ok());
  CHECK(*fine == uint64_t(4) << 20);
}

}  // namespace
}  // namespace longrun
