// The cpu backend's fused attention and sparse_attention kernels (backends/cpu/attention*)
// against the reference kernels (double accumulation): shapes below, at and above the
// vector and block widths, causal with Nq != Nk, padding masks with fully masked batches,
// sparse indices with -1 slots, repeats and broadcast, non-finite values behind masks, and
// 1 vs 2 threads bitwise identical, at every ISA level this machine has.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/sparse_attention.h"
#include "longrun/dtype.h"
#include "support/scoped_override.h"
#include "unit/cpu_attention_test_util.h"

using namespace longrun;
using namespace longrun::attention_tests;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The ISA levels with their own kernels that this machine runs.
std::vector<std::string> vector_isas() { return with_vector_isas({}, "cpu attention"); }

// One node `kind` over `ins` on the cpu backend at `isa` with `threads` (the graph and the
// session are REQUIREd to be made); returns the run's result.
Result<std::vector<NamedTensor>> run_node(OpKind kind, const OpAttrs& attrs, const std::vector<Input>& ins,
                                          const std::string& isa, int threads) {
  GraphBuilder b;
  b.output(b.op(kind, attrs, add_inputs(b, ins)), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  auto s = Session::create(std::move(*g), {.backend = "cpu", .threads = threads, .isa = isa});
  REQUIRE(s.ok());
  return run_inputs(**s, ins);
}

// run_node's output 0.
std::vector<float> run_cpu(OpKind kind, const OpAttrs& attrs, const std::vector<Input>& ins,
                           const std::string& isa, int threads) {
  auto out = run_node(kind, attrs, ins, isa, threads);
  REQUIRE(out.ok());
  return values_of((*out)[0].tensor);
}

Status run_reference(OpKind kind, const OpAttrs& attrs, const std::vector<Input>& ins,
                     const TensorDesc& ydesc, std::vector<float>* y) {
  y->assign(size_t(ydesc.numel()), 0.0f);
  const TensorView out_view{ydesc, y->data()};
  return run_reference_kernel(kind, attrs, ins, {&out_view, 1});
}

// The conformance tolerances: max abs/rel 1e-4 per element, 3e-5 normalised (L2) error;
// NaN and infinities where and only where the reference has them.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double normalised) {
  REQUIRE(got.size() == want.size());
  double err2 = 0, ref2 = 0;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {  // same NaN / same infinity
      const bool same = (std::isnan(want[i]) && std::isnan(got[i])) || want[i] == got[i];
      if (!same && bad++ < 3) FAIL_CHECK("non-finite mismatch at ", i, ": got ", got[i], " want ", want[i]);
      continue;
    }
    const double d = std::abs(double(got[i]) - double(want[i]));
    if (d > 1e-4 * std::max(1.0, std::abs(double(want[i]))) && bad++ < 3)
      FAIL_CHECK("at ", i, ": got ", got[i], " want ", want[i]);
    err2 += d * d;
    ref2 += double(want[i]) * double(want[i]);
  }
  CHECK(bad == 0);
  if (ref2 > 0) CHECK(std::sqrt(err2 / ref2) <= normalised);
}

// Runs one case on every vector ISA with 1 and 2 threads: close to the reference, and the
// two thread counts bitwise identical.
void check_case(OpKind kind, const OpAttrs& attrs, const std::vector<Input>& ins, const TensorDesc& ydesc,
                double normalised) {
  std::vector<float> want;
  REQUIRE(run_reference(kind, attrs, ins, ydesc, &want).ok());
  for (const std::string& isa : vector_isas()) {
    CAPTURE(isa);
    const std::vector<float> y1 = run_cpu(kind, attrs, ins, isa, 1);
    const std::vector<float> y2 = run_cpu(kind, attrs, ins, isa, 2);
    check_close(y1, want, normalised);
    CHECK(bitwise_equal(y1, y2));
  }
}

struct DenseCase {
  int64_t B, H, Nq, Nk, hd, hv;
  bool causal, mask;
  float scale;
  float q_range = 1.0f;
};

// q in [-q_range, q_range], k and v in [-1, 1]; keys kept with probability mask_keep, and with
// B > 1 a batch with every key masked: all its queries give zeros.
void check_dense(const DenseCase& c, std::mt19937& rng, float mask_keep = 0.7f) {
  const AttentionShape shape{c.B, c.H, c.Nq, c.Nk, c.hd, c.hv};
  CAPTURE(shape);
  CAPTURE(c.causal);
  CAPTURE(c.mask);
  const DenseData d = random_dense(shape, rng, c.q_range, 1.0f, mask_keep);
  const OpAttrs attrs = AttentionAttrs{.scale = c.scale, .causal = c.causal, .has_key_padding_mask = c.mask};
  check_case(OpKind::attention, attrs, d.inputs(c.mask), d.yd, 3e-5);
}

}  // namespace

