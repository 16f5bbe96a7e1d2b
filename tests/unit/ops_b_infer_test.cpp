// Shape inference and reference-kernel sanity checks for the spectral, selection, scan and
// layout ops (dct .. where). Expected values are hand-computed or taken from scipy 1.10 /
// torch 1.13 (quoted where used).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "longrun/ops/schema.h"

namespace longrun {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TensorDesc F32(std::initializer_list<int64_t> d) { return TensorDesc(DType::f32, d); }

// Runs infer_op; returns the single output desc or the failing Status.
Result<TensorDesc> infer1(OpKind k, const OpAttrs& attrs, std::vector<TensorDesc> in) {
  std::vector<TensorDesc> out;
  LR_RETURN_IF_ERROR(infer_op(k, attrs, in, &out));
  return out[0];
}

// Checks that inference fails with `code` and a message containing every fragment.
void check_error(OpKind k, const OpAttrs& attrs, std::vector<TensorDesc> in, StatusCode code,
                 std::initializer_list<const char*> fragments) {
  Result<TensorDesc> r = infer1(k, attrs, std::move(in));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == code);
  const std::string& m = r.status().message();
  CHECK_MESSAGE(m.rfind(std::string(op_name(k)) + ":", 0) == 0, m);
  for (const char* f : fragments) CHECK_MESSAGE(m.find(f) != std::string::npos, m, " lacks: ", f);
}

// A tensor with its own storage.
struct Buf {
  TensorDesc desc;
  std::vector<std::byte> bytes;
  TensorView view() { return {desc, bytes.data()}; }
  template <typename T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
};

template <typename T>
Buf make(DType t, std::initializer_list<int64_t> dims, std::vector<T> values) {
  Buf b{TensorDesc(t, dims), {}};
  REQUIRE(size_t(b.desc.numel()) == values.size());
  b.bytes.resize(values.size() * sizeof(T));
  std::memcpy(b.bytes.data(), values.data(), b.bytes.size());
  return b;
}
Buf f32(std::initializer_list<int64_t> dims, std::vector<float> v) {
  return make(DType::f32, dims, std::move(v));
}

// Infers, allocates and runs the reference kernel of `k`.
Buf run_ref(OpKind k, const OpAttrs& attrs, std::vector<Buf> inputs) {
  std::vector<TensorDesc> in_descs;
  std::vector<TensorView> in_views;
  for (Buf& b : inputs) {
    in_descs.push_back(b.desc);
    in_views.push_back(b.view());
  }
  std::vector<TensorDesc> out_descs;
  const Status st = infer_op(k, attrs, in_descs, &out_descs);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  Buf out{out_descs[0], std::vector<std::byte>(size_t(out_descs[0].nbytes()), std::byte{0xAB})};
  std::vector<TensorView> out_views{out.view()};
  KernelArgs args;
  args.attrs = &attrs;
  args.inputs = in_views;
  args.outputs = out_views;
  const Status rs = op_schema(k).reference(args);
  REQUIRE_MESSAGE(rs.ok(), rs.to_string());
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(std::abs(got[i] - want[i]) <= tol, "i=", i, " got ", got[i]);
}

}  // namespace

