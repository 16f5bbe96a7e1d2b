// Flax msgpack reader against files packed like flax.serialization.to_bytes
// (tests/oracles/make_flax_fixtures.py): every leaf's path, dtype, shape and bytes (or scalar
// value) must equal the manifest, and the layout helpers must reproduce numpy's transposes.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/flax/flax_layout.h"
#include "convert/flax/flax_tree.h"

using namespace longrun;
using namespace longrun::checkpoint;

namespace {

std::string golden_path(const std::string& name) { return std::string(LONGRUN_GOLDEN_DIR) + "/flax/" + name; }

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing fixture " << path << " (run tests/oracles/make_flax_fixtures.py)");
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

nlohmann::json read_manifest(const std::string& name) {
  std::ifstream f(golden_path(name + ".json"));
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

std::string hex(std::span<const std::byte> b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    s += d[uint8_t(x) >> 4];
    s += d[uint8_t(x) & 15];
  }
  return s;
}

// Parses `name`.msgpack and checks every leaf against `name`.json; returns the leaf count.
size_t check_fixture(const std::string& name) {
  const nlohmann::json m = read_manifest(name);
  const std::vector<std::byte> bytes = read_bytes(golden_path(name + ".msgpack"));
  CHECK(bytes.size() == m["bytes"].get<size_t>());
  const auto tree = read_flax_msgpack(bytes, {}, name);
  REQUIRE_MESSAGE(tree.ok(), tree.status().to_string());
  const auto leaves = flatten_flax_tree(*tree);
  REQUIRE(leaves.ok());
  const auto& want = m["leaves"];
  REQUIRE(leaves->size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const FlaxLeaf& got = (*leaves)[i];
    const auto& w = want[i];
    CAPTURE(w["path"].get<std::string>());
    CHECK(got.path == w["path"].get<std::string>());
    const std::string kind = w["kind"];
    if (kind == "tensor") {
      REQUIRE(got.tensor != nullptr);
      const FlaxTensor& t = *got.tensor;
      CHECK(flax_dtype_name(t.dtype) == w["dtype"].get<std::string>());
      CHECK(t.shape == w["shape"].get<std::vector<int64_t>>());
      CHECK(t.numpy_scalar == w["numpy_scalar"].get<bool>());
      CHECK(hex(t.bytes) == w["hex"].get<std::string>());
      CHECK(reinterpret_cast<uintptr_t>(t.bytes.data()) % flax_dtype_size(t.dtype) == 0);
      // Zero-copy views point into the input buffer; copies own their bytes.
      const bool inside = t.bytes.empty() || (t.bytes.data() >= bytes.data() &&
                                              t.bytes.data() + t.bytes.size() <= bytes.data() + bytes.size());
      CHECK(inside == t.zero_copy());
      continue;
    }
    REQUIRE(got.scalar != nullptr);
    const FlaxScalar& s = *got.scalar;
    if (kind == "bool") {
      CHECK(s.kind == FlaxScalar::Kind::boolean);
      CHECK(s.b == w["value"].get<bool>());
    } else if (kind == "int") {
      if (w["value"].is_number_unsigned() && w["value"].get<uint64_t>() > uint64_t(INT64_MAX)) {
        CHECK(s.kind == FlaxScalar::Kind::unsigned_integer);
        CHECK(s.u == w["value"].get<uint64_t>());
      } else {
        CHECK(s.kind == FlaxScalar::Kind::integer);
        CHECK(s.i == w["value"].get<int64_t>());
      }
    } else if (kind == "float") {
      CHECK(s.kind == FlaxScalar::Kind::floating);
      CHECK(s.f == w["value"].get<double>());  // exact: both sides are the same double
    } else if (kind == "string") {
      CHECK(s.kind == FlaxScalar::Kind::string);
      CHECK(s.s == w["value"].get<std::string>());
    } else {
      CHECK(kind == "none");
      CHECK(s.kind == FlaxScalar::Kind::none);
    }
  }
  return want.size();
}

const FlaxTensor* find_tensor(const std::vector<FlaxLeaf>& leaves, const std::string& path) {
  for (const FlaxLeaf& l : leaves)
    if (l.path == path) return l.tensor;
  return nullptr;
}

}  // namespace

