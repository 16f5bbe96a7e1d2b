// Shape inference of matmul, the elementwise ops, cast, softmax, layer_norm, embedding,
// attention, sparse_attention and axial_attention (valid shapes and every kind of
// rejection), plus sanity checks of their reference kernels on tiny hand-computed examples.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "longrun/ops/schema.h"

using namespace longrun;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

// Runs infer_op; on success stores output 0 in *out.
Status infer(OpKind k, const OpAttrs& a, std::vector<TensorDesc> in, TensorDesc* out = nullptr) {
  std::vector<TensorDesc> outs;
  Status st = infer_op(k, a, in, &outs);
  if (st.ok() && out != nullptr) *out = outs[0];
  return st;
}

// An error whose code and message are what the test expects (message checked by substrings).
void check_error(const Status& st, StatusCode code, std::initializer_list<const char*> parts) {
  CHECK_FALSE(st.ok());
  CHECK(st.code() == code);
  for (const char* p : parts) CHECK_MESSAGE(st.message().find(p) != std::string::npos, st.message());
}

TensorDesc f32(std::initializer_list<int64_t> d) { return TensorDesc(DType::f32, d); }

// An owning test tensor: values stored as T, viewed through a (contiguous) desc.
template <typename T>
struct Buf {
  std::vector<T> v;
  TensorView view;
  Buf(DType t, std::initializer_list<int64_t> dims, std::vector<T> vals) : v(std::move(vals)) {
    view.desc = TensorDesc(t, dims);
    if (v.empty()) v.resize(size_t(view.desc.numel()));
    REQUIRE(int64_t(v.size()) == view.desc.numel());
    view.data = v.data();
  }
};
using F = Buf<float>;
F f(std::initializer_list<int64_t> dims, std::vector<float> vals = {}) {
  return F(DType::f32, dims, std::move(vals));
}

Status run(KernelFn fn, const OpAttrs& attrs, std::vector<TensorView> in, TensorView out) {
  KernelArgs a;
  a.attrs = &attrs;
  a.inputs = in;
  a.outputs = std::span<const TensorView>(&out, 1);
  return fn(a);
}

}  // namespace

TEST_CASE("matmul: output shape with trans flags, batch broadcast, bias and C") {
  TensorDesc y;
  REQUIRE(infer(OpKind::matmul, MatmulAttrs{}, {f32({2, 3, 4}), f32({4, 5})}, &y).ok());
  CHECK(y == f32({2, 3, 5}));
  MatmulAttrs t;
  t.trans_a = t.trans_b = true;
  REQUIRE(infer(OpKind::matmul, t, {f32({4, 3}), TensorDesc(DType::bf16, {5, 4})}, &y).ok());
  CHECK(y == f32({3, 5}));
  REQUIRE(
      infer(OpKind::matmul, MatmulAttrs{}, {f32({2, 1, 3, 4}), TensorDesc(DType::f16, {5, 4, 6})}, &y).ok());
  CHECK(y == f32({2, 5, 3, 6}));
  MatmulAttrs bc;
  bc.has_bias = bc.has_c = true;
  REQUIRE(infer(OpKind::matmul, bc, {f32({3, 4}), f32({4, 5}), f32({5}), f32({7, 3, 5})}, &y).ok());
  CHECK(y == f32({7, 3, 5}));  // C's batch joins the broadcast
}

TEST_CASE("matmul: rejections name the input and the mismatch") {
  check_error(infer(OpKind::matmul, MatmulAttrs{}, {f32({3, 4}), f32({5, 6})}), StatusCode::invalid_argument,
              {"matmul", "input 1", "K", "expected 4", "found 5"});
  check_error(infer(OpKind::matmul, MatmulAttrs{}, {TensorDesc(DType::f16, {3, 4}), f32({4, 6})}),
              StatusCode::invalid_argument, {"input 0", "f32", "f16"});
  check_error(infer(OpKind::matmul, MatmulAttrs{}, {f32({4}), f32({4, 6})}), StatusCode::invalid_argument,
              {"input 0", "rank"});
  check_error(infer(OpKind::matmul, MatmulAttrs{}, {f32({2, 3, 4}), f32({3, 4, 6})}),
              StatusCode::invalid_argument, {"broadcast"});
  check_error(infer(OpKind::matmul, MatmulAttrs{}, {f32({3, 4}), f32({4, 6}), f32({6})}),
              StatusCode::invalid_argument, {"has_bias", "3"});
  MatmulAttrs b;
  b.has_bias = true;
  check_error(infer(OpKind::matmul, b, {f32({3, 4}), f32({4, 6}), f32({5})}), StatusCode::invalid_argument,
              {"input 2", "N", "expected 6"});
  MatmulAttrs c;
  c.has_c = true;
  check_error(infer(OpKind::matmul, c, {f32({3, 4}), f32({4, 6}), f32({2, 6})}), StatusCode::invalid_argument,
              {"input 2", "M", "expected 3"});
  MatmulAttrs act;
  act.activation = Activation(9);
  check_error(infer(OpKind::matmul, act, {f32({3, 4}), f32({4, 6})}), StatusCode::invalid_argument,
              {"activation"});
}