TEST_CASE("infer: dct / idct / spectral_filter") {
  CHECK(*infer1(OpKind::dct, DctAttrs{-1, 0}, {F32({2, 10})}) == F32({2, 10}));
  CHECK(*infer1(OpKind::dct, DctAttrs{0, 3}, {F32({7, 2})}) == F32({3, 2}));
  check_error(OpKind::dct, DctAttrs{-1, 11}, {F32({2, 10})}, StatusCode::invalid_argument,
              {"keep 11", "0 (all) .. 10", "input 0 (f32[2,10])"});
  check_error(OpKind::dct, DctAttrs{-1, -1}, {F32({2, 10})}, StatusCode::invalid_argument, {"keep -1"});
  check_error(OpKind::dct, DctAttrs{}, {TensorDesc(DType::f16, {4})}, StatusCode::invalid_argument,
              {"expected dtype f32, found f16"});
  check_error(OpKind::dct, DctAttrs{2, 0}, {F32({2, 10})}, StatusCode::invalid_argument,
              {"axis 2 out of range"});
  check_error(OpKind::dct, DctAttrs{}, {F32({3, 0})}, StatusCode::invalid_argument,
              {"must be >= 1, found 0"});

  CHECK(*infer1(OpKind::idct, IdctAttrs{-1, 0}, {F32({2, 5})}) == F32({2, 5}));
  CHECK(*infer1(OpKind::idct, IdctAttrs{-1, 16}, {F32({2, 5})}) == F32({2, 16}));
  check_error(OpKind::idct, IdctAttrs{-1, -2}, {F32({5})}, StatusCode::invalid_argument, {"n -2"});

  CHECK(*infer1(OpKind::spectral_filter, SpectralFilterAttrs{-2, 5}, {F32({1, 10, 4})}) == F32({1, 5, 4}));
  // keep > N caps at N, like the official code's slice.
  CHECK(*infer1(OpKind::spectral_filter, SpectralFilterAttrs{-2, 20}, {F32({1, 10, 4})}) == F32({1, 10, 4}));
  check_error(OpKind::spectral_filter, SpectralFilterAttrs{-2, 0}, {F32({10, 4})},
              StatusCode::invalid_argument, {"keep 0", "expected >= 1"});
}

TEST_CASE("infer: topk_mask / topk_indices") {
  CHECK(*infer1(OpKind::topk_mask, TopkMaskAttrs{3, -1, false}, {F32({2, 5})}) ==
        TensorDesc(DType::u8, {2, 5}));
  CHECK(*infer1(OpKind::topk_mask, TopkMaskAttrs{9, 0, true}, {F32({2, 5})}) == F32({2, 5}));
  check_error(OpKind::topk_mask, TopkMaskAttrs{0, -1, false}, {F32({2, 5})}, StatusCode::invalid_argument,
              {"k 0", "expected >= 1"});
  check_error(OpKind::topk_mask, TopkMaskAttrs{}, {TensorDesc(DType::i32, {5})}, StatusCode::invalid_argument,
              {"found i32"});

  CHECK(*infer1(OpKind::topk_indices, TopkIndicesAttrs{3, -1}, {F32({2, 5})}) ==
        TensorDesc(DType::i32, {2, 3}));
  CHECK(*infer1(OpKind::topk_indices, TopkIndicesAttrs{2, 0}, {F32({2, 5})}) ==
        TensorDesc(DType::i32, {2, 5}));
  check_error(OpKind::topk_indices, TopkIndicesAttrs{6, -1}, {F32({2, 5})}, StatusCode::invalid_argument,
              {"k 6", "1 .. 5"});
}

TEST_CASE("infer: matmul_topk") {
  const TensorDesc u8_mask(DType::u8, {1, 7}), rows(DType::i32, {2, 1});
  CHECK(*infer1(OpKind::matmul_topk, MatmulTopkAttrs{.k = 3}, {F32({2, 5, 4}), F32({2, 7, 4})}) ==
        TensorDesc(DType::i32, {2, 5, 3}));
  CHECK(*infer1(OpKind::matmul_topk, MatmulTopkAttrs{.k = 7, .has_key_mask = true, .has_row_k = true},
                {F32({2, 5, 4}), F32({2, 7, 4}), u8_mask, rows}) == TensorDesc(DType::i32, {2, 5, 7}));
  check_error(OpKind::matmul_topk, MatmulTopkAttrs{.k = 8}, {F32({2, 5, 4}), F32({2, 7, 4})},
              StatusCode::invalid_argument, {"k 8", "1 .. 7"});
  check_error(OpKind::matmul_topk, MatmulTopkAttrs{.k = 2}, {F32({2, 5, 4}), F32({2, 7, 3})},
              StatusCode::invalid_argument, {"input 1", "(d) expected 4, found 3"});
  check_error(OpKind::matmul_topk, MatmulTopkAttrs{.k = 2}, {F32({2, 5, 4}), F32({1, 7, 4})},
              StatusCode::invalid_argument, {"(batch) expected 2, found 1"});
  check_error(OpKind::matmul_topk, MatmulTopkAttrs{.k = 2, .has_key_mask = true},
              {F32({2, 5, 4}), F32({2, 7, 4})}, StatusCode::invalid_argument, {"2 inputs, expected 3"});
  check_error(OpKind::matmul_topk, MatmulTopkAttrs{.k = 2, .has_key_mask = true},
              {F32({2, 5, 4}), F32({2, 7, 4}), TensorDesc(DType::u8, {3, 7})}, StatusCode::invalid_argument,
              {"input 2", "batch (or 1)"});
  check_error(OpKind::matmul_topk, MatmulTopkAttrs{.k = 2, .has_row_k = true},
              {F32({2, 5, 4}), F32({2, 7, 4}), TensorDesc(DType::i32, {2, 4})}, StatusCode::invalid_argument,
              {"input 2", "M (or 1)"});
}