TEST_CASE("cpu attention: shapes around vector and block widths, masks, 1 vs 2 threads") {
  std::mt19937 rng(20240611);
  const int64_t ns[] = {1, 2, 3, 7, 16, 17, 63, 64, 65, 200};
  const int64_t hds[] = {1, 3, 8, 16, 64, 65};
  // Every (Nq, Nk) pair once, with head dims, batch/heads and masks cycling through.
  int n = 0;
  for (int64_t nq : ns)
    for (int64_t nk : ns) {
      const int64_t hd = hds[n % 6], hv = hds[(n * 5 + 1) % 6];
      const DenseCase c{.B = 1 + n % 3,
                        .H = 1 + (n / 3) % 3,
                        .Nq = nq,
                        .Nk = nk,
                        .hd = hd,
                        .hv = hv,
                        .causal = (n % 2) == 1,
                        .mask = (n % 4) >= 2,
                        .scale = 1.0f / std::sqrt(float(hd))};
      check_dense(c, rng);
      ++n;
    }
}

TEST_CASE("cpu attention: hd and hv of every tile remainder at a multi-block size") {
  std::mt19937 rng(7);
  for (int64_t hd : {1, 3, 8, 16, 64, 65})
    for (int64_t hv : {1, 3, 16, 64, 65}) {
      check_dense({.B = 1,
                   .H = 2,
                   .Nq = 130,
                   .Nk = 129,
                   .hd = hd,
                   .hv = hv,
                   .causal = false,
                   .mask = false,
                   .scale = 0.3f},
                  rng);
      check_dense({.B = 2,
                   .H = 1,
                   .Nq = 70,
                   .Nk = 200,
                   .hd = hd,
                   .hv = hv,
                   .causal = true,
                   .mask = true,
                   .scale = 0.3f},
                  rng, 0.9f);
    }
}

TEST_CASE("cpu attention: large logits, causal tall and wide, sparse masks") {
  std::mt19937 rng(99);
  // Logits up to ~150 with scale 1: the running max must keep every exp argument <= 0.
  check_dense({.B = 1,
               .H = 2,
               .Nq = 67,
               .Nk = 150,
               .hd = 16,
               .hv = 8,
               .causal = false,
               .mask = false,
               .scale = 1.0f,
               .q_range = 9.0f},
              rng);
  check_dense({.B = 1,
               .H = 1,
               .Nq = 200,
               .Nk = 65,
               .hd = 16,
               .hv = 16,
               .causal = true,
               .mask = false,
               .scale = 1.0f,
               .q_range = 9.0f},
              rng);
  // Queries with no visible key (Nq > Nk, causal) and masks keeping few keys.
  check_dense(
      {.B = 3, .H = 2, .Nq = 200, .Nk = 17, .hd = 8, .hv = 3, .causal = true, .mask = true, .scale = 0.5f},
      rng, 0.2f);
  check_dense(
      {.B = 2, .H = 3, .Nq = 3, .Nk = 200, .hd = 64, .hv = 64, .causal = true, .mask = true, .scale = 0.125f},
      rng, 0.05f);
}

TEST_CASE("cpu attention: non-finite values behind masks never leak; NaN rows match the reference") {
  std::mt19937 rng(5);
  const int64_t B = 2, H = 1, N = 70, hd = 16, hv = 16;
  const TensorDesc qd(DType::f32, {B, H, N, hd}), vd(DType::f32, {B, H, N, hv}), md(DType::u8, {B, N});
  std::vector<float> q = uniform(rng, qd.numel(), -1, 1), k = uniform(rng, qd.numel(), -1, 1),
                     v = uniform(rng, vd.numel(), -1, 1);
  std::vector<uint8_t> mask(size_t(B * N), 1);
  // Padded keys 5 and 66 of batch 0 hold inf / NaN in K and V.
  for (int64_t j : {5, 66}) {
    mask[size_t(j)] = 0;
    for (int64_t d = 0; d < hd; ++d) k[size_t(j * hd + d)] = kNaN;
    for (int64_t e = 0; e < hv; ++e) v[size_t(j * hv + e)] = (j == 5) ? kInf : kNaN;
  }
  // Causally masked: the last key of batch 1 has an infinite V; only the last query sees it.
  for (int64_t e = 0; e < hv; ++e) v[size_t((N + N - 1) * hv + e)] = kInf;
  // A NaN in one query of batch 1 makes exactly that row NaN.
  q[size_t((N + 10) * hd + 3)] = kNaN;
  const std::vector<Input> ins{
      {"q", qd, q.data()}, {"k", qd, k.data()}, {"v", vd, v.data()}, {"mask", md, mask.data()}};
  const OpAttrs attrs = AttentionAttrs{.scale = 0.25f, .causal = true, .has_key_padding_mask = true};
  check_case(OpKind::attention, attrs, ins, TensorDesc(DType::f32, {B, H, N, hv}), 3e-5);
}