TEST_CASE("elementwise: broadcasting, unary shapes and cast") {
  TensorDesc y;
  REQUIRE(infer(OpKind::add, AddAttrs{}, {f32({2, 1, 3}), f32({4, 3})}, &y).ok());
  CHECK(y == f32({2, 4, 3}));
  REQUIRE(infer(OpKind::mul, MulAttrs{}, {f32({}), f32({2})}, &y).ok());
  CHECK(y == f32({2}));
  check_error(infer(OpKind::sub, SubAttrs{}, {f32({2, 3}), f32({4})}), StatusCode::invalid_argument,
              {"sub", "input 0", "input 1", "broadcast"});
  check_error(infer(OpKind::add, AddAttrs{}, {f32({2}), TensorDesc(DType::i32, {2})}),
              StatusCode::invalid_argument, {"input 1", "i32"});
  REQUIRE(infer(OpKind::gelu, GeluAttrs{}, {f32({2, 3})}, &y).ok());
  CHECK(y == f32({2, 3}));
  REQUIRE(infer(OpKind::scale, ScaleAttrs{2.0f, 1.0f}, {f32({})}, &y).ok());
  CHECK(y.rank() == 0);
  check_error(infer(OpKind::exp, ExpAttrs{}, {TensorDesc(DType::f16, {2})}), StatusCode::invalid_argument,
              {"exp", "input 0", "f16"});
  REQUIRE(infer(OpKind::cast, CastAttrs{DType::i64}, {TensorDesc(DType::bf16, {2, 5})}, &y).ok());
  CHECK(y == TensorDesc(DType::i64, {2, 5}));
  check_error(infer(OpKind::cast, CastAttrs{DType(42)}, {f32({2})}), StatusCode::invalid_argument,
              {"cast", "42"});
}

TEST_CASE("softmax and layer_norm: axis, causal, mask and parameter checks") {
  TensorDesc y;
  SoftmaxAttrs m;
  m.has_mask = true;
  REQUIRE(infer(OpKind::softmax, m, {f32({2, 3, 4}), f32({3, 1})}, &y).ok());
  CHECK(y == f32({2, 3, 4}));
  check_error(infer(OpKind::softmax, m, {f32({2, 3}), f32({4, 2, 3})}), StatusCode::invalid_argument,
              {"softmax", "input 1", "broadcast to [2,3]"});
  check_error(infer(OpKind::softmax, m, {f32({2, 3})}), StatusCode::invalid_argument,
              {"has_mask", "2 inputs"});
  check_error(infer(OpKind::softmax, SoftmaxAttrs{}, {f32({2, 3}), f32({3})}), StatusCode::invalid_argument,
              {"has_mask"});
  SoftmaxAttrs ax;
  ax.axis = 2;
  check_error(infer(OpKind::softmax, ax, {f32({2, 3})}), StatusCode::invalid_argument, {"axis 2", "input 0"});
  SoftmaxAttrs causal;
  causal.causal = true;
  causal.axis = 0;
  check_error(infer(OpKind::softmax, causal, {f32({2, 3})}), StatusCode::invalid_argument,
              {"causal", "last axis"});
  causal.axis = -1;
  check_error(infer(OpKind::softmax, causal, {f32({3})}), StatusCode::invalid_argument, {"causal", "rank"});

  REQUIRE(infer(OpKind::layer_norm, LayerNormAttrs{},
                {f32({2, 8}), TensorDesc(DType::f16, {8}), TensorDesc(DType::bf16, {8})}, &y)
              .ok());
  CHECK(y == f32({2, 8}));
  check_error(infer(OpKind::layer_norm, LayerNormAttrs{}, {f32({2, 8}), f32({8}), f32({7})}),
              StatusCode::invalid_argument, {"layer_norm", "input 2", "expected 8", "found 7"});
  check_error(infer(OpKind::layer_norm, LayerNormAttrs{-1.0f}, {f32({2, 8}), f32({8}), f32({8})}),
              StatusCode::invalid_argument, {"eps"});
  check_error(
      infer(OpKind::layer_norm, LayerNormAttrs{}, {f32({2, 8}), TensorDesc(DType::i32, {8}), f32({8})}),
      StatusCode::invalid_argument, {"input 1", "i32"});
}

TEST_CASE("embedding: output appends D to the ids' shape") {
  TensorDesc y;
  REQUIRE(infer(OpKind::embedding, EmbeddingAttrs{},
                {TensorDesc(DType::f16, {10, 4}), TensorDesc(DType::i64, {2, 3})}, &y)
              .ok());
  CHECK(y == f32({2, 3, 4}));
  REQUIRE(infer(OpKind::embedding, EmbeddingAttrs{}, {f32({10, 4}), TensorDesc(DType::i32, {})}, &y).ok());
  CHECK(y == f32({4}));
  check_error(infer(OpKind::embedding, EmbeddingAttrs{}, {f32({10, 4}), f32({3})}),
              StatusCode::invalid_argument, {"embedding", "input 1", "i32/i64"});
  check_error(infer(OpKind::embedding, EmbeddingAttrs{}, {f32({10}), TensorDesc(DType::i32, {3})}),
              StatusCode::invalid_argument, {"input 0", "rank 2"});
  check_error(
      infer(OpKind::embedding, EmbeddingAttrs{}, {f32({10, 4}), TensorDesc(DType::i32, {1, 1, 1, 1, 1, 1})}),
      StatusCode::invalid_argument, {"input 1", "rank"});
}