TEST_CASE("infer: cummax / cumsum / segment_max / upsample_nearest") {
  CHECK(*infer1(OpKind::cummax, CummaxAttrs{0, true, true}, {F32({4, 3})}) == F32({4, 3}));
  check_error(OpKind::cummax, CummaxAttrs{-3}, {F32({4, 3})}, StatusCode::invalid_argument, {"axis -3"});

  CHECK(*infer1(OpKind::cumsum, CumsumAttrs{1, false, false}, {F32({2, 4096})}) == F32({2, 4096}));
  CHECK(*infer1(OpKind::cumsum, CumsumAttrs{-2, true, true}, {F32({2, 5, 0})}) == F32({2, 5, 0}));
  check_error(OpKind::cumsum, CumsumAttrs{2}, {F32({4, 3})}, StatusCode::invalid_argument, {"axis 2"});
  check_error(OpKind::cumsum, CumsumAttrs{}, {TensorDesc(DType::i32, {4})}, StatusCode::invalid_argument,
              {"i32", "f32"});

  CHECK(*infer1(OpKind::segment_max, SegmentMaxAttrs{-2, 3}, {F32({2, 7, 3})}) == F32({2, 3, 3}));
  CHECK(*infer1(OpKind::segment_max, SegmentMaxAttrs{-2, 7}, {F32({7, 3})}) == F32({1, 3}));
  CHECK(*infer1(OpKind::segment_max, SegmentMaxAttrs{-1, 4}, {F32({2, 0})}) == F32({2, 0}));
  check_error(OpKind::segment_max, SegmentMaxAttrs{-2, 0}, {F32({7, 3})}, StatusCode::invalid_argument,
              {"segment 0"});

  CHECK(*infer1(OpKind::upsample_nearest, UpsampleNearestAttrs{-2, 9}, {F32({1, 4, 2})}) == F32({1, 9, 2}));
  check_error(OpKind::upsample_nearest, UpsampleNearestAttrs{-2, 0}, {F32({4, 2})},
              StatusCode::invalid_argument, {"size 0"});
  check_error(OpKind::upsample_nearest, UpsampleNearestAttrs{-2, 3}, {F32({0, 2})},
              StatusCode::invalid_argument, {"found 0"});
}

