// The cpu backend's memory-bound kernels (backends/cpu/{elementwise,normalization,selection,
// scan,layout,embedding}*) against the reference kernels at every ISA level this machine
// has: row lengths below/at/above the 8- and 16-lane widths, many rows, broadcast patterns,
// masks, causal, +-inf/NaN/-0, ties; inputs end at a PROT_NONE page (a read past the end
// faults) and outputs are framed by guard words; 1 and 2 threads must agree bit for bit.
// The vector exp/tanh/gelu error bounds are checked in cpu_vmath_test.cpp.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/stream_min_bytes.h"
#include "unit/cpu_membound_test_util.h"

using namespace longrun;
using namespace longrun::membound_tests;

TEST_CASE("cpu membound: add/sub/mul match the reference exactly for every broadcast pattern") {
  struct Case {
    std::vector<int64_t> a, b;
  };
  std::vector<Case> cases;
  for (int64_t n : kSizes) {
    cases.push_back({{3, n}, {3, n}});  // same shape
    cases.push_back({{5, n}, {n}});     // row vector
    cases.push_back({{n}, {4, n}});     // row vector as the first operand
    cases.push_back({{4, n}, {4, 1}});  // column
    cases.push_back({{4, 1}, {4, n}});
    cases.push_back({{2, n}, {1}});           // scalar
    cases.push_back({{}, {n, 2}});            // rank-0 scalar first
    cases.push_back({{n, 1, 3}, {1, 5, 1}});  // general: both broadcast
  }
  cases.push_back({{2, 3, 4, 5}, {3, 1, 5}});
  cases.push_back({{70000}, {70000}});  // several blocks and chunks
  cases.push_back({{3, 40000}, {40000}});
  for_each_level([&](const Level& l) {
    for (bool stream : {false, true}) {  // true: every output streamed (non-temporal stores)
      CAPTURE(stream);
      test_support::ScopedStreamMinBytes streamed_from(stream ? 1 : std::numeric_limits<int64_t>::max());
      uint32_t seed = 1;
      for (const Case& c : cases) {
        In a = make_in(DType::f32, c.a), b = make_in(DType::f32, c.b);
        fill(a, seed++, 2.0f, 0.05);
        fill(b, seed++, 2.0f, 0.05);
        std::vector<TensorDesc> out;
        REQUIRE(infer_op(OpKind::add, AddAttrs{}, std::vector<TensorDesc>{a.desc, b.desc}, &out).ok());
        CAPTURE(a.desc.to_string());
        CAPTURE(b.desc.to_string());
        compare(l.add, reference_add, AddAttrs{}, {a, b}, out[0], 0);
        compare(l.sub, reference_sub, SubAttrs{}, {a, b}, out[0], 0);
        compare(l.mul, reference_mul, MulAttrs{}, {a, b}, out[0], 0);
      }
    }
  });
}

TEST_CASE("cpu membound: unary ops match the reference within the conformance tolerances") {
  for_each_level([&](const Level& l) {
    uint32_t seed = 100;
    for (int64_t n : kSizes) {
      for (float spread : {0.5f, 4.0f, 30.0f}) {
        CAPTURE(n);
        CAPTURE(spread);
        In x = make_in(DType::f32, {3, n});
        fill(x, seed++, spread, 0.05);
        const TensorDesc d = x.desc;
        compare(l.relu, reference_relu, ReluAttrs{}, {x}, d, 0);
        compare(l.scale, reference_scale, ScaleAttrs{.scale = 0.37f, .shift = -1.25f}, {x}, d, 1e-6);
        compare(l.exp, reference_exp, ExpAttrs{}, {x}, d, 1e-6);
        compare(l.tanh, reference_tanh, TanhAttrs{}, {x}, d, 1e-6);
        compare(l.gelu, reference_gelu, GeluAttrs{}, {x}, d, 1e-6);
        compare(l.gelu_tanh, reference_gelu_tanh, GeluTanhAttrs{}, {x}, d, 1e-6);
      }
    }
    // Tails only: the far negative side, where gelu is tiny (relative accuracy matters for
    // the norm error), and tiny inputs for tanh/gelu.
    In neg = make_in(DType::f32, {1000});
    for (int i = 0; i < 1000; ++i) neg.ptr<float>()[i] = -3.0f - 0.01f * float(i);
    compare(l.gelu, reference_gelu, GeluAttrs{}, {neg}, neg.desc, 1e-6);
    In tiny = make_in(DType::f32, {1000});
    for (int i = 0; i < 1000; ++i) tiny.ptr<float>()[i] = std::ldexp(float(i % 7) - 3.0f, -(i % 60));
    compare(l.tanh, reference_tanh, TanhAttrs{}, {tiny}, tiny.desc, 1e-6);
    compare(l.gelu, reference_gelu, GeluAttrs{}, {tiny}, tiny.desc, 1e-6);
    compare(l.gelu_tanh, reference_gelu_tanh, GeluTanhAttrs{}, {tiny}, tiny.desc, 1e-6);
  });
}