TEST_CASE("flax: golden fixtures round-trip every leaf") {
  CHECK(check_fixture("combiner_tree") == 38);
  CHECK(check_fixture("chunked") == 4);
  CHECK(check_fixture("hf_bert_tiny") == 5);
}

TEST_CASE("flax: chunked arrays are reassembled into owned buffers") {
  const std::vector<std::byte> bytes = read_bytes(golden_path("chunked.msgpack"));
  const auto tree = read_flax_msgpack(bytes);
  REQUIRE(tree.ok());
  const auto leaves = flatten_flax_tree(*tree);
  REQUIRE(leaves.ok());
  const FlaxTensor* big = find_tensor(*leaves, "params/big/kernel");
  REQUIRE(big != nullptr);
  CHECK(big->shape == std::vector<int64_t>{5, 7});
  CHECK_FALSE(big->zero_copy());
  CHECK(big->bytes.size() == 35 * 4);
}

TEST_CASE("flax: layout helpers reproduce numpy's transposes of the Combiner kernels") {
  const nlohmann::json m = read_manifest("combiner_tree");
  const std::vector<std::byte> bytes = read_bytes(golden_path("combiner_tree.msgpack"));
  const auto tree = read_flax_msgpack(bytes);
  REQUIRE(tree.ok());
  const auto leaves = flatten_flax_tree(*tree);
  REQUIRE(leaves.ok());
  REQUIRE(m["layouts"].size() == 5);
  for (const auto& w : m["layouts"]) {
    const std::string path = w["path"];
    const std::string transform = w["transform"];
    CAPTURE(path);
    const FlaxTensor* k = find_tensor(*leaves, path);
    REQUIRE(k != nullptr);
    Result<FlaxTensor> got = transform == "dense"      ? dense_kernel_to_torch(*k, path)
                             : transform == "heads_in" ? heads_in_kernel_to_torch(*k, path)
                                                       : heads_out_kernel_to_torch(*k, path);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    CHECK(got->shape == w["shape"].get<std::vector<int64_t>>());
    CHECK(hex(got->bytes) == w["hex"].get<std::string>());
  }
}

TEST_CASE("flax: to_f32 widens f16/bf16 exactly and rounds f64") {
  const std::vector<std::byte> bytes = read_bytes(golden_path("combiner_tree.msgpack"));
  const auto tree = read_flax_msgpack(bytes);
  REQUIRE(tree.ok());
  const auto leaves = flatten_flax_tree(*tree);
  REQUIRE(leaves.ok());
  const auto values = [](const FlaxTensor& t) {
    std::vector<float> v(t.bytes.size() / 4);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
  };
  const auto f16 = to_f32(*find_tensor(*leaves, "dtypes/f16"), "f16");
  REQUIRE(f16.ok());
  CHECK(values(*f16) == std::vector<float>{-0.25f, -0.125f, 0.f, 0.125f, 0.25f, 0.375f});
  const auto bf16 = to_f32(*find_tensor(*leaves, "dtypes/bf16"), "bf16");
  REQUIRE(bf16.ok());
  const std::vector<float> b = values(*bf16);
  REQUIRE(b.size() == 5);
  CHECK(b[0] == 1.0f);
  CHECK(b[1] == -2.5f);
  CHECK(b[2] == 0.15625f);
  CHECK(b[3] == doctest::Approx(3e38).epsilon(1.0 / 128));  // bf16 has 8 significant bits
  CHECK(b[4] == doctest::Approx(1e-3).epsilon(1.0 / 128));
  const FlaxTensor& f64 = *find_tensor(*leaves, "dtypes/f64");
  const auto f = to_f32(f64, "f64");
  REQUIRE(f.ok());
  CHECK(f->shape == f64.shape);
  for (size_t i = 0; i < 6; ++i) {
    double d;
    std::memcpy(&d, f64.bytes.data() + 8 * i, 8);
    CHECK(values(*f)[i] == float(d));
  }
  const auto refused = to_f32(*find_tensor(*leaves, "dtypes/i32"), "dtypes/i32");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("'int32' is not a float type") != std::string::npos);
}