TEST_CASE("infer: layout ops") {
  const TensorDesc i32_23(DType::i32, {2, 3});
  CHECK(*infer1(OpKind::concat, ConcatAttrs{1}, {i32_23, TensorDesc(DType::i32, {2, 5})}) ==
        TensorDesc(DType::i32, {2, 8}));
  CHECK(*infer1(OpKind::concat, ConcatAttrs{-2}, {i32_23}) == i32_23);
  check_error(OpKind::concat, ConcatAttrs{1}, {i32_23, F32({2, 5})}, StatusCode::invalid_argument,
              {"input 1", "expected dtype i32 (as input 0), found f32"});
  check_error(OpKind::concat, ConcatAttrs{1}, {i32_23, TensorDesc(DType::i32, {3, 5})},
              StatusCode::invalid_argument, {"dim 0 expected 2 (as input 0), found 3"});

  CHECK(*infer1(OpKind::slice, SliceAttrs{0, -3, INT64_MAX, 1}, {F32({10})}) == F32({3}));
  CHECK(*infer1(OpKind::slice, SliceAttrs{0, 1, 8, 2}, {F32({10, 2})}) == F32({4, 2}));
  CHECK(*infer1(OpKind::slice, SliceAttrs{0, 20, 30, 1}, {F32({10})}) == F32({0}));
  CHECK(*infer1(OpKind::slice, SliceAttrs{1, -100, -1, 1}, {F32({2, 10})}) == F32({2, 9}));
  check_error(OpKind::slice, SliceAttrs{0, 0, 5, 0}, {F32({10})}, StatusCode::invalid_argument, {"step 0"});

  CHECK(*infer1(OpKind::pad, PadAttrs{1, 1, 2, 0.f}, {TensorDesc(DType::u8, {3, 4})}) ==
        TensorDesc(DType::u8, {3, 7}));
  check_error(OpKind::pad, PadAttrs{0, -1, 0, 0.f}, {F32({3})}, StatusCode::invalid_argument, {"before=-1"});
  check_error(OpKind::pad, PadAttrs{0, 1, 0, -1.f}, {TensorDesc(DType::u8, {3})},
              StatusCode::invalid_argument, {"not representable"});
  check_error(OpKind::pad, PadAttrs{0, 1, 0, 0.5f}, {i32_23}, StatusCode::invalid_argument,
              {"not representable"});

  TransposeAttrs tp{3, {2, 0, 1}};
  CHECK(*infer1(OpKind::transpose, tp, {F32({2, 3, 4})}) == F32({4, 2, 3}));
  check_error(OpKind::transpose, TransposeAttrs{3, {0, 0, 1}}, {F32({2, 3, 4})}, StatusCode::invalid_argument,
              {"perm [0,0,1] is not a permutation"});
  check_error(OpKind::transpose, TransposeAttrs{2, {1, 0}}, {F32({2, 3, 4})}, StatusCode::invalid_argument,
              {"perm has 2 entries", "expected 3"});

  CHECK(*infer1(OpKind::reshape, ReshapeAttrs{2, {-1, 4}}, {F32({2, 3, 4})}) == F32({6, 4}));
  CHECK(*infer1(OpKind::reshape, ReshapeAttrs{0, {}}, {F32({1, 1})}) == F32({}));
  // A strided (transposed) input is accepted: the reference copies in row-major order.
  const TensorDesc strided = *F32({3, 4}).permute(std::vector<int>{1, 0});
  CHECK(*infer1(OpKind::reshape, ReshapeAttrs{1, {12}}, {strided}) == F32({12}));
  check_error(OpKind::reshape, ReshapeAttrs{1, {5}}, {F32({2, 3, 4})}, StatusCode::invalid_argument,
              {"input 0 (f32[2,3,4]) to [5]", "24 elements"});
  check_error(OpKind::reshape, ReshapeAttrs{2, {-1, -1}}, {F32({4})}, StatusCode::invalid_argument,
              {"more than one -1"});

  CHECK(*infer1(OpKind::roll, RollAttrs{-1, -7}, {i32_23}) == i32_23);

  const TensorDesc cond(DType::u8, {2, 1});
  CHECK(*infer1(OpKind::where, WhereAttrs{}, {cond, F32({1, 3}), F32({})}) == F32({2, 3}));
  check_error(OpKind::where, WhereAttrs{}, {F32({2, 1}), F32({3}), F32({3})}, StatusCode::invalid_argument,
              {"input 0", "expected dtype u8"});
  check_error(OpKind::where, WhereAttrs{}, {cond, F32({3}), TensorDesc(DType::i32, {3})},
              StatusCode::invalid_argument, {"input 2", "expected dtype f32 (as input 1), found i32"});
  check_error(OpKind::where, WhereAttrs{}, {TensorDesc(DType::u8, {4}), F32({3}), F32({3})},
              StatusCode::invalid_argument, {"do not broadcast"});
  check_error(OpKind::where, WhereAttrs{}, {cond, F32({3})}, StatusCode::invalid_argument,
              {"expected 3 inputs, found 2"});
}