TEST_CASE("cpu membound: cast between every dtype pair matches the reference") {
  const DType types[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8};
  for_each_level([&](const Level& l) {
    for (DType from : types) {
      for (DType to : types) {
        for (int64_t n : {1, 7, 8, 9, 17, 100}) {
          CAPTURE(dtype_name(from));
          CAPTURE(dtype_name(to));
          CAPTURE(n);
          In x = make_in(from, {n});
          std::mt19937 rng{uint32_t(n)};
          for (int64_t i = 0; i < n; ++i) {
            // Values every target can hold (0..200 with fractions for floats), plus specials
            // for float -> float.
            const float v = float(rng() % 200) + (dtype_is_float(from) ? 0.25f * float(rng() % 4) : 0.0f);
            const float special[] = {kInf, -kInf, kNaN, -0.0f, 65504.0f, 70000.0f, 1e-30f, 3.0e38f};
            const float f = dtype_is_float(to) && dtype_is_float(from) && i % 5 == 4 ? special[rng() % 8] : v;
            set(x, i, dtype_is_float(from) ? f : v);
          }
          compare(l.cast, reference_cast, CastAttrs{.to = to}, {x}, x.desc.with_dtype(to), 0);
        }
      }
    }
    // Out-of-range values: the same error as the reference.
    In bad = make_in(DType::f32, {20});
    for (int i = 0; i < 20; ++i) bad.ptr<float>()[i] = float(i);
    bad.ptr<float>()[13] = kNaN;
    Out o(bad.desc.with_dtype(DType::i32)), o2(bad.desc.with_dtype(DType::i32));
    const Status want = run(reference_cast, CastAttrs{.to = DType::i32}, {bad}, o, nullptr);
    const Status got = run(l.cast, CastAttrs{.to = DType::i32}, {bad}, o2, two_threads());
    CHECK(!got.ok());
    CHECK(got.code() == want.code());
    CHECK(got.message() == want.message());
  });
}