TEST_CASE("attention and sparse_attention: q/k/v, mask and index shapes") {
  TensorDesc y;
  AttentionAttrs pm;
  pm.has_key_padding_mask = true;
  const TensorDesc q = f32({2, 4, 5, 8}), k = f32({2, 4, 7, 8}), v = f32({2, 4, 7, 3});
  REQUIRE(infer(OpKind::attention, pm, {q, k, v, TensorDesc(DType::u8, {2, 7})}, &y).ok());
  CHECK(y == f32({2, 4, 5, 3}));
  check_error(infer(OpKind::attention, pm, {q, k, v, TensorDesc(DType::u8, {2, 5})}),
              StatusCode::invalid_argument, {"attention", "input 3", "Nk", "expected 7", "found 5"});
  check_error(infer(OpKind::attention, pm, {q, k, v, TensorDesc(DType::f32, {2, 7})}),
              StatusCode::invalid_argument, {"input 3", "u8"});
  check_error(infer(OpKind::attention, pm, {q, k, v}), StatusCode::invalid_argument,
              {"has_key_padding_mask"});
  check_error(infer(OpKind::attention, AttentionAttrs{}, {q, f32({2, 4, 7, 6}), v}),
              StatusCode::invalid_argument, {"input 1", "head dim", "expected 8"});
  check_error(infer(OpKind::attention, AttentionAttrs{}, {q, k, f32({2, 4, 6, 3})}),
              StatusCode::invalid_argument, {"input 2", "Nk"});
  check_error(infer(OpKind::attention, AttentionAttrs{}, {f32({4, 5, 8}), k, v}),
              StatusCode::invalid_argument, {"input 0", "rank 4"});

  REQUIRE(infer(OpKind::sparse_attention, SparseAttentionAttrs{},
                {q, k, v, TensorDesc(DType::i32, {1, 4, 5, 2})}, &y)
              .ok());
  CHECK(y == f32({2, 4, 5, 3}));
  check_error(infer(OpKind::sparse_attention, SparseAttentionAttrs{},
                    {q, k, v, TensorDesc(DType::i64, {1, 1, 5, 2})}),
              StatusCode::invalid_argument, {"sparse_attention", "input 3", "i32", "i64"});
  check_error(infer(OpKind::sparse_attention, SparseAttentionAttrs{},
                    {q, k, v, TensorDesc(DType::i32, {3, 1, 5, 2})}),
              StatusCode::invalid_argument, {"input 3", "B or 1"});
  check_error(infer(OpKind::sparse_attention, SparseAttentionAttrs{},
                    {q, k, v, TensorDesc(DType::i32, {1, 1, 4, 2})}),
              StatusCode::invalid_argument, {"input 3", "Nq"});
}

TEST_CASE("attention and sparse_attention: bf16 k and v (a bf16 KV cache), f32 q and output") {
  TensorDesc y;
  const TensorDesc q = f32({2, 4, 5, 8}), k = f32({2, 4, 7, 8}), v = f32({2, 4, 7, 3});
  const TensorDesc kb(DType::bf16, {2, 4, 7, 8}), vb(DType::bf16, {2, 4, 7, 3});
  REQUIRE(infer(OpKind::attention, AttentionAttrs{}, {q, kb, vb}, &y).ok());
  CHECK(y == f32({2, 4, 5, 3}));
  const TensorDesc ix(DType::i32, {1, 4, 5, 2});
  REQUIRE(infer(OpKind::sparse_attention, SparseAttentionAttrs{}, {q, kb, vb, ix}, &y).ok());
  CHECK(y == f32({2, 4, 5, 3}));
  // k and v share one dtype; q stays f32; f16 is not a KV dtype.
  check_error(infer(OpKind::attention, AttentionAttrs{}, {q, kb, v}), StatusCode::invalid_argument,
              {"attention", "input 2", "dtype of input 1"});
  check_error(infer(OpKind::sparse_attention, SparseAttentionAttrs{}, {q, k, vb, ix}),
              StatusCode::invalid_argument, {"sparse_attention", "input 2", "dtype of input 1"});
  check_error(infer(OpKind::attention, AttentionAttrs{}, {TensorDesc(DType::bf16, {2, 4, 5, 8}), kb, vb}),
              StatusCode::invalid_argument, {"input 0", "f32"});
  check_error(infer(OpKind::attention, AttentionAttrs{},
                    {q, TensorDesc(DType::f16, {2, 4, 7, 8}), TensorDesc(DType::f16, {2, 4, 7, 3})}),
              StatusCode::invalid_argument, {"input 1", "f16"});
  // axial_attention keeps f32 keys and values.
  AxialAttentionAttrs a;
  a.segment = 4;
  const TensorDesc qa = f32({1, 1, 8, 8}), ka(DType::bf16, {1, 1, 8, 8}), va(DType::bf16, {1, 1, 8, 8});
  check_error(infer(OpKind::axial_attention, a, {qa, ka, va, f32({1, 1, 8, 8}), f32({1, 1, 8, 8})}),
              StatusCode::invalid_argument, {"axial_attention", "input 1"});
}