namespace {

struct SparseCase {
  int64_t B, H, Nq, Nk, hd, hv, kk;
  int64_t iB, iH;      // index dims 0 and 1: B/H or 1 (broadcast)
  bool unused = true;  // some -1 slots and repeats; false: every slot a valid key (top-k rows)
};

void check_sparse(const SparseCase& c, std::mt19937& rng) {
  CAPTURE(c.B);
  CAPTURE(c.H);
  CAPTURE(c.Nq);
  CAPTURE(c.Nk);
  CAPTURE(c.hd);
  CAPTURE(c.hv);
  CAPTURE(c.kk);
  CAPTURE(c.iB);
  CAPTURE(c.iH);
  const TensorDesc qd(DType::f32, {c.B, c.H, c.Nq, c.hd}), kd(DType::f32, {c.B, c.H, c.Nk, c.hd}),
      vd(DType::f32, {c.B, c.H, c.Nk, c.hv}), id(DType::i32, {c.iB, c.iH, c.Nq, c.kk}),
      yd(DType::f32, {c.B, c.H, c.Nq, c.hv});
  const std::vector<float> q = uniform(rng, qd.numel(), -1, 1), k = uniform(rng, kd.numel(), -1, 1),
                           v = uniform(rng, vd.numel(), -1, 1);
  std::vector<int32_t> idx(size_t(id.numel()));
  std::uniform_int_distribution<int32_t> key(0, int32_t(c.Nk - 1));
  std::uniform_int_distribution<int> kind(0, 9);
  for (size_t i = 0; i < idx.size(); ++i) {
    const int r = kind(rng);
    idx[i] = !c.unused                              ? key(rng)
             : r == 0                               ? -1
             : (r == 1 && i > 0 && idx[i - 1] >= 0) ? idx[i - 1]
                                                    : key(rng);  // unused, repeat
  }
  if (c.Nq > 1)  // one query with every slot unused: zeros
    for (int64_t s = 0; s < c.kk; ++s) idx[size_t(c.kk + s)] = -1;
  const std::vector<Input> ins{
      {"q", qd, q.data()}, {"k", kd, k.data()}, {"v", vd, v.data()}, {"idx", id, idx.data()}};
  check_case(OpKind::sparse_attention, SparseAttentionAttrs{.scale = 1.0f / std::sqrt(float(c.hd))}, ins, yd,
             1e-5);
}

}  // namespace

TEST_CASE("cpu sparse_attention: shapes, unused slots, repeats, broadcast indices, 1 vs 2 threads") {
  std::mt19937 rng(31337);
  const int64_t ns[] = {1, 2, 3, 7, 16, 17, 63, 64, 65, 200};
  const int64_t hds[] = {1, 3, 8, 16, 64, 65};
  const int64_t kks[] = {1, 3, 8, 16, 17, 33};
  int n = 0;
  for (int64_t nq : ns)
    for (int64_t nk : {1, 7, 17, 65, 200}) {
      const int64_t B = 1 + n % 3, H = 1 + (n / 3) % 3;
      check_sparse({.B = B,
                    .H = H,
                    .Nq = nq,
                    .Nk = nk,
                    .hd = hds[n % 6],
                    .hv = hds[(n * 5 + 1) % 6],
                    .kk = kks[(n / 2) % 6],
                    .iB = (n % 4) < 2 ? B : 1,
                    .iH = (n % 2) == 0 ? H : 1},
                   rng);
      ++n;
    }
}

