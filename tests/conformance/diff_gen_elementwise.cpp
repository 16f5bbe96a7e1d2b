// Differential cases of the elementwise ops: add/sub/mul (broadcast patterns, IEEE
// specials, subnormals), the unary activations (vector tails, ranges that reach overflow,
// saturation and underflow, NaN propagation) and cast (rounding ties, overflow to inf,
// truncation, every dtype pair that matters, and the errors the spec defines).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/diff_case.h"

namespace longrun::conformance::diff {
namespace {

// The elementwise shape sweep: [rows, n] for every size, rows alternating 1 and 3.
template <typename Fn>
void sweep(Fn&& fn) {
  int i = 0;
  for (int64_t n : kSizes) fn(std::vector<int64_t>{i++ % 2 ? 3 : 1, n});
  for (int64_t n : kPrimes) fn(std::vector<int64_t>{2, n});
}

void binary(CaseList& L, const OpAttrs& attrs, const Fill& special) {
  Rng& r = L.rng();
  sweep([&](const std::vector<int64_t>& d) {
    L.add("same_" + dims_name(d), attrs,
          {random(r, DType::f32, d, special), random(r, DType::f32, d, special)});
  });
  // Broadcast patterns: row vector, column vector, scalar-like, rank 0, outer product,
  // a broadcast first operand (no in-place), rank 4 against rank 3.
  struct Pattern {
    std::vector<int64_t> a, b;
  };
  const Pattern patterns[] = {
      {{5, 33}, {33}},
      {{7, 17}, {7, 1}},
      {{1}, {3, 65}},
      {{4, 16}, {}},
      {{3, 1, 9}, {1, 5, 9}},
      {{17}, {6, 17}},
      {{2, 3, 4, 31}, {3, 1, 31}},
      {{8, 1}, {1, 64}},
      {{2, 1, 129}, {2, 7, 1}},
  };
  for (const Pattern& p : patterns)
    L.add("bcast_" + dims_name(p.a) + "_" + dims_name(p.b), attrs,
          {random(r, DType::f32, p.a, special), random(r, DType::f32, p.b, special)});
  // Magnitudes that overflow to inf (mul) or cancel exactly (sub).
  L.add("huge", attrs,
        {random(r, DType::f32, {3, 40}, {-3e38, 3e38}), random(r, DType::f32, {3, 40}, {-3e38, 3e38})});
  L.add("subnormal", attrs,
        {random(r, DType::f32, {2, 33}, {-1e-38, 1e-38, 0, 0, 0.5}),
         random(r, DType::f32, {2, 33}, {-1e-38, 1e-38, 0, 0, 0.5})});
  // Model-shaped: bias add over 512 rows, a residual stream.
  L.add("model_bias", attrs, {random(r, DType::f32, {512, 512}), random(r, DType::f32, {512})});
  L.add("model_residual", attrs, {random(r, DType::f32, {257, 768}), random(r, DType::f32, {257, 768})});
}

// A unary op over the sweep with values from `f`, a NaN-propagation case (NaN in, NaN out:
// IEEE and torch), and model shapes.
void unary(CaseList& L, const OpAttrs& attrs, const Fill& f, const Fill& with_specials) {
  Rng& r = L.rng();
  sweep([&](const std::vector<int64_t>& d) {
    L.add("x_" + dims_name(d), attrs, {random(r, DType::f32, d, f)});
  });
  L.add("specials", attrs, {random(r, DType::f32, {4, 37}, with_specials)});
  L.add("rank3", attrs, {random(r, DType::f32, {2, 3, 17}, f)});
  L.add("rank0", attrs, {random(r, DType::f32, std::vector<int64_t>{}, f)});
  L.add("model", attrs, {random(r, DType::f32, {512, 512}, f)});
}

Fill with_nan(Fill f, bool infs) {
  f.nan = 0.05;
  if (infs) f.inf = f.neg_inf = 0.05;
  f.zeros = 0.05;
  return f;
}

}  // namespace

void generate_add(CaseList& L) { binary(L, AddAttrs{}, kSpecial); }
void generate_sub(CaseList& L) { binary(L, SubAttrs{}, kSpecial); }
void generate_mul(CaseList& L) { binary(L, MulAttrs{}, kSpecial); }

void generate_scale(CaseList& L) {
  Rng& r = L.rng();
  // |x * scale| <= 8 (the tolerance's stated domain) for the finite values.
  const ScaleAttrs attrs[] = {{0.125f, 0.0f}, {-2.0f, 0.5f}, {1.0f, 0.0f}, {0.0f, 3.0f}, {1.5f, -1.25f}};
  int i = 0;
  sweep([&](const std::vector<int64_t>& d) {
    const ScaleAttrs& a = attrs[size_t(i++) % std::size(attrs)];
    L.add("x_" + dims_name(d) + "_s" + std::to_string(i % int(std::size(attrs))), a,
          {random(r, DType::f32, d, kFinite)});
  });
  L.add("specials", ScaleAttrs{2.0f, 1.0f}, {random(r, DType::f32, {4, 37}, kSpecial)});
  L.add("model", ScaleAttrs{0.125f, 0.0f}, {random(r, DType::f32, {512, 512}, {-8, 8})});
}

void generate_exp(CaseList& L) {
  // Up to 88.5 (below f32 overflow at 88.72, where a correctly rounded result and an 8-ulp
  // one could straddle inf) and down to -104 (subnormal results, then 0).
  unary(L, ExpAttrs{}, {-104, 88.5, 0.05, 0.05, 0.05}, with_nan({-20, 20}, true));
  Rng& r = L.rng();
  L.add("softmax_range", ExpAttrs{}, {random(r, DType::f32, {8, 129}, {-30, 0})});
}

void generate_tanh(CaseList& L) {
  unary(L, TanhAttrs{}, {-12, 12, 0.05, 0.05, 0.05}, with_nan({-20, 20}, true));
}
void generate_relu(CaseList& L) { unary(L, ReluAttrs{}, kFinite, kSpecial); }
// gelu(-inf) is -inf * 0 in the formula: not defined by the spec, so no infinities.
void generate_gelu(CaseList& L) {
  unary(L, GeluAttrs{}, {-10, 10, 0.05, 0.05, 0.05}, with_nan({-10, 10}, false));
}
void generate_gelu_tanh(CaseList& L) {
  unary(L, GeluTanhAttrs{}, {-10, 10, 0.05, 0.05, 0.05}, with_nan({-10, 10}, false));
}

namespace {

// f32 values exactly halfway between two neighbouring values of `to` (f16 or bf16), so
// round-to-nearest-even decides; plus their neighbours.
HostTensor halfway(Rng& r, DType to, int64_t n) {
  HostTensor t = zeros(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) {
    float lo, hi;
    if (to == DType::bf16) {
      const uint16_t h = uint16_t(r.integer(0, 0x7f7e)) | uint16_t(r.chance(0.5) ? 0x8000 : 0);
      lo = bf16_to_f32(h), hi = bf16_to_f32(uint16_t(h + 1));
    } else {
      const uint16_t h = uint16_t(r.integer(0, 0x7bfe)) | uint16_t(r.chance(0.5) ? 0x8000 : 0);
      lo = f16_to_f32(h), hi = f16_to_f32(uint16_t(h + 1));
    }
    float mid = float((double(lo) + double(hi)) / 2);
    if (i % 3 == 1) mid = std::nextafter(mid, 0.0f);
    if (i % 3 == 2) mid = std::nextafter(mid, mid * 2);
    set(t, i, mid);
  }
  return t;
}

// Random 16-bit patterns (every class: normals, subnormals, inf, NaN payloads).
HostTensor bits16(Rng& r, DType t, std::vector<int64_t> dims) {
  HostTensor x = zeros(t, dims);
  auto* p = reinterpret_cast<uint16_t*>(x.buf->data());
  for (int64_t i = 0; i < x.desc.numel(); ++i) p[i] = uint16_t(r.next());
  return x;
}

}  // namespace

void generate_cast(CaseList& L) {
  Rng& r = L.rng();
  auto add = [&](const std::string& tag, DType to, HostTensor x) {
    const std::string name = tag + "_" + std::string(dtype_name(x.desc.dtype())) + "_to_" +
                             std::string(dtype_name(to)) + "_" + dims_name(x.desc.dims());
    return &L.add(name, CastAttrs{to}, {std::move(x)});
  };
  int i = 0;
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 129}) {
    const std::vector<int64_t> d{i++ % 2 ? 3 : 1, n};
    add("x", DType::f16, random(r, DType::f32, d, {-70000, 70000, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03}));
    add("x", DType::bf16, random(r, DType::f32, d, {-3e38, 3e38, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03}));
    add("bits", DType::f32, bits16(r, DType::f16, d));
    add("bits", DType::f32, bits16(r, DType::bf16, d));
    add("x", DType::i32, random(r, DType::f32, d, {-2.1e9, 2.1e9, 0.1}));
    add("x", DType::f32, random_int(r, DType::i32, d, INT32_MIN, INT32_MAX));
  }
  add("halfway", DType::f16, halfway(r, DType::f16, 300));
  add("halfway", DType::bf16, halfway(r, DType::bf16, 300));
  add("small", DType::f16, random(r, DType::f32, {2, 50}, {-1e-4, 1e-4, 0.1, 0, 0.1}));  // f16 subnormals
  add("fraction", DType::i32, random(r, DType::f32, {3, 21}, {-3, 3, 0.1, 0.2, 0, 0, 0, 0, 0.25}));
  add("fraction", DType::i64, random(r, DType::f32, {2, 17}, {-1e15, 1e15, 0.1}));
  add("fraction", DType::u8, random(r, DType::f32, {2, 33}, {0, 255.99}));
  add("x", DType::f32, random_int(r, DType::i64, {2, 33}, -(int64_t(1) << 62), int64_t(1) << 62));
  add("x", DType::f16, random_int(r, DType::i32, {2, 17}, -65519, 65519));
  add("x", DType::bf16, random_int(r, DType::i64, {2, 17}, -(int64_t(1) << 40), int64_t(1) << 40));
  add("x", DType::f16, bits16(r, DType::bf16, {3, 16}));
  add("x", DType::bf16, bits16(r, DType::f16, {3, 16}));
  add("x", DType::i64, random_int(r, DType::i32, {2, 17}, INT32_MIN, INT32_MAX));
  add("x", DType::i32, random_int(r, DType::i64, {2, 17}, INT32_MIN, INT32_MAX));
  add("x", DType::u8, random_int(r, DType::i32, {2, 17}, 0, 255));
  add("x", DType::f32, random_int(r, DType::u8, {2, 33}, 0, 255));
  add("x", DType::i32, random_int(r, DType::u8, {1, 9}, 0, 255));
  add("same", DType::f32, random(r, DType::f32, {3, 17}, kSpecial));
  add("model", DType::f16, random(r, DType::f32, {512, 512}));
  // Errors the spec defines: NaN to an integer, out of range, narrowing that does not fit.
  HostTensor nan = random(r, DType::f32, {9}, {-5, 5});
  set(nan, 4, std::nan(""));
  add("error_nan", DType::i32, nan)->expect_error = true;
  HostTensor big = random(r, DType::f32, {9}, {-5, 5});
  set(big, 7, 3e9);
  add("error_range", DType::i32, big)->expect_error = true;
  HostTensor wide = random_int(r, DType::i64, {5}, -5, 5);
  set(wide, 2, double(int64_t(1) << 40));
  add("error_narrow", DType::i32, wide)->expect_error = true;
  HostTensor neg = random_int(r, DType::i32, {17}, 0, 200);
  set(neg, 16, -1);
  add("error_negative", DType::u8, neg)->expect_error = true;
}

}  // namespace longrun::conformance::diff