TEST_CASE("axial_attention: q/k/v/ks/vs, segment and mask shapes") {
  TensorDesc y;
  AxialAttentionAttrs a;
  a.segment = 4;
  // N = 12 = 3 rows of 4; hv 3 != hd 8.
  const TensorDesc q = f32({2, 4, 12, 8}), k = f32({2, 4, 12, 8}), v = f32({2, 4, 12, 3});
  const TensorDesc ks = f32({2, 4, 12, 8}), vs = f32({2, 4, 12, 3});
  REQUIRE(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}, &y).ok());
  CHECK(y == f32({2, 4, 12, 3}));
  a.causal = true;
  REQUIRE(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}, &y).ok());
  CHECK(y == f32({2, 4, 12, 3}));
  // segment = N (one row) and segment 1 (N rows of one).
  a.segment = 12;
  CHECK(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}).ok());
  a.segment = 1;
  CHECK(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}).ok());

  // segment must be >= 1 and divide N.
  a.segment = 5;
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "segment 5", "divide N = 12"});
  a.segment = 0;
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "segment 0", ">= 1"});
  a.segment = -4;
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "segment -4"});
  a.segment = 24;  // larger than N
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "segment 24"});
  a.segment = 4;

  // ks like k, vs like v (every dim), all f32 rank 4.
  check_error(infer(OpKind::axial_attention, a, {q, k, v, f32({2, 4, 12, 7}), vs}),
              StatusCode::invalid_argument, {"axial_attention", "input 3", "dim 3", "expected 8", "found 7"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, f32({2, 4, 8, 8}), vs}),
              StatusCode::invalid_argument, {"input 3", "dim 2", "expected 12", "found 8"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, f32({1, 4, 12, 8}), vs}),
              StatusCode::invalid_argument, {"input 3", "dim 0", "expected 2", "found 1"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, f32({2, 4, 12, 8})}),
              StatusCode::invalid_argument, {"input 4", "dim 3", "expected 3", "found 8"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, f32({2, 3, 12, 3})}),
              StatusCode::invalid_argument, {"input 4", "dim 1", "expected 4", "found 3"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, f32({2, 4, 12}), vs}), StatusCode::invalid_argument,
              {"input 3", "rank 4"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, TensorDesc(DType::f16, {2, 4, 12, 3})}),
              StatusCode::invalid_argument, {"input 4", "f32"});
  // Keys are the query positions: k and v have N rows too.
  check_error(infer(OpKind::axial_attention, a,
                    {q, f32({2, 4, 8, 8}), f32({2, 4, 8, 3}), f32({2, 4, 8, 8}), f32({2, 4, 8, 3})}),
              StatusCode::invalid_argument, {"input 1", "expected 12", "found 8"});
  check_error(infer(OpKind::axial_attention, a, {q, f32({2, 4, 12, 6}), v, ks, vs}),
              StatusCode::invalid_argument, {"input 1", "head dim", "expected 8"});
  check_error(infer(OpKind::axial_attention, a, {f32({4, 12, 8}), k, v, ks, vs}),
              StatusCode::invalid_argument, {"input 0", "rank 4"});

  // Key padding mask [B, N] u8.
  AxialAttentionAttrs pm = a;
  pm.has_key_padding_mask = true;
  REQUIRE(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs, TensorDesc(DType::u8, {2, 12})}, &y).ok());
  CHECK(y == f32({2, 4, 12, 3}));
  check_error(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs, TensorDesc(DType::u8, {2, 11})}),
              StatusCode::invalid_argument, {"axial_attention", "input 5", "N", "expected 12", "found 11"});
  check_error(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs, TensorDesc(DType::u8, {1, 12})}),
              StatusCode::invalid_argument, {"input 5", "B", "expected 2", "found 1"});
  check_error(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs, TensorDesc(DType::u8, {2, 1, 12})}),
              StatusCode::invalid_argument, {"input 5", "rank 2"});
  check_error(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs, TensorDesc(DType::f32, {2, 12})}),
              StatusCode::invalid_argument, {"input 5", "u8"});

  // Input count: 5 without the mask, 6 with it (the schema allows 5..6).
  check_error(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "has_key_padding_mask=true", "needs 6 inputs, found 5"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks, vs, TensorDesc(DType::u8, {2, 12})}),
              StatusCode::invalid_argument,
              {"axial_attention", "has_key_padding_mask=false", "needs 5 inputs, found 6"});
  check_error(infer(OpKind::axial_attention, a, {q, k, v, ks}), StatusCode::invalid_argument,
              {"axial_attention", "expected 5..6 inputs, found 4"});
  check_error(infer(OpKind::axial_attention, pm, {q, k, v, ks, vs, TensorDesc(DType::u8, {2, 12}), q}),
              StatusCode::invalid_argument, {"axial_attention", "expected 5..6 inputs, found 7"});
  // Another op's attrs struct.
  check_error(infer(OpKind::axial_attention, AttentionAttrs{}, {q, k, v, ks, vs}),
              StatusCode::invalid_argument, {"axial_attention", "attribute struct"});
}

TEST_CASE("attention with_lse: a second output lse f32 [B, H, Nq]") {
  const TensorDesc q = f32({2, 4, 5, 8}), k = f32({2, 4, 7, 8}), v = f32({2, 4, 7, 3});
  const TensorDesc mask(DType::u8, {2, 7});
  std::vector<TensorDesc> outs;
  REQUIRE(infer_op(OpKind::attention, AttentionAttrs{}, std::vector<TensorDesc>{q, k, v}, &outs).ok());
  CHECK(outs.size() == 1);
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    const AttentionAttrs a{.scale = 0.5f, .causal = causal, .with_lse = true};
    REQUIRE(infer_op(OpKind::attention, a, std::vector<TensorDesc>{q, k, v}, &outs).ok());
    REQUIRE(outs.size() == 2);
    CHECK(outs[0] == f32({2, 4, 5, 3}));
    CHECK(outs[1] == f32({2, 4, 5}));
    AttentionAttrs pm = a;
    pm.has_key_padding_mask = true;
    REQUIRE(infer_op(OpKind::attention, pm, std::vector<TensorDesc>{q, k, v, mask}, &outs).ok());
    REQUIRE(outs.size() == 2);
    CHECK(outs[0] == f32({2, 4, 5, 3}));
    CHECK(outs[1] == f32({2, 4, 5}));
  }
  // Nq != Nk: lse follows the queries. Errors are the same as without the flag.
  REQUIRE(infer_op(OpKind::attention, AttentionAttrs{.with_lse = true},
                   std::vector<TensorDesc>{f32({1, 1, 1, 2}), f32({1, 1, 9, 2}), f32({1, 1, 9, 1})}, &outs)
              .ok());
  REQUIRE(outs.size() == 2);
  CHECK(outs[1] == f32({1, 1, 1}));
  check_error(infer(OpKind::attention, AttentionAttrs{.with_lse = true}, {q, f32({2, 4, 7, 6}), v}),
              StatusCode::invalid_argument, {"attention", "input 1", "head dim"});
  // Only attention's with_lse adds an output: axial_attention with a direct state has one.
  AxialAttentionAttrs ax;
  ax.has_direct_state = true;
  REQUIRE(infer_op(OpKind::axial_attention, ax,
                   std::vector<TensorDesc>{q, f32({2, 4, 5, 3}), f32({2, 4, 5}), q, f32({2, 4, 5, 3})}, &outs)
              .ok());
  CHECK(outs.size() == 1);
}

