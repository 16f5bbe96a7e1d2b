// Flax -> PyTorch layout helpers on hand-made tensors: the transposes of Dense/DenseGeneral
// kernels for every element size, the reshape of head biases, the rank checks and the name
// mapping. (The golden Combiner kernels are checked against numpy in flax_golden_test.cpp.)
#include "convert/flax/flax_layout.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

using namespace longrun;
using namespace longrun::checkpoint;

namespace {

template <typename T>
FlaxTensor make(FlaxDType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  auto buf = std::make_shared<std::vector<std::byte>>(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(buf->data(), values.data(), buf->size());
  FlaxTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes = *buf;
  t.owned = std::move(buf);
  return t;
}

template <typename T>
std::vector<T> values(const FlaxTensor& t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

template <typename T>
std::vector<T> iota(size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = T(i);
  return v;
}

}  // namespace

TEST_CASE("flax layout: Dense kernel [in, out] -> weight [out, in]") {
  const auto w = dense_kernel_to_torch(make(FlaxDType::f32, {2, 3}, iota<float>(6)), "Dense_0/kernel");
  REQUIRE(w.ok());
  CHECK(w->shape == std::vector<int64_t>{3, 2});
  CHECK(values<float>(*w) == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("flax layout: DenseGeneral kernels into and out of heads") {
  // q [D=2, H=2, hd=3]: weight[h*3 + e, d] = q[d, h, e] = d*6 + h*3 + e.
  const auto q = heads_in_kernel_to_torch(make(FlaxDType::f32, {2, 2, 3}, iota<float>(12)), "query/kernel");
  REQUIRE(q.ok());
  CHECK(q->shape == std::vector<int64_t>{6, 2});
  CHECK(values<float>(*q) == std::vector<float>{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
  // Combiner's query [emb, num_repeat, heads, head_dim] flattens the repeat axis too.
  const auto r =
      heads_in_kernel_to_torch(make(FlaxDType::f32, {2, 1, 2, 3}, iota<float>(12)), "query/kernel");
  REQUIRE(r.ok());
  CHECK(r->shape == std::vector<int64_t>{6, 2});
  CHECK(values<float>(*r) == values<float>(*q));
  // out [H=2, hd=1, O=3]: weight[o, h] = out[h, 0, o] = h*3 + o.
  const auto o = heads_out_kernel_to_torch(make(FlaxDType::f32, {2, 1, 3}, iota<float>(6)), "out/kernel");
  REQUIRE(o.ok());
  CHECK(o->shape == std::vector<int64_t>{3, 2});
  CHECK(values<float>(*o) == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("flax layout: transposes move whole elements of every size, beyond one tile") {
  const int64_t rows = 37, cols = 45;  // not multiples of the 32-element tile
  const auto check = [&](auto zero, FlaxDType dtype) {
    using T = decltype(zero);
    const auto w = dense_kernel_to_torch(make(dtype, {rows, cols}, iota<T>(size_t(rows * cols))), "k");
    REQUIRE(w.ok());
    const std::vector<T> v = values<T>(*w);
    bool same = true;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = 0; r < rows; ++r) same = same && v[size_t(c * rows + r)] == T(r * cols + c);
    CHECK(same);
  };
  check(uint8_t{}, FlaxDType::u8);  // values wrap mod 256 on both sides
  check(uint16_t{}, FlaxDType::bf16);
  check(float{}, FlaxDType::f32);
  check(double{}, FlaxDType::f64);
}

TEST_CASE("flax layout: biases, embeddings and LayerNorm parameters") {
  const FlaxTensor hb = make(FlaxDType::f32, {2, 3}, iota<float>(6));
  const auto b = flatten_bias(hb, "query/bias");
  REQUIRE(b.ok());
  CHECK(b->shape == std::vector<int64_t>{6});
  CHECK(b->bytes.data() == hb.bytes.data());  // a reshape shares the bytes
  const auto e = embed_to_torch(make(FlaxDType::f32, {5, 2}, iota<float>(10)), "Embed_0/embedding");
  REQUIRE(e.ok());
  CHECK(e->shape == std::vector<int64_t>{5, 2});
  const auto ln =
      layer_norm_param_to_torch(make(FlaxDType::f32, {4}, iota<float>(4)), "LayerNorm_0/scale", 4);
  REQUIRE(ln.ok());
  CHECK(torch_param_name("kernel") == "weight");
  CHECK(torch_param_name("scale") == "weight");
  CHECK(torch_param_name("embedding") == "weight");
  CHECK(torch_param_name("bias") == "bias");
  CHECK_FALSE(torch_param_name("mean").has_value());
}

TEST_CASE("flax layout: wrong ranks are refused with the tensor name and shape") {
  const FlaxTensor r3 = make(FlaxDType::f32, {2, 2, 3}, iota<float>(12));
  const FlaxTensor r1 = make(FlaxDType::f32, {4}, iota<float>(4));
  const auto expect = [](const Result<FlaxTensor>& r, const char* needle) {
    REQUIRE_FALSE(r.ok());
    CAPTURE(r.status().message());
    CHECK(r.status().code() == StatusCode::invalid_argument);
    CHECK(r.status().message().find(needle) != std::string::npos);
  };
  expect(dense_kernel_to_torch(r3, "Dense_0/kernel"),
         "flax tensor 'Dense_0/kernel': expected a Dense kernel [in, out], found shape [2, 2, 3]");
  expect(heads_in_kernel_to_torch(make(FlaxDType::f32, {2, 3}, iota<float>(6)), "q"), "found shape [2, 3]");
  expect(heads_out_kernel_to_torch(r1, "out"), "a DenseGeneral kernel [heads, head_dim, out]");
  expect(kernel_to_torch_weight(r3, 0, "k"), "more than 0 axes");
  expect(kernel_to_torch_weight(r3, 3, "k"), "more than 3 axes");
  expect(embed_to_torch(r1, "Embed_0/embedding"), "an Embed table [vocab, features], found shape [4]");
  expect(layer_norm_param_to_torch(r1, "LayerNorm_0/scale", 8), "a LayerNorm parameter [8], found shape [4]");
  expect(layer_norm_param_to_torch(r3, "LayerNorm_0/bias"), "found shape [2, 2, 3]");
  expect(flatten_bias(make(FlaxDType::f32, {}, iota<float>(1)), "b"), "a bias of rank >= 1");
}