TEST_CASE("reference: dct / idct match scipy norm='ortho'") {
  // dct of a constant: only X0 = sqrt(N) * c survives.
  Buf y = run_ref(OpKind::dct, DctAttrs{-1, 0}, {f32({8}, std::vector<float>(8, 2.f))});
  check_close(y.as<float>(), {std::sqrt(8.0) * 2, 0, 0, 0, 0, 0, 0, 0}, 1e-6);
  // scipy.fft.dct([1,2,3,4,5], norm='ortho'), keep 4.
  y = run_ref(OpKind::dct, DctAttrs{-1, 4}, {f32({5}, {1, 2, 3, 4, 5})});
  check_close(y.as<float>(), {6.7082039324993694, -3.1494998889505519, 0.0, -0.28399022782564654}, 2e-6);
  // scipy.fft.idct([1,-2,0.5], n=5, norm='ortho') (zero padding) and n=2 (truncation).
  y = run_ref(OpKind::idct, IdctAttrs{-1, 5}, {f32({3}, {1, -2, 0.5f})});
  check_close(y.as<float>(),
              {-0.49995467771428692, -0.39400222721283829, 0.13098582948311988, 1.0929899106278997,
               1.9060491423158956},
              1e-6);
  y = run_ref(OpKind::idct, IdctAttrs{-1, 2}, {f32({4}, {1, -2, 0.5f, 3})});
  check_close(y.as<float>(), {-0.70710678118654735, 2.1213203435596424}, 1e-6);
  // Along axis 0 of a [7,2] tensor (stride 2), idct(dct(x)) = x for an odd (prime) length.
  const std::vector<float> x = {0.5f, 1, -1, 2, 2, 3, 3, -4, -0.25f, 5, 1.5f, 6, 4, -7};
  Buf c = run_ref(OpKind::dct, DctAttrs{0, 0}, {f32({7, 2}, x)});
  Buf back = run_ref(OpKind::idct, IdctAttrs{0, 0}, {c});
  check_close(back.as<float>(), std::vector<double>(x.begin(), x.end()), 5e-6);
}

TEST_CASE("reference: spectral_filter") {
  // docs/models.md#spectral-filter amplitude effect: a constant 1 over N=10 with M=5 becomes sqrt(2).
  Buf y =
      run_ref(OpKind::spectral_filter, SpectralFilterAttrs{-1, 5}, {f32({10}, std::vector<float>(10, 1.f))});
  check_close(y.as<float>(), std::vector<double>(5, 1.41421356), 1e-6);
  // scipy: idct(dct(x, norm='ortho')[:3], norm='ortho'), along axis -2 of [7,1].
  y = run_ref(OpKind::spectral_filter, SpectralFilterAttrs{-2, 3},
              {f32({7, 1}, {0.5f, -1, 2, 3, -0.25f, 1.5f, 4})});
  CHECK(y.desc == F32({3, 1}));
  check_close(y.as<float>(), {0.48439827305776623, 2.0951041947862468, 3.8033708215587652}, 2e-6);
  // keep >= N: M = N, so the filter is the identity.
  y = run_ref(OpKind::spectral_filter, SpectralFilterAttrs{-1, 9}, {f32({4}, {1, -2, 3, 0.5f})});
  check_close(y.as<float>(), {1, -2, 3, 0.5}, 1e-6);
}