TEST_CASE("cpu membound: softmax with masks, scale, causal and special rows") {
  std::vector<int64_t> sizes(std::begin(kSizes), std::end(kSizes));
  sizes.insert(sizes.end(), {16385, 40000});  // above 16384: the online two-pass path
  for_each_level([&](const Level& l) {
    // true: every whole row of at most 4096 logits streamed where rows allow (n % 16 == 0)
    for (bool stream : {false, true}) {
      CAPTURE(stream);
      test_support::ScopedStreamMinBytes streamed_from(stream ? 1 : std::numeric_limits<int64_t>::max());
      uint32_t seed = 300;
      for (int64_t n : sizes) {
        const int64_t rows = n >= 4096 ? 2 : 6;
        CAPTURE(n);
        In x = make_in(DType::f32, {2, rows, n});
        fill(x, seed++, 3.0f);
        const TensorDesc d = x.desc;
        compare(l.softmax, reference_softmax, SoftmaxAttrs{.scale = 0.7f}, {x}, d, 1e-5);
        {  // in place (y = x; streamed when `stream` and n % 16 == 0): the same bits
          Out in_place(d), apart(d);
          std::memcpy(in_place.data(), x.ptr<float>(), size_t(d.nbytes()));
          const OpAttrs attrs = SoftmaxAttrs{.scale = 0.7f};
          REQUIRE(run(l.softmax, attrs, {x}, apart, nullptr).ok());
          const TensorView io[] = {in_place.view()};
          KernelArgs a;
          a.attrs = &attrs;
          a.inputs = io;
          a.outputs = std::span<const TensorView>(io, 1);
          REQUIRE(l.softmax(a).ok());
          CHECK_MESSAGE(same_bits(in_place, apart), "in place differs");
        }
        compare(l.softmax, reference_softmax, SoftmaxAttrs{.scale = 1.3f, .causal = true}, {x}, d, 1e-5);
        for (const std::vector<int64_t>& md :
             std::vector<std::vector<int64_t>>{{n}, {rows, 1}, {2, rows, n}, {1}, {2, 1, n}}) {
          CAPTURE(md.size());
          In m = make_in(DType::f32, md);
          fill(m, seed++, 1.0f, 0.2);  // includes -inf (masked), +inf and NaN entries
          compare(l.softmax, reference_softmax, SoftmaxAttrs{.has_mask = true}, {x, m}, d, 1e-5);
          compare(l.softmax, reference_softmax, SoftmaxAttrs{.scale = 0.5f, .causal = true, .has_mask = true},
                  {x, m}, d, 1e-5);
        }
        // Special rows: all -inf (zeros), one NaN (NaN row), one +inf (NaN row), half -inf, and
        // NaN among -inf (NaN row); large logits elsewhere.
        In s = make_in(DType::f32, {5, n});
        fill(s, seed++, 50.0f);
        float* p = s.ptr<float>();
        for (int64_t j = 0; j < n; ++j) p[j] = p[4 * n + j] = -kInf;
        p[n + n / 2] = kNaN;
        p[2 * n + (n - 1)] = kInf;
        for (int64_t j = 0; j < n; j += 2) p[3 * n + j] = -kInf;
        p[4 * n + n / 3] = kNaN;
        compare(l.softmax, reference_softmax, SoftmaxAttrs{}, {s}, s.desc, 1e-5);
      }
    }
    // Not the last axis: the reference path.
    In x = make_in(DType::f32, {5, 7, 3});
    fill(x, 9);
    compare(l.softmax, reference_softmax, SoftmaxAttrs{.axis = 1}, {x}, x.desc, 1e-5);
  });
}

