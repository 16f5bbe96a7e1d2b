// Differential cases of the layout ops: every dtype (bit copies, NaN payloads, -0), axes
// first/middle/last, block sizes around the vector widths for transposes, Python-style
// clamping for slices, negative and oversized shifts, broadcast conditions.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "conformance/diff_case.h"

namespace longrun::conformance::diff {
namespace {

// A tensor of any dtype with adversarial content: specials for floats, the full range for
// integers.
HostTensor any(Rng& r, DType t, std::vector<int64_t> dims) {
  switch (t) {
    case DType::i32: return random_int(r, t, dims, INT32_MIN, INT32_MAX);
    case DType::i64: return random_int(r, t, dims, INT64_MIN, INT64_MAX);
    case DType::u8: return random_int(r, t, dims, 0, 255);
    case DType::i8: return random_int(r, t, dims, -128, 127);
    default: return random(r, t, dims, kSpecial);
  }
}

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8};

std::string dt(DType t) { return std::string(dtype_name(t)); }

}  // namespace

void generate_concat(CaseList& L) {
  Rng& r = L.rng();
  int i = 0;
  for (DType t : kDTypes)
    for (int axis : {0, 1, -1}) {
      // 1 to 4 pieces of lengths from the sweep along `axis` of a rank-3 tensor.
      const int pieces = 1 + i % 4;
      std::vector<HostTensor> in;
      std::string name = dt(t) + "_axis" + std::to_string(axis);
      for (int p = 0; p < pieces; ++p) {
        const int64_t len = kSizes[size_t(i * 3 + p * 5) % std::size(kSizes)];
        std::vector<int64_t> dims{3, 5, 7};
        dims[size_t(axis < 0 ? 2 : axis)] = len;
        name += "_" + std::to_string(len);
        in.push_back(any(r, t, dims));
      }
      ++i;
      L.add(name, ConcatAttrs{.axis = axis}, std::move(in));
    }
  L.add("model", ConcatAttrs{.axis = -2},
        {any(r, DType::f32, {2, 256, 64}), any(r, DType::f32, {2, 257, 64})});
}

void generate_slice(CaseList& L) {
  Rng& r = L.rng();
  struct S {
    int axis;
    int64_t start, end, step;
  };
  const S slices[] = {{0, 0, INT64_MAX, 1}, {1, 3, 17, 1},          {-1, -5, -1, 1}, {1, 1, 100, 2},
                      {0, -100, 3, 1},      {2, 0, 33, 3},          {1, 16, 16, 1},  {-1, 2, 1000, 7},
                      {0, 5, 6, 1},         {1, -33, INT64_MAX, 16}};
  int i = 0;
  for (const S& s : slices) {
    const DType t = kDTypes[size_t(i++) % std::size(kDTypes)];
    L.add(
        dt(t) + "_axis" + std::to_string(s.axis) + "_" + std::to_string(s.start) + "_" +
            (s.end == INT64_MAX ? std::string("end") : std::to_string(s.end)) + "_" + std::to_string(s.step),
        SliceAttrs{.axis = s.axis, .start = s.start, .end = s.end, .step = s.step}, {any(r, t, {9, 33, 40})});
  }
  L.add("model", SliceAttrs{.axis = 1, .start = 1, .end = INT64_MAX}, {any(r, DType::f32, {2, 257, 64})});
}