TEST_CASE("reference: topk ties and NaN") {
  // torch.topk ranks NaN above +inf; ties here go to the lower index (torch leaves tie order
  // unspecified and gives [6,1,2] for the three 3s).
  const std::vector<float> row = {1, 3, 3, kNaN, kInf, 2, 3};
  Buf m = run_ref(OpKind::topk_mask, TopkMaskAttrs{3, -1, false}, {f32({7}, row)});
  CHECK(m.as<uint8_t>() == std::vector<uint8_t>{0, 1, 0, 1, 1, 0, 0});
  Buf s = run_ref(OpKind::topk_mask, TopkMaskAttrs{4, -1, true}, {f32({7}, row)});
  const std::vector<float> sv = s.as<float>();
  CHECK(sv[0] == -kInf);
  CHECK(sv[1] == 3);
  CHECK(sv[2] == 3);
  CHECK(std::isnan(sv[3]));
  CHECK(sv[4] == kInf);
  CHECK(sv[5] == -kInf);
  CHECK(sv[6] == -kInf);
  // k is clamped to the row length.
  m = run_ref(OpKind::topk_mask, TopkMaskAttrs{10, -1, false}, {f32({3}, {1, 1, 1})});
  CHECK(m.as<uint8_t>() == std::vector<uint8_t>{1, 1, 1});
  Buf ix = run_ref(OpKind::topk_indices, TopkIndicesAttrs{5, -1}, {f32({7}, row)});
  CHECK(ix.as<int32_t>() == std::vector<int32_t>{3, 4, 1, 2, 6});
  // Along axis 0 of [3,2]: columns are independent rows; equal values keep index order.
  ix = run_ref(OpKind::topk_indices, TopkIndicesAttrs{2, 0}, {f32({3, 2}, {5, 0, 5, 0, 7, 0})});
  CHECK(ix.as<int32_t>() == std::vector<int32_t>{2, 0, 0, 1});
}

TEST_CASE("reference: cummax") {
  const std::vector<float> x = {1, 3, 2, 5, 4};
  auto run = [&](bool reverse, bool exclusive) {
    return run_ref(OpKind::cummax, CummaxAttrs{-1, reverse, exclusive}, {f32({5}, x)}).as<float>();
  };
  CHECK(run(false, false) == std::vector<float>{1, 3, 3, 5, 5});
  CHECK(run(false, true) == std::vector<float>{-kInf, 1, 3, 3, 5});
  CHECK(run(true, false) == std::vector<float>{5, 5, 5, 5, 4});
  CHECK(run(true, true) == std::vector<float>{5, 5, 5, 4, -kInf});
  // NaN sticks once seen (torch.cummax).
  const std::vector<float> y =
      run_ref(OpKind::cummax, CummaxAttrs{-1, false, false}, {f32({3}, {1, kNaN, 3})}).as<float>();
  CHECK(y[0] == 1);
  CHECK(std::isnan(y[1]));
  CHECK(std::isnan(y[2]));
  // Along axis 0 of [3,2].
  CHECK(
      run_ref(OpKind::cummax, CummaxAttrs{0, false, false}, {f32({3, 2}, {1, 9, 4, 2, 3, 8})}).as<float>() ==
      std::vector<float>{1, 9, 4, 9, 4, 9});
}