// Rows with every slot valid are read in place (no compacted copy); a work item holds
// sparse_block_q() queries (sparse_attention.h), so Nq = one block + 70 splits each head
// into a full and a partial block, the logits pass of a block running before its V pass.
// Twice: with an L2 that holds no K (blocks of kSparseWeightsBudget floats) and with one
// that holds every K (kSparseWholeHeadBudget).
TEST_CASE("cpu sparse_attention: top-k rows read in place, several query blocks per head") {
  std::mt19937 rng(2718);
  for (const int64_t l2 : {int64_t(0), int64_t(1) << 30}) {
    test_support::ScopedOverride<int64_t> scoped(cpu::sparse_l2_bytes(), l2);
    CAPTURE(l2);
    REQUIRE(cpu::sparse_k_fits_l2(300, 64) == (l2 > 0));
    REQUIRE(cpu::sparse_block_q(int64_t(1) << 30, 300, 208, 64) ==
            (l2 > 0 ? cpu::kSparseWholeHeadBudget : cpu::kSparseWeightsBudget) / 208);
    auto two_blocks = [](int64_t nk, int64_t hd) {  // kk 200..208: the same block
      const int64_t bq = cpu::sparse_block_q(int64_t(1) << 30, nk, 208, hd);
      return bq + 70;
    };
    check_sparse({.B = 1,
                  .H = 2,
                  .Nq = two_blocks(300, 64),
                  .Nk = 300,
                  .hd = 64,
                  .hv = 64,
                  .kk = 200,
                  .iB = 1,
                  .iH = 2,
                  .unused = false},
                 rng);
    check_sparse({.B = 2,
                  .H = 1,
                  .Nq = two_blocks(90, 16),
                  .Nk = 90,
                  .hd = 16,
                  .hv = 33,
                  .kk = 205,
                  .iB = 1,
                  .iH = 1,
                  .unused = false},
                 rng);
    check_sparse({.B = 1,
                  .H = 1,
                  .Nq = 2 * two_blocks(64, 64),
                  .Nk = 64,
                  .hd = 64,
                  .hv = 64,
                  .kk = 200,
                  .iB = 1,
                  .iH = 1},
                 rng);
  }
}

TEST_CASE("cpu sparse_attention and attention: wide heads (generic head-dim loops)") {
  std::mt19937 rng(4242);
  for (int64_t hd : {72, 100, 200, 257}) {
    check_sparse({.B = 1, .H = 2, .Nq = 40, .Nk = 50, .hd = hd, .hv = 130, .kk = 20, .iB = 1, .iH = 1}, rng);
    check_dense({.B = 1,
                 .H = 1,
                 .Nq = 70,
                 .Nk = 66,
                 .hd = hd,
                 .hv = 130,
                 .causal = true,
                 .mask = true,
                 .scale = 0.1f},
                rng);
  }
}

TEST_CASE("cpu sparse_attention: non-finite unselected keys never leak; bad indices are errors") {
  std::mt19937 rng(77);
  const int64_t N = 40, hd = 17, hv = 9, kk = 5;
  const TensorDesc qd(DType::f32, {1, 1, N, hd}), vd(DType::f32, {1, 1, N, hv}),
      id(DType::i32, {1, 1, N, kk});
  std::vector<float> q = uniform(rng, qd.numel(), -1, 1), k = uniform(rng, qd.numel(), -1, 1),
                     v = uniform(rng, vd.numel(), -1, 1);
  for (int64_t d = 0; d < hd; ++d) k[size_t(7 * hd + d)] = kNaN;  // key 7 is never selected
  for (int64_t e = 0; e < hv; ++e) v[size_t(7 * hv + e)] = kInf;
  std::vector<int32_t> idx(size_t(N * kk));
  for (int64_t i = 0; i < N; ++i)
    for (int64_t s = 0; s < kk; ++s)
      idx[size_t(i * kk + s)] = int32_t((i + 3 * s) % N == 7 ? -1 : (i + 3 * s) % N);
  std::vector<Input> ins{
      {"q", qd, q.data()}, {"k", qd, k.data()}, {"v", vd, v.data()}, {"idx", id, idx.data()}};
  const OpAttrs attrs = SparseAttentionAttrs{.scale = 0.5f};
  const TensorDesc yd(DType::f32, {1, 1, N, hv});
  check_case(OpKind::sparse_attention, attrs, ins, yd, 1e-5);

  // An index >= Nk (or < -1) is out_of_range at every ISA, and the message names it.
  for (int32_t bad : {int32_t(N), int32_t(-2)}) {
    idx[size_t(3 * kk + 2)] = bad;
    for (const std::string& isa : vector_isas()) {
      auto out = run_node(OpKind::sparse_attention, attrs, ins, isa, 2);
      REQUIRE_FALSE(out.ok());
      CHECK(out.status().code() == StatusCode::out_of_range);
      CHECK(out.status().message().find(std::to_string(bad)) != std::string::npos);
    }
  }
}