void generate_pad(CaseList& L) {
  Rng& r = L.rng();
  struct P {
    DType t;
    int axis;
    int64_t before, after;
    float value;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const P pads[] = {
      {DType::f32, -1, 1, 2, 0.0f},   {DType::f32, 0, 7, 0, -inf},   {DType::f32, 1, 0, 9, std::nanf("")},
      {DType::f16, -1, 16, 17, 1.5f}, {DType::bf16, 1, 3, 3, -0.0f}, {DType::i32, 0, 2, 5, 7.0f},
      {DType::i64, -1, 8, 8, -3.0f},  {DType::u8, 1, 1, 31, 3.0f},   {DType::f32, 2, 0, 0, 2.0f}};
  for (const P& p : pads)
    L.add(dt(p.t) + "_axis" + std::to_string(p.axis) + "_" + std::to_string(p.before) + "_" +
              std::to_string(p.after),
          PadAttrs{.axis = p.axis, .before = p.before, .after = p.after, .value = p.value},
          {any(r, p.t, {5, 9, 33})});
  L.add("model", PadAttrs{.axis = -2, .before = 0, .after = 255, .value = 0.0f},
        {any(r, DType::f32, {1, 257, 64})});
}

void generate_transpose(CaseList& L) {
  Rng& r = L.rng();
  // 2-D blocks around the 8x8 / 16x16 transpose tiles.
  int i = 0;
  for (int64_t a : {1, 7, 8, 9, 16, 17, 33, 64, 65}) {
    const int64_t b = kSizes[size_t(i * 7) % std::size(kSizes)];
    const DType t = kDTypes[size_t(i++) % std::size(kDTypes)];
    L.add(dt(t) + "_2d_" + dims_name({a, b}), TransposeAttrs{.rank = 2, .perm = {1, 0}}, {any(r, t, {a, b})});
  }
  const std::array<int, kMaxRank> perms3[] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                              {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& p : perms3)
    L.add("3d_" + std::to_string(p[0]) + std::to_string(p[1]) + std::to_string(p[2]),
          TransposeAttrs{.rank = 3, .perm = p}, {any(r, DType::f32, {5, 17, 9})});
  // Attention layouts: [B, N, H, hd] <-> [B, H, N, hd], and [B, H, hd, N].
  L.add("heads", TransposeAttrs{.rank = 4, .perm = {0, 2, 1, 3}}, {any(r, DType::f32, {2, 33, 3, 16})});
  L.add("heads_t", TransposeAttrs{.rank = 4, .perm = {0, 2, 3, 1}}, {any(r, DType::f16, {2, 31, 3, 8})});
  L.add("model", TransposeAttrs{.rank = 2, .perm = {1, 0}}, {any(r, DType::f32, {512, 512})});
}

void generate_reshape(CaseList& L) {
  Rng& r = L.rng();
  L.add("split", ReshapeAttrs{.rank = 2, .dims = {7, 9}}, {any(r, DType::f32, {63})});
  L.add("merge", ReshapeAttrs{.rank = 1, .dims = {-1}}, {any(r, DType::i64, {3, 5, 7})});
  L.add("infer", ReshapeAttrs{.rank = 3, .dims = {2, -1, 16}}, {any(r, DType::f16, {4, 8, 17})});
  L.add("to_scalar", ReshapeAttrs{.rank = 0}, {any(r, DType::u8, {1, 1})});
  L.add("heads", ReshapeAttrs{.rank = 4, .dims = {2, 33, 3, 16}}, {any(r, DType::f32, {2, 33, 48})});
  L.add("model", ReshapeAttrs{.rank = 3, .dims = {1, 512, 512}}, {any(r, DType::f32, {512, 512})});
}

void generate_roll(CaseList& L) {
  Rng& r = L.rng();
  int i = 0;
  for (int64_t shift : {0, 1, -1, 7, 33, 36, -70, 1000, -1000}) {
    const int axis = i % 3 - 1;
    const DType t = kDTypes[size_t(i++) % std::size(kDTypes)];
    L.add(dt(t) + "_axis" + std::to_string(axis) + "_shift" + std::to_string(shift),
          RollAttrs{.axis = axis, .shift = shift}, {any(r, t, {5, 33, 9})});
  }
  L.add("model", RollAttrs{.axis = -2, .shift = -1}, {any(r, DType::f32, {1, 512, 64})});
}

void generate_where(CaseList& L) {
  Rng& r = L.rng();
  struct W {
    std::vector<int64_t> c, a, b;
  };
  const W shapes[] = {{{3, 17}, {3, 17}, {3, 17}}, {{33}, {4, 33}, {1}},           {{5, 1}, {1, 16}, {5, 16}},
                      {{}, {2, 9}, {2, 9}},        {{2, 1, 8}, {3, 8}, {2, 3, 1}}, {{65}, {65}, {}}};
  int i = 0;
  for (const W& w : shapes) {
    const DType t = kDTypes[size_t(i++) % std::size(kDTypes)];
    // Condition bytes: 0, 1 and other non-zero values (any non-zero is true).
    HostTensor c = random_int(r, DType::u8, w.c, 0, 3);
    for (int64_t e = 0; e < c.desc.numel(); e += 5) set(c, e, 255);
    L.add(dt(t) + "_" + dims_name(w.c) + "_" + dims_name(w.a) + "_" + dims_name(w.b), WhereAttrs{},
          {c, any(r, t, w.a), any(r, t, w.b)});
  }
  HostTensor c = random_int(r, DType::u8, {512, 512}, 0, 1);
  L.add("model", WhereAttrs{}, {c, any(r, DType::f32, {512, 512}), any(r, DType::f32, {1})});
}

}  // namespace longrun::conformance::diff