TEST_CASE("reference: cumsum is the in-order f32 sum") {
  const std::vector<float> x = {1, 2, 3, 4, 5};
  auto run = [&](bool reverse, bool exclusive) {
    return run_ref(OpKind::cumsum, CumsumAttrs{-1, reverse, exclusive}, {f32({5}, x)}).as<float>();
  };
  CHECK(run(false, false) == std::vector<float>{1, 3, 6, 10, 15});
  CHECK(run(false, true) == std::vector<float>{0, 1, 3, 6, 10});
  CHECK(run(true, false) == std::vector<float>{15, 14, 12, 9, 5});
  CHECK(run(true, true) == std::vector<float>{14, 12, 9, 5, 0});
  // f32 rounding at every step, in order: 1 + 1e-8 rounds back to 1 each time (a float64
  // sum would give 1 + 4e-8, then 4e-8 after the -1).
  const std::vector<float> tiny =
      run_ref(OpKind::cumsum, CumsumAttrs{}, {f32({6}, {1, 1e-8f, 1e-8f, 1e-8f, 1e-8f, -1})}).as<float>();
  CHECK(tiny == std::vector<float>{1, 1, 1, 1, 1, 0});
  // The first term is taken as is (-0 stays -0); the empty exclusive prefix is +0.
  const std::vector<float> z =
      run_ref(OpKind::cumsum, CumsumAttrs{-1, false, true}, {f32({2}, {-0.0f, -0.0f})}).as<float>();
  CHECK_FALSE(std::signbit(z[0]));
  CHECK(std::signbit(z[1]));
  CHECK(std::signbit(run_ref(OpKind::cumsum, CumsumAttrs{}, {f32({1}, {-0.0f})}).as<float>()[0]));
  // IEEE: inf + -inf = NaN, and NaN sticks.
  const std::vector<float> w =
      run_ref(OpKind::cumsum, CumsumAttrs{}, {f32({3}, {kInf, -kInf, 1})}).as<float>();
  CHECK(w[0] == kInf);
  CHECK(std::isnan(w[1]));
  CHECK(std::isnan(w[2]));
  // Along axis 0 of [3,2]: columns are independent.
  CHECK(
      run_ref(OpKind::cumsum, CumsumAttrs{0, false, false}, {f32({3, 2}, {1, 9, 4, 2, 3, 8})}).as<float>() ==
      std::vector<float>{1, 9, 5, 11, 8, 19});
}

TEST_CASE("reference: segment_max with a ragged last segment") {
  Buf y = run_ref(OpKind::segment_max, SegmentMaxAttrs{-1, 3}, {f32({7}, {1, 5, 2, 7, 3, 0, 9})});
  CHECK(y.as<float>() == std::vector<float>{5, 7, 9});
  y = run_ref(OpKind::segment_max, SegmentMaxAttrs{-1, 2}, {f32({5}, {-1, kNaN, -3, -2, -kInf})});
  const std::vector<float> v = y.as<float>();
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == -2);
  CHECK(v[2] == -kInf);
  // axis -2 of [4,2], segment 3: rows {0,1,2} and {3}.
  y = run_ref(OpKind::segment_max, SegmentMaxAttrs{-2, 3}, {f32({4, 2}, {1, 8, 6, 2, 3, 4, -5, -6})});
  CHECK(y.as<float>() == std::vector<float>{6, 8, -5, -6});
}