// The whole-row softmax (rows pipelined: a row's exp pass also scales the previous row and,
// where the shift is the max, takes the next row's max) must give exactly the bits of the
// row-by-row kernel, also around rows it fills itself (+inf, NaN, all -inf), around rows
// whose first-logit shift fails its check (AVX-512: the sum overflows, or exceeds 2^64) or
// holds with logits above the first, at the first and last row, in place (n = 4096: row by
// row), and with its output streamed (rows of whole vectors up to kSoftmaxStreamedRows, on
// lines). The uniform logits in [-40, 40] alone make the first-logit check fail in some rows.
TEST_CASE("cpu membound: softmax_rows gives softmax_row's bits row for row") {
  const std::pair<cpu::Isa, const cpu::NormalizationIsa*> tables[] = {
      {cpu::Isa::avx2, &cpu::kNormalizationAvx2}, {cpu::Isa::avx512, &cpu::kNormalizationAvx512}};
  std::vector<int64_t> sizes(std::begin(kSizes), std::end(kSizes));
  // 3001: in place too long for the pipelined halves; 4097: above the first-logit shift's rows;
  // 16384: the longest row softmax_rows takes.
  sizes.insert(sizes.end(), {512, 2048, 3001, 4097, 16384});
  uint32_t seed = 700;
  // 64-byte aligned rows of floats (streamed stores need whole lines).
  auto lines = [](size_t floats) {
    return std::unique_ptr<float[], decltype(&std::free)>(
        static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64)), &std::free);
  };
  for (const auto& [isa, t] : tables) {
    if (!has(isa)) continue;
    CAPTURE(int(isa));
    for (int64_t n : sizes) {
      CAPTURE(n);
      const int64_t rows = n >= 4096 ? 4 : 9;
      const size_t total = size_t(rows * n);
      for (int layout = 0; layout < 4; ++layout) {  // where the special rows are
        CAPTURE(layout);
        std::mt19937 rng(seed++);
        std::uniform_real_distribution<float> u(-40.0f, 40.0f);
        auto x = lines(total), want = lines(total), got = lines(total), io = lines(total);
        for (size_t i = 0; i < total; ++i) x[i] = u(rng);
        auto row = [&](int64_t r) { return x.get() + r * n; };
        const int64_t last = rows - 1;
        if (layout == 0) std::fill(row(0), row(1), -kInf);  // all -inf first
        if (layout == 1) row(0)[n / 2] = kInf;              // +inf first
        if (layout != 2) row(last)[n - 1] = kNaN;           // NaN last
        if (layout == 2) {                                  // specials inside, in a row
          std::fill(row(1), row(2), -kInf);
          row(2)[0] = kNaN;
          row(last - 1)[n / 3] = kInf;
          for (int64_t j = 0; j < n; j += 2) row(last)[j] = -kInf;
          row(last)[1] = kNaN;  // NaN among -inf
        }
        if (layout == 3) {  // first logits far below the rest, or above
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) row(r)[j] *= 0.25f;  // logits in [-10, 10]
          row(0)[0] = -200.0f;                                   // the first-logit exps overflow
          row(1)[0] = -50.0f;                                    // sum beyond 2^64, no overflow (n > 1)
          row(2)[0] = 30.0f;                                     // the first is the max
          row(3)[0] = -25.0f;  // the check holds, the max is far above the first
        }
        for (float scale : {1.0f, 0.7f}) {
          CAPTURE(scale);
          for (int64_t r = 0; r < rows; ++r)
            t->softmax_row(row(r), nullptr, 0, scale, n, n, want.get() + r * n, false, nullptr);
          const bool streamable = n % 16 == 0 && n <= cpu::kSoftmaxStreamedRows;
          for (bool stream : {false, true}) {
            if (stream && !streamable) continue;
            CAPTURE(stream);
            t->softmax_rows(x.get(), scale, n, rows, got.get(), 1, stream);
            CHECK(std::memcmp(got.get(), want.get(), total * sizeof(float)) == 0);
            std::memcpy(io.get(), x.get(), total * sizeof(float));
            t->softmax_rows(io.get(), scale, n, rows, io.get(), 0, stream);  // in place
            CHECK(std::memcmp(io.get(), want.get(), total * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("cpu membound: layer_norm with f32/f16/bf16 parameters and offset rows") {
  for_each_level([&](const Level& l) {
    // true: every output streamed where rows allow (d % 16 == 0), every input fetched ahead
    for (bool stream : {false, true}) {
      CAPTURE(stream);
      test_support::ScopedStreamMinBytes streamed_from(stream ? 1 : std::numeric_limits<int64_t>::max());
      uint32_t seed = 500;
      for (int64_t d : kSizes) {
        for (DType pt : {DType::f32, DType::f16, DType::bf16}) {
          for (float offset : {0.0f, 8.0f, 1000.0f, -30000.0f}) {
            CAPTURE(d);
            CAPTURE(dtype_name(pt));
            CAPTURE(offset);
            In x = make_in(DType::f32, {5, d});
            fill(x, seed++, 1.0f, 0.0, offset);
            In g = make_in(pt, {d}), b = make_in(pt, {d});
            std::mt19937 rng(seed);
            for (int64_t j = 0; j < d; ++j) {
              set(g, j, 0.5f + float(rng() % 100) / 100.0f);
              set(b, j, float(int(rng() % 100) - 50) / 50.0f);
            }
            compare(l.layer_norm, reference_layer_norm, LayerNormAttrs{.eps = 1e-5f}, {x, g, b}, x.desc,
                    1e-5);
          }
        }
        // Rows holding inf / NaN (first element or later) become NaN rows, as in the reference;
        // a constant row gives beta (variance 0, eps > 0).
        In x = make_in(DType::f32, {5, d});
        fill(x, seed++);
        float* p = x.ptr<float>();
        p[0] = kInf;
        p[d + d / 2] = -kInf;
        p[2 * d + d - 1] = kNaN;
        for (int64_t j = 0; j < d; ++j) p[3 * d + j] = 2.5f;
        In g = make_in(DType::f32, {d}), b = make_in(DType::f32, {d});
        for (int64_t j = 0; j < d; ++j) g.ptr<float>()[j] = 1.5f, b.ptr<float>()[j] = 0.25f;
        compare(l.layer_norm, reference_layer_norm, LayerNormAttrs{.eps = 1e-5f}, {x, g, b}, x.desc, 1e-5);
      }
    }
  });
}

namespace {

// Row values with many exact ties, +-0, +-inf and NaN: the cases where an order or a max
// step could go wrong.
void fill_ties(const In& x, uint32_t seed) {
  std::mt19937 rng(seed);
  float* p = x.ptr<float>();
  const float special[] = {kInf, -kInf, kNaN, 0.0f, -0.0f};
  for (int64_t i = 0; i < x.desc.numel(); ++i)
    p[i] = rng() % 8 == 0 ? special[rng() % 5] : float(int(rng() % 9) - 4);
}

std::vector<TensorDesc> infer(OpKind k, const OpAttrs& a, std::vector<TensorDesc> in) {
  std::vector<TensorDesc> out;
  const Status st = infer_op(k, a, in, &out);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  return out;
}

}  // namespace

TEST_CASE("cpu membound: topk_mask and topk_indices select exactly as the reference") {
  uint32_t seed = 700;
  for (int64_t n : kSizes) {
    for (int64_t k : {int64_t(1), int64_t(2), n / 2 + 1, n - 1, n, n + 3}) {
      if (k < 1) continue;
      for (bool ties : {false, true}) {
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(ties);
        In x = make_in(DType::f32, {5, n});
        ties ? fill_ties(x, seed++) : fill(x, seed++, 1.0f, 0.02);
        for (bool scores : {false, true}) {
          const TopkMaskAttrs a{.k = k, .output_scores = scores};
          compare(cpu::cpu_topk_mask_f32, reference_topk_mask, a, {x},
                  infer(OpKind::topk_mask, a, {x.desc})[0], 0);
        }
        if (k <= n) {
          const TopkIndicesAttrs a{.k = k};
          compare(cpu::cpu_topk_indices_f32, reference_topk_indices, a, {x},
                  infer(OpKind::topk_indices, a, {x.desc})[0], 0);
        }
        // Along a leading axis (strided rows).
        In xt = make_in(DType::f32, {n, 3});
        fill_ties(xt, seed++);
        const TopkIndicesAttrs at{.k = std::min(k, n), .axis = 0};
        compare(cpu::cpu_topk_indices_f32, reference_topk_indices, at, {xt},
                infer(OpKind::topk_indices, at, {xt.desc})[0], 0);
      }
    }
  }
  // Rows that steer the sampled route (n >= 512) both ways: large values only at the sampled
  // positions (its threshold lets too few through: the radix route), only off them (many
  // candidates), a causal-mask-like sunk tail, all -inf, ascending and all equal rows.
  {
    const int64_t n = 4096, step = n / 256;
    In x = make_in(DType::f32, {6, n});
    float* p = x.ptr<float>();
    std::mt19937 rng(77);
    for (int64_t j = 0; j < n; ++j) {
      const float r = float(rng() % 1000) / 1000.0f;
      p[j] = j % step == 0 ? 10.0f + r : r;
      p[n + j] = j % step == 0 ? r : 10.0f + r;
      p[2 * n + j] = j < 300 ? r : r - 0x1p100f * float(j - 299);
      p[3 * n + j] = -kInf;
      p[4 * n + j] = float(j) * 0.5f;
      p[5 * n + j] = 1.0f;
    }
    for (int64_t k : {int64_t(1), int64_t(205), int64_t(300), int64_t(301), n - 1}) {
      CAPTURE(k);
      const TopkIndicesAttrs a{.k = k};
      compare(cpu::cpu_topk_indices_f32, reference_topk_indices, a, {x},
              infer(OpKind::topk_indices, a, {x.desc})[0], 0);
    }
  }
  // With prepared scratch (as the cpu backend runs it): many rows over several chunks.
  In x = make_in(DType::f32, {64, 4096});
  fill(x, 5);
  const TopkIndicesAttrs a{.k = 205};
  GraphBuilder b;
  const ValueId xi = b.input("x", x.desc);
  b.output(b.topk_indices({xi}, a), "y");
  Result<Graph> built = b.build();
  REQUIRE(built.ok());
  const Node& node = built->nodes()[0];
  Result<std::shared_ptr<void>> state = cpu::cpu_topk_prepare(*built, node, two_threads());
  REQUIRE(state.ok());
  const TensorDesc yd = infer(OpKind::topk_indices, a, {x.desc})[0];
  Out want(yd), got(yd);
  REQUIRE(run(reference_topk_indices, a, {x}, want, nullptr).ok());
  std::vector<TensorView> in{x.view()};
  TensorView o = got.view();
  KernelArgs args{&node.attrs, in, std::span<const TensorView>(&o, 1), two_threads(), state->get()};
  REQUIRE(cpu::cpu_topk_indices_f32(args).ok());
  CHECK(same_bits(got, want));
}

TEST_CASE("cpu membound: cummax, cumsum and segment_max are bit-exact across columns and lines") {
  for_each_level([&](const Level& l) {
    uint32_t seed = 900;
    for (int64_t n : kSizes) {
      CAPTURE(n);
      // The scanned axis with columns (1..n of them; 300 = full register blocks plus a masked
      // tail) and an innermost-axis line.
      const std::vector<std::pair<std::vector<int64_t>, int>> shapes = {
          {{2, n, 3}, 1}, {{3, 5, n}, 1}, {{n, 70}, 0}, {{n, 300}, 0}, {{4, n}, -1}, {{n}, 0}};
      for (const auto& [dims, axis] : shapes) {
        In x = make_in(DType::f32, dims);
        fill_ties(x, seed++);
        CAPTURE(x.desc.to_string());
        CAPTURE(axis);
        for (bool reverse : {false, true})
          for (bool exclusive : {false, true}) {
            const CummaxAttrs a{.axis = axis, .reverse = reverse, .exclusive = exclusive};
            compare(l.cummax, reference_cummax, a, {x}, x.desc, 0);
            const CumsumAttrs s{.axis = axis, .reverse = reverse, .exclusive = exclusive};
            compare(l.cumsum, reference_cumsum, s, {x}, x.desc, 0);
          }
        for (int64_t seg : {int64_t(1), int64_t(2), int64_t(3), int64_t(16), n, n + 5}) {
          const SegmentMaxAttrs a{.axis = axis, .segment = seg};
          compare(l.segment_max, reference_segment_max, a, {x}, infer(OpKind::segment_max, a, {x.desc})[0],
                  0);
        }
      }
    }
  });
}

TEST_CASE("cpu membound: upsample_nearest copies the reference's source rows") {
  uint32_t seed = 1100;
  for (int64_t n : kSizes) {
    for (int64_t size : {int64_t(1), int64_t(3), n, 2 * n, 2 * n + 1, int64_t(100)}) {
      for (const auto& [dims, axis] :
           std::vector<std::pair<std::vector<int64_t>, int>>{{{2, n, 5}, 1}, {{3, n}, 1}}) {
        CAPTURE(n);
        CAPTURE(size);
        In x = make_in(DType::f32, dims);
        fill(x, seed++, 1.0f, 0.05);
        const UpsampleNearestAttrs a{.axis = axis, .size = size};
        compare(cpu::cpu_upsample_nearest_f32, reference_upsample_nearest, a, {x},
                infer(OpKind::upsample_nearest, a, {x.desc})[0], 0);
      }
    }
  }
}

TEST_CASE("cpu membound: layout ops are bit-exact for every dtype") {
  uint32_t seed = 1300;
  auto random_in = [&](DType t, std::vector<int64_t> dims) {
    In x = make_in(t, std::move(dims));
    auto* p = x.ptr<uint8_t>();
    std::mt19937 rng(seed++);
    for (int64_t i = 0; i < x.desc.nbytes(); ++i) p[i] = uint8_t(rng());
    return x;
  };
  for (DType t : {DType::f32, DType::u8, DType::f16, DType::i64}) {
    CAPTURE(dtype_name(t));
    for (int64_t n : {1, 3, 8, 17, 100}) {
      CAPTURE(n);
      const std::vector<int64_t> dims = {2, n, 3};
      In x = random_in(t, dims);
      for (int axis : {0, 1, 2, -1}) {
        CAPTURE(axis);
        In y = random_in(t, dims), z = random_in(t, dims);
        auto cat_dims = dims;
        const int ax = axis < 0 ? axis + 3 : axis;
        cat_dims[size_t(ax)] = 1;
        In w = random_in(t, cat_dims);
        const ConcatAttrs ca{.axis = axis};
        compare(cpu::cpu_concat, reference_concat, ca, {x, w, y, z},
                infer(OpKind::concat, ca, {x.desc, w.desc, y.desc, z.desc})[0], 0);
        for (int64_t step : {1, 2, 3})
          for (const auto& [start, end] :
               std::vector<std::pair<int64_t, int64_t>>{{0, INT64_MAX}, {1, -1}, {-2, 100}}) {
            const SliceAttrs sa{.axis = axis, .start = start, .end = end, .step = step};
            compare(cpu::cpu_slice, reference_slice, sa, {x}, infer(OpKind::slice, sa, {x.desc})[0], 0);
          }
        const PadAttrs pa{.axis = axis, .before = 2, .after = 3, .value = 1.0f};
        compare(cpu::cpu_pad, reference_pad, pa, {x}, infer(OpKind::pad, pa, {x.desc})[0], 0);
        for (int64_t shift : {0, 1, -1, 5, -7, 1000}) {
          const RollAttrs ra{.axis = axis, .shift = shift};
          compare(cpu::cpu_roll, reference_roll, ra, {x}, x.desc, 0);
        }
      }
      const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
      for (const auto& perm : perms) {
        TransposeAttrs ta{.rank = 3};
        for (int i = 0; i < 3; ++i) ta.perm[size_t(i)] = perm[i];
        compare(cpu::cpu_transpose, reference_transpose, ta, {x}, infer(OpKind::transpose, ta, {x.desc})[0],
                0);
      }
      const ReshapeAttrs ra{.rank = 2, .dims = {n, -1}};
      compare(cpu::cpu_reshape, reference_reshape, ra, {x}, infer(OpKind::reshape, ra, {x.desc})[0], 0);
      // where: same shapes and broadcasts of each operand.
      for (const auto& [cd, ad, bd] :
           std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>>>{
               {{2, n, 3}, {2, n, 3}, {2, n, 3}},
               {{2, 1, 3}, {2, n, 3}, {1}},
               {{n, 1}, {3}, {2, n, 3}},
               {{1}, {n, 3}, {2, 1, 1}}}) {
        In c = random_in(DType::u8, cd);
        for (int64_t i = 0; i < c.desc.numel(); ++i) c.ptr<uint8_t>()[i] %= 3;  // 0 or nonzero
        In a = random_in(t, ad), b = random_in(t, bd);
        compare(cpu::cpu_where, reference_where, WhereAttrs{}, {c, a, b},
                infer(OpKind::where, WhereAttrs{}, {c.desc, a.desc, b.desc})[0], 0);
      }
    }
  }
  // A rank-4 transpose that keeps the innermost dim, and one that gathers it.
  In x = random_in(DType::f32, {3, 4, 5, 6});
  for (const std::array<int, 4>& perm : {std::array<int, 4>{1, 0, 2, 3}, std::array<int, 4>{3, 1, 2, 0}}) {
    TransposeAttrs ta{.rank = 4};
    for (int i = 0; i < 4; ++i) ta.perm[size_t(i)] = perm[size_t(i)];
    compare(cpu::cpu_transpose, reference_transpose, ta, {x}, infer(OpKind::transpose, ta, {x.desc})[0], 0);
  }
}

TEST_CASE("cpu membound: embedding gathers and widens rows exactly") {
  for_each_level([&](const Level& l) {
    for (DType tt : {DType::f32, DType::f16, DType::bf16}) {
      for (DType it : {DType::i32, DType::i64}) {
        for (int64_t d : {1, 7, 8, 9, 16, 17, 100}) {
          CAPTURE(dtype_name(tt));
          CAPTURE(d);
          In table = make_in(tt, {11, d});
          std::mt19937 rng{uint32_t(d)};
          for (int64_t i = 0; i < table.desc.numel(); ++i)
            set(table, i, float(int(rng() % 2001) - 1000) / 64.0f);
          In ids = make_in(it, {3, 5});
          for (int64_t i = 0; i < 15; ++i) set(ids, i, float(rng() % 11));
          compare(l.embedding, reference_embedding, EmbeddingAttrs{}, {table, ids},
                  infer(OpKind::embedding, EmbeddingAttrs{}, {table.desc, ids.desc})[0], 0);
          // A bad id: the reference's error, output untouched.
          set(ids, 7, it == DType::i32 ? 11.0f : -1.0f);
          const TensorDesc od = infer(OpKind::embedding, EmbeddingAttrs{}, {table.desc, ids.desc})[0];
          Out o1(od), o2(od);
          const Status want = run(reference_embedding, EmbeddingAttrs{}, {table, ids}, o1, nullptr);
          const Status got = run(l.embedding, EmbeddingAttrs{}, {table, ids}, o2, nullptr);
          CHECK(!got.ok());
          CHECK(got.message() == want.message());
          CHECK(o2.bytes() == o1.bytes());
        }
      }
    }
  });
}