// The bf16-session kernels called directly (no prepared scratch: the run allocates the bf16
// copies itself) on strided f32 K and V: K rows padded, V with a dim-3 stride of 2. They give
// bit for bit the f32-session kernel's output on contiguous bf16 K and V holding
// f32_to_bf16 of the same values, and K and V given as bf16 run as given.
TEST_CASE("cpu sparse_attention bf16 session: strided f32 K/V rounded to bf16, no prepared scratch") {
  using Fn = Status (*)(const KernelArgs&);
  struct Level {
    cpu::Isa isa;
    Fn bf16_session, f32_session;
  };
  const Level levels[] = {
      {cpu::Isa::avx2, cpu::cpu_sparse_attention_bf16_avx2, cpu::cpu_sparse_attention_f32_avx2},
      {cpu::Isa::avx512, cpu::cpu_sparse_attention_bf16_avx512, cpu::cpu_sparse_attention_f32_avx512}};
  const int64_t B = 2, H = 3, Nq = 37, Nk = 70, hd = 19, hv = 24, kk = 13, kpad = hd + 5;
  std::mt19937 rng(4242);
  const std::vector<float> q = uniform(rng, B * H * Nq * hd, -2.0f, 2.0f);
  const std::vector<float> kbuf = uniform(rng, B * H * Nk * kpad, -2.0f, 2.0f);
  const std::vector<float> vbuf = uniform(rng, B * H * Nk * hv * 2, -2.0f, 2.0f);
  std::vector<int32_t> ix(size_t(B * H * Nq * kk));
  for (size_t i = 0; i < ix.size(); ++i) ix[i] = int32_t(rng() % (Nk + 1)) - 1;  // -1: unused slot
  const int64_t kd[] = {B, H, Nk, hd}, ks[] = {H * Nk * kpad, Nk * kpad, kpad, 1};
  const int64_t vd[] = {B, H, Nk, hv}, vs[] = {H * Nk * hv * 2, Nk * hv * 2, hv * 2, 2};
  auto kdesc = TensorDesc::make_strided(DType::f32, kd, ks);
  auto vdesc = TensorDesc::make_strided(DType::f32, vd, vs);
  REQUIRE(kdesc.ok());
  REQUIRE(vdesc.ok());
  std::vector<uint16_t> k16(size_t(B * H * Nk * hd)), v16(size_t(B * H * Nk * hv));
  for (int64_t r = 0; r < B * H * Nk; ++r) {
    for (int64_t e = 0; e < hd; ++e) k16[size_t(r * hd + e)] = f32_to_bf16(kbuf[size_t(r * kpad + e)]);
    for (int64_t e = 0; e < hv; ++e) v16[size_t(r * hv + e)] = f32_to_bf16(vbuf[size_t((r * hv + e) * 2)]);
  }
  const TensorDesc qd(DType::f32, {B, H, Nq, hd}), id(DType::i32, {B, H, Nq, kk}),
      yd(DType::f32, {B, H, Nq, hv});
  const OpAttrs attrs = SparseAttentionAttrs{.scale = 0.3f};
  const TensorView strided[4] = {{qd, const_cast<float*>(q.data())},
                                 {*kdesc, const_cast<float*>(kbuf.data())},
                                 {*vdesc, const_cast<float*>(vbuf.data())},
                                 {id, ix.data()}};
  const TensorView as_bf16[4] = {strided[0],
                                 {TensorDesc(DType::bf16, kd), k16.data()},
                                 {TensorDesc(DType::bf16, vd), v16.data()},
                                 strided[3]};
  auto run = [&](Fn fn, const TensorView* ins) {
    std::vector<float> y(size_t(yd.numel()), -7.0f);
    const TensorView out{yd, y.data()};
    KernelArgs args;
    args.attrs = &attrs;
    args.inputs = {ins, 4};
    args.outputs = {&out, 1};
    REQUIRE(fn(args).ok());
    return y;
  };
  int levels_run = 0;
  for (const Level& l : levels) {
    if (int(cpu::detect_isa()) < int(l.isa)) continue;
    CAPTURE(cpu::isa_name(l.isa));
    const std::vector<float> want = run(l.f32_session, as_bf16);
    CHECK(bitwise_equal(run(l.bf16_session, strided), want));
    CHECK(bitwise_equal(run(l.bf16_session, as_bf16), want));
    ++levels_run;
  }
  if (levels_run == 0) MESSAGE("no AVX2: the bf16-session kernels are not run");
}