TEST_CASE("reference: upsample_nearest follows torch 1.13 interpolate(mode='nearest') on f32") {
  auto src_indices = [](int64_t in, int64_t out) {
    std::vector<float> x(static_cast<size_t>(in));
    for (int64_t i = 0; i < in; ++i) x[size_t(i)] = float(i);
    Buf b{TensorDesc(DType::f32, {in}), std::vector<std::byte>(size_t(in) * 4)};
    std::memcpy(b.bytes.data(), x.data(), b.bytes.size());
    const std::vector<float> y =
        run_ref(OpKind::upsample_nearest, UpsampleNearestAttrs{-1, out}, {b}).as<float>();
    return std::vector<int64_t>(y.begin(), y.end());
  };
  // Values printed by torch 1.13 for torch.arange(in, dtype=float32).
  CHECK(src_indices(3, 7) == std::vector<int64_t>{0, 0, 0, 1, 1, 2, 2});
  CHECK(src_indices(5, 2) == std::vector<int64_t>{0, 2});
  CHECK(src_indices(4, 8) == std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(src_indices(7, 3) == std::vector<int64_t>{0, 2, 4});
  CHECK(src_indices(10, 4) == std::vector<int64_t>{0, 2, 5, 7});
  CHECK(src_indices(3, 5) == std::vector<int64_t>{0, 0, 1, 1, 2});
  CHECK(src_indices(6, 4) == std::vector<int64_t>{0, 1, 3, 4});
  // The f32 scale matters: 41 * float(2/82) = 0.99999994, so torch gives 0 on f32 (1 on f64).
  CHECK(src_indices(2, 82)[41] == 0);
  const std::vector<int64_t> a = src_indices(512, 1023);
  CHECK(a[1] == 0);
  CHECK(a[2] == 1);
  CHECK(a[777] == 388);
  CHECK(a[1022] == 511);
  const std::vector<int64_t> b = src_indices(1000, 4096);
  CHECK(b[100] == 24);
  CHECK(b[4095] == 999);
  const std::vector<int64_t> c = src_indices(1023, 512);
  CHECK(c[1] == 1);
  CHECK(c[100] == 199);
  CHECK(c[511] == 1021);
}

TEST_CASE("reference: layout ops copy raw elements") {
  auto i32 = [](std::initializer_list<int64_t> d, std::vector<int32_t> v) { return make(DType::i32, d, v); };
  Buf y = run_ref(OpKind::concat, ConcatAttrs{1}, {i32({2, 1}, {1, 2}), i32({2, 2}, {3, 4, 5, 6})});
  CHECK(y.as<int32_t>() == std::vector<int32_t>{1, 3, 4, 2, 5, 6});
  y = run_ref(OpKind::slice, SliceAttrs{-1, -5, 100, 2}, {i32({6}, {0, 1, 2, 3, 4, 5})});
  CHECK(y.as<int32_t>() == std::vector<int32_t>{1, 3, 5});
  y = run_ref(OpKind::pad, PadAttrs{0, 2, 1, 255.f}, {make<uint8_t>(DType::u8, {2}, {7, 8})});
  CHECK(y.as<uint8_t>() == std::vector<uint8_t>{255, 255, 7, 8, 255});
  y = run_ref(OpKind::transpose, TransposeAttrs{2, {1, 0}}, {i32({2, 3}, {1, 2, 3, 4, 5, 6})});
  CHECK(y.desc == TensorDesc(DType::i32, {3, 2}));
  CHECK(y.as<int32_t>() == std::vector<int32_t>{1, 4, 2, 5, 3, 6});
  // torch.roll(arange(5), 2) = [3,4,0,1,2]; roll by -7 = [2,3,4,0,1].
  y = run_ref(OpKind::roll, RollAttrs{0, 2}, {i32({5}, {0, 1, 2, 3, 4})});
  CHECK(y.as<int32_t>() == std::vector<int32_t>{3, 4, 0, 1, 2});
  y = run_ref(OpKind::roll, RollAttrs{0, -7}, {i32({5}, {0, 1, 2, 3, 4})});
  CHECK(y.as<int32_t>() == std::vector<int32_t>{2, 3, 4, 0, 1});
  y = run_ref(OpKind::where, WhereAttrs{},
              {make<uint8_t>(DType::u8, {2, 1}, {1, 0}), i32({1, 3}, {1, 2, 3}), i32({}, {-1})});
  CHECK(y.as<int32_t>() == std::vector<int32_t>{1, 2, 3, -1, -1, -1});

  // Reshape of a transposed (strided) view copies in row-major order of the view.
  const std::vector<int32_t> v = {1, 2, 3, 4, 5, 6};
  Buf t = i32({2, 3}, v);
  t.desc = *t.desc.permute(std::vector<int>{1, 0});  // view [3,2]: rows (1,4), (2,5), (3,6)
  y = run_ref(OpKind::reshape, ReshapeAttrs{1, {6}}, {t});
  CHECK(y.as<int32_t>() == std::vector<int32_t>{1, 4, 2, 5, 3, 6});

  // A NaN payload and -0 survive bit-exactly (no round trip through double).
  const uint32_t payload = 0x7fc12345u, neg_zero = 0x80000000u;
  y = run_ref(OpKind::transpose, TransposeAttrs{2, {1, 0}},
              {make<uint32_t>(DType::f32, {1, 2}, {payload, neg_zero})});
  CHECK(y.as<uint32_t>() == std::vector<uint32_t>{payload, neg_zero});
}

}  // namespace longrun