TEST_CASE("axial_attention has_direct_state: y0 and lse0 shapes") {
  TensorDesc y;
  AxialAttentionAttrs a;
  a.segment = 4;
  a.has_direct_state = true;
  // N = 12 = 3 rows of 4; hd 8, hv 3: inputs q, y0 [B, H, N, hv], lse0 [B, H, N], ks, vs.
  const TensorDesc q = f32({2, 4, 12, 8}), y0 = f32({2, 4, 12, 3}), lse0 = f32({2, 4, 12});
  const TensorDesc ks = f32({2, 4, 12, 8}), vs = f32({2, 4, 12, 3});
  REQUIRE(infer(OpKind::axial_attention, a, {q, y0, lse0, ks, vs}, &y).ok());
  CHECK(y == f32({2, 4, 12, 3}));
  a.causal = true;
  REQUIRE(infer(OpKind::axial_attention, a, {q, y0, lse0, ks, vs}, &y).ok());
  CHECK(y == f32({2, 4, 12, 3}));
  a.segment = 12;
  CHECK(infer(OpKind::axial_attention, a, {q, y0, lse0, ks, vs}).ok());
  a.segment = 1;
  CHECK(infer(OpKind::axial_attention, a, {q, y0, lse0, ks, vs}).ok());
  a.segment = 4;
  AxialAttentionAttrs pm = a;
  pm.has_key_padding_mask = true;
  REQUIRE(infer(OpKind::axial_attention, pm, {q, y0, lse0, ks, vs, TensorDesc(DType::u8, {2, 12})}, &y).ok());
  CHECK(y == f32({2, 4, 12, 3}));

  // y0 must be shaped like vs ([B, H, N, hv]) and f32.
  check_error(infer(OpKind::axial_attention, a, {q, f32({2, 4, 12, 8}), lse0, ks, vs}),
              StatusCode::invalid_argument, {"axial_attention", "input 1", "dim 3", "expected 3", "found 8"});
  check_error(infer(OpKind::axial_attention, a, {q, f32({2, 4, 11, 3}), lse0, ks, vs}),
              StatusCode::invalid_argument, {"input 1", "dim 2", "expected 12", "found 11"});
  check_error(infer(OpKind::axial_attention, a, {q, f32({2, 1, 12, 3}), lse0, ks, vs}),
              StatusCode::invalid_argument, {"input 1", "dim 1", "expected 4", "found 1"});
  check_error(infer(OpKind::axial_attention, a, {q, f32({1, 4, 12, 3}), lse0, ks, vs}),
              StatusCode::invalid_argument, {"input 1", "dim 0", "expected 2", "found 1"});
  check_error(infer(OpKind::axial_attention, a, {q, f32({2, 4, 36}), lse0, ks, vs}),
              StatusCode::invalid_argument, {"input 1", "rank 4"});
  check_error(infer(OpKind::axial_attention, a, {q, TensorDesc(DType::f16, {2, 4, 12, 3}), lse0, ks, vs}),
              StatusCode::invalid_argument, {"input 1", "f32"});
  // lse0 [B, H, N] f32: wrong rank, each dim, dtype.
  check_error(infer(OpKind::axial_attention, a, {q, y0, f32({2, 4, 12, 1}), ks, vs}),
              StatusCode::invalid_argument, {"axial_attention", "input 2", "rank 3", "found 4"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, f32({2, 48}), ks, vs}), StatusCode::invalid_argument,
              {"input 2", "rank 3", "found 2"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, f32({2, 4, 11}), ks, vs}),
              StatusCode::invalid_argument, {"input 2", "dim 2", "expected 12", "found 11"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, f32({2, 3, 12}), ks, vs}),
              StatusCode::invalid_argument, {"input 2", "dim 1", "expected 4", "found 3"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, f32({1, 4, 12}), ks, vs}),
              StatusCode::invalid_argument, {"input 2", "dim 0", "expected 2", "found 1"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, TensorDesc(DType::i32, {2, 4, 12}), ks, vs}),
              StatusCode::invalid_argument, {"input 2", "f32", "i32"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, TensorDesc(DType::f16, {2, 4, 12}), ks, vs}),
              StatusCode::invalid_argument, {"input 2", "f32", "f16"});
  // The two-pass inputs (k, v) under has_direct_state: v is not a [B, H, N] lse0.
  check_error(infer(OpKind::axial_attention, a, {q, f32({2, 4, 12, 8}), f32({2, 4, 12, 3}), ks, vs}),
              StatusCode::invalid_argument, {"axial_attention", "input 1"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, f32({2, 4, 12, 3}), ks, vs}),
              StatusCode::invalid_argument, {"axial_attention", "input 2", "rank 3"});
  // ... and a direct state without the flag: lse0 is not a [B, H, N, hv] v.
  AxialAttentionAttrs two_pass = a;
  two_pass.has_direct_state = false;
  check_error(infer(OpKind::axial_attention, two_pass, {q, y0, lse0, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention"});
  // Segment, mask and input-count rules still hold.
  AxialAttentionAttrs bad = a;
  bad.segment = 5;
  check_error(infer(OpKind::axial_attention, bad, {q, y0, lse0, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "segment 5", "divide N = 12"});
  check_error(infer(OpKind::axial_attention, pm, {q, y0, lse0, ks, vs, TensorDesc(DType::u8, {2, 11})}),
              StatusCode::invalid_argument, {"axial_attention", "input 5", "expected 12", "found 11"});
  check_error(infer(OpKind::axial_attention, pm, {q, y0, lse0, ks, vs}), StatusCode::invalid_argument,
              {"axial_attention", "needs 6 inputs, found 5"});
  // ks / vs still shaped by q and each other.
  check_error(infer(OpKind::axial_attention, a, {q, y0, lse0, f32({2, 4, 12, 7}), vs}),
              StatusCode::invalid_argument, {"axial_attention", "head dim", "expected 8", "found 7"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, lse0, f32({2, 4, 8, 8}), vs}),
              StatusCode::invalid_argument,
              {"axial_attention", "input 3", "dim 2", "N, from input 0", "found 8"});
  check_error(infer(OpKind::axial_attention, a, {q, y0, lse0, ks, f32({2, 4, 8, 3})}),
              StatusCode::invalid_argument, {"axial_attention", "expected 12", "found 8"});
}

TEST_CASE("reference softmax: hand values, masks, causal, NaN and in place") {
  F x = f({2, 2}, {0.0f, std::log(3.0f), 5.0f, 5.0f});
  F y = f({2, 2});
  REQUIRE(run(reference_softmax, SoftmaxAttrs{}, {x.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(0.25));
  CHECK(y.v[1] == doctest::Approx(0.75));
  CHECK(y.v[2] == doctest::Approx(0.5));

  SoftmaxAttrs m;
  m.has_mask = true;
  F mask = f({2, 2}, {-kInf, -kInf, 0.0f, -kInf});  // row 0 fully masked
  REQUIRE(run(reference_softmax, m, {x.view, mask.view}, y.view).ok());
  CHECK(y.v == std::vector<float>{0.0f, 0.0f, 1.0f, 0.0f});

  SoftmaxAttrs c;
  c.causal = true;  // rows 2, cols 3: row i masks j > i + 1
  F z = f({2, 3}, {0, 0, 0, 0, 0, 0}), zy = f({2, 3});
  REQUIRE(run(reference_softmax, c, {z.view}, zy.view).ok());
  CHECK(zy.v[0] == doctest::Approx(0.5));
  CHECK(zy.v[2] == 0.0f);
  CHECK(zy.v[5] == doctest::Approx(1.0 / 3));

  F n = f({2}, {std::nanf(""), 1.0f}), ny = f({2});
  REQUIRE(run(reference_softmax, SoftmaxAttrs{}, {n.view}, ny.view).ok());
  CHECK((std::isnan(ny.v[0]) && std::isnan(ny.v[1])));

  // Along axis 0 (lines of stride 2), written in place over the input buffer.
  F col = f({2, 2}, {0.0f, 1.0f, std::log(3.0f), 1.0f});
  SoftmaxAttrs a0;
  a0.axis = 0;
  REQUIRE(run(reference_softmax, a0, {col.view}, col.view).ok());
  CHECK(col.v[0] == doctest::Approx(0.25));
  CHECK(col.v[2] == doctest::Approx(0.75));
  CHECK(col.v[1] == doctest::Approx(0.5));
}

TEST_CASE("reference matmul: 2x2 by hand, trans, strided view, f16 B, epilogue") {
  F A = f({2, 2}, {1, 2, 3, 4}), B = f({2, 2}, {5, 6, 7, 8}), Y = f({2, 2});
  REQUIRE(run(reference_matmul, MatmulAttrs{}, {A.view, B.view}, Y.view).ok());
  CHECK(Y.v == std::vector<float>{19, 22, 43, 50});
  MatmulAttrs tb;
  tb.trans_b = true;  // A B^T
  REQUIRE(run(reference_matmul, tb, {A.view, B.view}, Y.view).ok());
  CHECK(Y.v == std::vector<float>{17, 23, 39, 53});
  // A^T as a permuted (non-contiguous) view, no trans flag: same as trans_a.
  TensorView At = A.view;
  const int perm[2] = {1, 0};
  At.desc = *A.view.desc.permute(perm);
  REQUIRE(run(reference_matmul, MatmulAttrs{}, {At, B.view}, Y.view).ok());
  CHECK(Y.v == std::vector<float>{26, 30, 38, 44});
  Buf<uint16_t> Bh(DType::f16, {2, 2}, {f32_to_f16(5), f32_to_f16(6), f32_to_f16(7), f32_to_f16(8)});
  REQUIRE(run(reference_matmul, MatmulAttrs{}, {A.view, Bh.view}, Y.view).ok());
  CHECK(Y.v == std::vector<float>{19, 22, 43, 50});
  // relu(0.5 * A B + bias - 1 * C)
  MatmulAttrs e;
  e.alpha = 0.5f;
  e.beta = -1.0f;
  e.has_bias = e.has_c = true;
  e.activation = Activation::relu;
  F bias = f({2}, {1, -100}), C = f({2, 2}, {0, 0, 10, -100});
  REQUIRE(run(reference_matmul, e, {A.view, B.view, bias.view, C.view}, Y.view).ok());
  CHECK(Y.v == std::vector<float>{10.5f, 0.0f, 12.5f, 25.0f});
  // The oracle re-checks its views: a wrongly shaped output is an error, not a stray write.
  F bad = f({2, 3});
  check_error(run(reference_matmul, MatmulAttrs{}, {A.view, B.view}, bad.view), StatusCode::invalid_argument,
              {"matmul", "output 0", "f32[2,3]", "expected f32[2,2]"});
}

TEST_CASE("reference elementwise, cast and layer_norm") {
  F x = f({3}, {1.0f, -1.0f, 0.0f}), y = f({3});
  REQUIRE(run(reference_gelu, GeluAttrs{}, {x.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(0.8413447460685429));
  CHECK(y.v[1] == doctest::Approx(0.8413447460685429 - 1.0));  // gelu(-1) = Phi(1) - 1
  REQUIRE(run(reference_gelu_tanh, GeluTanhAttrs{}, {x.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(0.8411919906082768));
  // add in place with broadcasting: x[2,2] += b[2]
  F a = f({2, 2}, {1, 2, 3, 4}), b = f({2}, {10, 20});
  REQUIRE(run(reference_add, AddAttrs{}, {a.view, b.view}, a.view).ok());
  CHECK(a.v == std::vector<float>{11, 22, 13, 24});

  F c = f({4}, {3.7f, -3.7f, 255.9f, -0.5f});
  Buf<uint8_t> u(DType::u8, {4}, {});
  check_error(run(reference_cast, CastAttrs{DType::u8}, {c.view}, u.view), StatusCode::out_of_range,
              {"cast", "[1]", "u8"});
  Buf<int32_t> i(DType::i32, {4}, {});
  REQUIRE(run(reference_cast, CastAttrs{DType::i32}, {c.view}, i.view).ok());
  CHECK(i.v == std::vector<int32_t>{3, -3, 255, 0});
  F nan = f({1}, {std::nanf("")});
  Buf<int32_t> i1(DType::i32, {1}, {});
  check_error(run(reference_cast, CastAttrs{DType::i32}, {nan.view}, i1.view), StatusCode::invalid_argument,
              {"cast", "NaN"});
  Buf<int64_t> big(DType::i64, {1}, {int64_t(1) << 40});
  check_error(run(reference_cast, CastAttrs{DType::i32}, {big.view}, i1.view), StatusCode::out_of_range,
              {"cast", "1099511627776"});

  F ln = f({1, 3}, {1, 2, 3}), g = f({3}, {1, 1, 2}), be = f({3}, {0, 0, 1});
  REQUIRE(run(reference_layer_norm, LayerNormAttrs{0.0f}, {ln.view, g.view, be.view}, ln.view).ok());
  const double s = std::sqrt(1.5);  // (x - 2) / sqrt(2/3)
  CHECK(ln.v[0] == doctest::Approx(-s));
  CHECK(ln.v[1] == doctest::Approx(0.0));
  CHECK(ln.v[2] == doctest::Approx(2 * s + 1));
}

TEST_CASE("reference embedding: gather and out-of-range id") {
  F table = f({3, 2}, {0, 1, 10, 11, 20, 21});
  Buf<int32_t> ids(DType::i32, {2}, {2, 0});
  F y = f({2, 2});
  REQUIRE(run(reference_embedding, EmbeddingAttrs{}, {table.view, ids.view}, y.view).ok());
  CHECK(y.v == std::vector<float>{20, 21, 0, 1});
  Buf<int64_t> bad(DType::i64, {2}, {1, 7});
  check_error(run(reference_embedding, EmbeddingAttrs{}, {table.view, bad.view}, y.view),
              StatusCode::out_of_range, {"embedding", "[1]", "id 7", "[0, 3)"});
}

TEST_CASE("reference attention and sparse_attention: tiny by hand") {
  // One query (q = 1), keys 0 and ln 3: weights 1/4, 3/4 over values 1, 2 -> 1.75.
  F q = f({1, 1, 2, 1}, {1, 1}), k = f({1, 1, 2, 1}, {0, std::log(3.0f)}), v = f({1, 1, 2, 1}, {1, 2});
  F y = f({1, 1, 2, 1});
  REQUIRE(run(reference_attention, AttentionAttrs{}, {q.view, k.view, v.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(1.75));
  AttentionAttrs c;
  c.causal = true;  // query 0 sees key 0 only
  REQUIRE(run(reference_attention, c, {q.view, k.view, v.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(1.0));
  CHECK(y.v[1] == doctest::Approx(1.75));
  AttentionAttrs pm;
  pm.has_key_padding_mask = pm.causal = true;
  Buf<uint8_t> mask(DType::u8, {1, 2}, {0, 1});  // query 0 has no visible key -> zeros
  REQUIRE(run(reference_attention, pm, {q.view, k.view, v.view, mask.view}, y.view).ok());
  CHECK(y.v[0] == 0.0f);
  CHECK(y.v[1] == doctest::Approx(2.0));

  Buf<int32_t> ix(DType::i32, {1, 1, 2, 3}, {-1, 1, 0, -1, -1, -1});
  REQUIRE(run(reference_sparse_attention, SparseAttentionAttrs{}, {q.view, k.view, v.view, ix.view}, y.view)
              .ok());
  CHECK(y.v[0] == doctest::Approx(1.75));
  CHECK(y.v[1] == 0.0f);                                           // no valid index
  Buf<int32_t> rep(DType::i32, {1, 1, 2, 3}, {0, 0, 1, 1, 1, 1});  // key 0 twice: weights 2:3
  REQUIRE(run(reference_sparse_attention, SparseAttentionAttrs{}, {q.view, k.view, v.view, rep.view}, y.view)
              .ok());
  CHECK(y.v[0] == doctest::Approx(1.6));
  CHECK(y.v[1] == doctest::Approx(2.0));
  Buf<int32_t> bad(DType::i32, {1, 1, 2, 3}, {0, 1, -1, 0, 2, 0});
  check_error(
      run(reference_sparse_attention, SparseAttentionAttrs{}, {q.view, k.view, v.view, bad.view}, y.view),
      StatusCode::out_of_range, {"sparse_attention", "[0,0,1,1]", "index 2", "[-1, 2)"});
  bad.v[4] = -2;
  check_error(
      run(reference_sparse_attention, SparseAttentionAttrs{}, {q.view, k.view, v.view, bad.view}, y.view),
      StatusCode::out_of_range, {"index -2"});
}

TEST_CASE("reference axial_attention: tiny by hand") {
  // N = 2, hd = hv = 1, q = 1: logits are k and ks; weights exp(0) = 1 and exp(ln 3) = 3.
  const float l3 = std::log(3.0f);
  F q = f({1, 1, 2, 1}, {1, 1}), k = f({1, 1, 2, 1}, {0, l3}), v = f({1, 1, 2, 1}, {1, 2});
  F ks = f({1, 1, 2, 1}, {0, l3}), vs = f({1, 1, 2, 1}, {10, 20});
  F y = f({1, 1, 2, 1});
  AxialAttentionAttrs a;  // segment 1: direct key = the query itself, column slots = both positions
  REQUIRE(run(reference_axial_attention, a, {q.view, k.view, v.view, ks.view, vs.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx((1 + 10 + 3 * 20) / 5.0));
  CHECK(y.v[1] == doctest::Approx((3 * 2 + 10 + 3 * 20) / 7.0));
  a.causal = true;  // column slots of earlier rows only
  REQUIRE(run(reference_axial_attention, a, {q.view, k.view, v.view, ks.view, vs.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(1.0));
  CHECK(y.v[1] == doctest::Approx((3 * 2 + 10) / 4.0));
  a.has_key_padding_mask = true;  // position 0 padded: query 0 sees nothing in causal
  Buf<uint8_t> mask(DType::u8, {1, 2}, {0, 1});
  REQUIRE(
      run(reference_axial_attention, a, {q.view, k.view, v.view, ks.view, vs.view, mask.view}, y.view).ok());
  CHECK(y.v[0] == 0.0f);
  CHECK(y.v[1] == doctest::Approx(2.0));
  a.causal = false;
  REQUIRE(
      run(reference_axial_attention, a, {q.view, k.view, v.view, ks.view, vs.view, mask.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx(20.0));
  CHECK(y.v[1] == doctest::Approx((3 * 2 + 3 * 20) / 6.0));
  AxialAttentionAttrs whole;  // segment = N: one row, the own position as a column slot
  whole.segment = 2;
  REQUIRE(run(reference_axial_attention, whole, {q.view, k.view, v.view, ks.view, vs.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx((1 + 3 * 2 + 10) / 5.0));
  CHECK(y.v[1] == doctest::Approx((1 + 3 * 2 + 3 * 20) / 7.0));
}

TEST_CASE("reference axial_attention has_direct_state: tiny by hand") {
  // N = 2, segment 1, hd = hv = 1, q = 1, scale 0.5: column logits 0.5 * ks = 0 and ln 3
  // (weights 1 and 3). lse0 enters unscaled: ln 3 is weight 3 (ln 3 * 0.5 would be sqrt 3).
  const float l3 = std::log(3.0f);
  F q = f({1, 1, 2, 1}, {1, 1}), y0 = f({1, 1, 2, 1}, {5, 7}), lse0 = f({1, 1, 2}, {l3, -kInf});
  F ks = f({1, 1, 2, 1}, {0, 2 * l3}), vs = f({1, 1, 2, 1}, {10, 20});
  F y = f({1, 1, 2, 1});
  AxialAttentionAttrs a;
  a.scale = 0.5f;
  a.has_direct_state = true;
  REQUIRE(run(reference_axial_attention, a, {q.view, y0.view, lse0.view, ks.view, vs.view}, y.view).ok());
  CHECK(y.v[0] == doctest::Approx((3 * 5 + 10 + 3 * 20) / 7.0));
  CHECK(y.v[1] == doctest::Approx((10 + 3 * 20) / 4.0));  // lse0 = -inf: the column slots alone
  a.causal = true;                                        // row 0: no column slot; row 1: slot 0
  REQUIRE(run(reference_axial_attention, a, {q.view, y0.view, lse0.view, ks.view, vs.view}, y.view).ok());
  CHECK(y.v[0] == 5.0f);  // y0 unchanged
  CHECK(y.v[1] == doctest::Approx(10.0));
  lse0.v[0] = -kInf;  // nothing at all: zeros
  REQUIRE(run(reference_axial_attention, a, {q.view, y0.view, lse0.view, ks.view, vs.view}, y.view).ok());
  CHECK(y.v[0] == 0.0f);
  // The mask drops column slots only: position 1 padded removes slot 1, not query 1's state.
  lse0.v[0] = l3;
  lse0.v[1] = 0.0f;
  a.causal = false;
  a.has_key_padding_mask = true;
  Buf<uint8_t> mask(DType::u8, {1, 2}, {1, 0});
  REQUIRE(run(reference_axial_attention, a, {q.view, y0.view, lse0.view, ks.view, vs.view, mask.view}, y.view)
              .ok());
  CHECK(y.v[0] == doctest::Approx((3 * 5 + 10) / 4.0));
  CHECK(y.v[1] == doctest::Approx((7 + 10) / 2.0));
}
