// The cpu backend's matmul GEMM (backends/cpu/gemm*) against the reference kernel (double
// accumulation) at every ISA level this machine has: sizes below, at and above the tile
// widths, trans flags, f16/bf16 B, bias, C, activations, batch broadcasting, weight B
// prepacked at prepare vs packed per run, K up to 4096, guard pages after the inputs and guard
// floats around the output, NaN/inf propagation, and bitwise-identical results for 1, 2 and
// 3 threads.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm.h"
#include "longrun/backend.h"
#include "longrun/graph.h"
#include "longrun/planner.h"
#include "longrun/session.h"
#include "longrun/thread_pool.h"
#include "support/stream_min_bytes.h"
#include "unit/cpu_test_util.h"

using namespace longrun;
namespace gemm = longrun::cpu::gemm;

namespace {

using cpu_test::bits;
using cpu_test::has_avx2;
using cpu_test::pool_of;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Level {
  cpu::Isa isa;
  const gemm::GemmIsaKernels& (*kernels)();
};
constexpr Level kLevels[] = {{cpu::Isa::avx2, gemm::gemm_kernels_avx2},
                             {cpu::Isa::avx512, gemm::gemm_kernels_avx512}};

bool has(cpu::Isa isa) { return int(cpu::detect_isa()) >= int(isa); }

// Bytes that end exactly where a PROT_NONE page begins: a read past the end faults.
class GuardedBytes {
 public:
  explicit GuardedBytes(size_t bytes) : bytes_(bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    pages_ = (bytes + page - 1) / page + 1;
    void* p = mmap(nullptr, pages_ * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<char*>(p);
    REQUIRE(mprotect(base_ + (pages_ - 1) * page, page, PROT_NONE) == 0);
    data_ = base_ + (pages_ - 1) * page - bytes;
  }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  ~GuardedBytes() { munmap(base_, pages_ * size_t(sysconf(_SC_PAGESIZE))); }
  void* data() const { return data_; }

 private:
  size_t bytes_ = 0, pages_ = 0;
  char* base_ = nullptr;
  char* data_ = nullptr;
};

// One matmul problem: descs, attrs and input data (each input in its own guarded buffer).
struct Problem {
  MatmulAttrs at;
  std::vector<TensorDesc> descs;
  std::vector<std::unique_ptr<GuardedBytes>> data;
  TensorDesc y;

  std::vector<TensorView> views() const {
    std::vector<TensorView> v;
    for (size_t i = 0; i < descs.size(); ++i) v.push_back(TensorView{descs[i], data[i]->data()});
    return v;
  }
};

std::vector<int64_t> cat(std::vector<int64_t> a, std::initializer_list<int64_t> b) {
  a.insert(a.end(), b);
  return a;
}

// Random inputs in [-1, 1] (B rounded to its dtype); batch dims per operand.
Problem make_problem(const MatmulAttrs& at, int64_t M, int64_t N, int64_t K, DType b_dtype, uint32_t seed,
                     const std::vector<int64_t>& a_batch = {}, const std::vector<int64_t>& b_batch = {},
                     const std::vector<int64_t>& c_batch = {}) {
  Problem p;
  p.at = at;
  p.descs.push_back(TensorDesc(DType::f32, cat(a_batch, {at.trans_a ? K : M, at.trans_a ? M : K})));
  p.descs.push_back(TensorDesc(b_dtype, cat(b_batch, {at.trans_b ? N : K, at.trans_b ? K : N})));
  if (at.has_bias) p.descs.push_back(TensorDesc(DType::f32, {N}));
  if (at.has_c) p.descs.push_back(TensorDesc(DType::f32, cat(c_batch, {M, N})));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const TensorDesc& d : p.descs) {
    p.data.push_back(std::make_unique<GuardedBytes>(size_t(d.nbytes())));
    void* raw = p.data.back()->data();
    for (int64_t i = 0; i < d.numel(); ++i) {
      const float v = u(rng);
      if (d.dtype() == DType::f32) {
        static_cast<float*>(raw)[i] = v;
      } else {
        const uint16_t h = d.dtype() == DType::f16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(static_cast<char*>(raw) + 2 * i, &h, 2);
      }
    }
  }
  std::vector<TensorDesc> out;
  REQUIRE(infer_op(OpKind::matmul, OpAttrs(at), p.descs, &out).ok());
  p.y = out[0];
  return p;
}

std::vector<float> run_reference(const Problem& p) {
  std::vector<float> y(size_t(p.y.numel()));
  const OpAttrs attrs = p.at;
  const std::vector<TensorView> in = p.views();
  const TensorView out{p.y, y.data()};
  KernelArgs args;
  args.attrs = &attrs;
  args.inputs = in;
  args.outputs = {&out, 1};
  REQUIRE(reference_matmul(args).ok());
  return y;
}

constexpr int kGuard = 37;  // floats before and after the output
constexpr uint32_t kGuardBits = 0x7fc0dead;

// Our kernel at one ISA level; checks the guard floats around the output. `aligned`: the
// output starts on a 64-byte boundary (else 4 bytes past one), as streamed stores need.
std::vector<float> run_ours(const gemm::GemmIsaKernels& isa, const Problem& p, ThreadPool* pool,
                            const void* prepared = nullptr, const std::vector<TensorView>* inputs = nullptr,
                            bool aligned = false) {
  std::vector<uint32_t> room(size_t(p.y.numel() + 2 * kGuard + 16), kGuardBits);
  size_t start = kGuard;
  while (reinterpret_cast<uintptr_t>(room.data() + start) % 64 != (aligned ? 0 : 4)) ++start;
  const std::span<uint32_t> buf(room.data() + start - kGuard, size_t(p.y.numel() + 2 * kGuard));
  const OpAttrs attrs = p.at;
  const std::vector<TensorView> in = inputs != nullptr ? *inputs : p.views();
  const TensorView out{p.y, buf.data() + kGuard};
  KernelArgs args;
  args.attrs = &attrs;
  args.inputs = in;
  args.outputs = {&out, 1};
  args.pool = pool;
  args.prepared = prepared;
  REQUIRE(gemm::matmul_run(isa, args).ok());
  for (int i = 0; i < kGuard; ++i) {
    CHECK_MESSAGE(buf[size_t(i)] == kGuardBits, "write before the output");
    CHECK_MESSAGE(buf[buf.size() - 1 - size_t(i)] == kGuardBits, "write after the output");
  }
  std::vector<float> y(size_t(p.y.numel()));
  std::memcpy(y.data(), buf.data() + kGuard, y.size() * 4);
  return y;
}

// The conformance bounds for matmul: normalised error 1e-5, per element |d| / max(1, |ref|)
// 1e-4; NaN and infinities where and only where the reference has them.
void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double err2 = 0, ref2 = 0, worst = 0;
  int mismatched_nonfinite = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      const bool same = (std::isnan(want[i]) && std::isnan(got[i])) || want[i] == got[i];
      if (!same) ++mismatched_nonfinite;
      continue;
    }
    const double d = double(got[i]) - double(want[i]);
    err2 += d * d;
    ref2 += double(want[i]) * double(want[i]);
    worst = std::max(worst, std::fabs(d) / std::max(1.0, std::fabs(double(want[i]))));
  }
  CHECK(mismatched_nonfinite == 0);
  CHECK(worst <= 1e-4);
  if (ref2 > 0) CHECK(std::sqrt(err2 / ref2) <= 1e-5);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Checks `p` at every level: 1, 2 and 3 threads against the reference and each other.
void check_all_levels(const Problem& p) {
  const std::vector<float> want = run_reference(p);
  auto two = pool_of(2), three = pool_of(3);
  for (const Level& level : kLevels) {
    if (!has(level.isa)) continue;
    CAPTURE(cpu::isa_name(level.isa));
    const std::vector<float> one = run_ours(level.kernels(), p, nullptr);
    check_close(one, want);
    CHECK(bitwise_equal(one, run_ours(level.kernels(), p, two.get())));
    CHECK(bitwise_equal(one, run_ours(level.kernels(), p, three.get())));
  }
}

constexpr int64_t kSizes[] = {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 64, 65, 100, 257};
constexpr int kNumSizes = int(std::size(kSizes));

}  // namespace

TEST_CASE("cpu gemm: sizes around the tiles x flags, dtypes, epilogues vs reference, 1/2/3 threads bitwise") {
  if (!has(cpu::Isa::avx2)) MESSAGE("cpu gemm tests: no AVX2 on this machine; nothing to test");
  int v = 0;
  for (int i = 0; i < kNumSizes; ++i) {
    for (int j = 0; j < kNumSizes; ++j, ++v) {
      const int64_t M = kSizes[i], N = kSizes[j], K = kSizes[(i * 5 + j * 3 + 1) % kNumSizes];
      MatmulAttrs at;
      at.trans_a = (v & 1) != 0;
      at.trans_b = (v & 2) != 0;
      at.has_bias = (v & 4) != 0;
      at.has_c = v % 5 == 0;
      at.activation = Activation(v % 4);
      at.alpha = v % 3 == 0 ? 0.5f : 1.0f;
      at.beta = 0.75f;
      const DType bt = (v / 7) % 3 == 0 ? DType::f32 : (v / 7) % 3 == 1 ? DType::f16 : DType::bf16;
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CAPTURE(v);
      check_all_levels(make_problem(at, M, N, K, bt, uint32_t(v)));
    }
  }
}

TEST_CASE("cpu gemm: batch dims broadcast numpy-style across A, B and C") {
  struct Batches {
    std::vector<int64_t> a, b, c;
  };
  const Batches cases[] = {{{2, 3}, {}, {}}, {{}, {2, 1}, {}},         {{3, 1}, {1, 4}, {4}},
                           {{2}, {2}, {}},   {{2}, {2}, {1}},          {{1, 5}, {5}, {2, 5}},
                           {{4}, {1}, {4}},  {{2, 2}, {2, 2}, {2, 2}}, {{1, 1, 3}, {2, 1, 1}, {}}};
  int v = 0;
  for (const Batches& bs : cases) {
    for (int flags = 0; flags < 4; ++flags, ++v) {
      MatmulAttrs at;
      at.trans_a = (flags & 1) != 0;
      at.trans_b = (flags & 2) != 0;
      at.has_c = !bs.c.empty() || flags == 3;
      at.has_bias = v % 2 == 0;
      at.activation = Activation(v % 4);
      at.beta = -1.5f;
      CAPTURE(v);
      check_all_levels(make_problem(at, 17, 33, 20, v % 3 == 0 ? DType::f16 : DType::f32, uint32_t(100 + v),
                                    bs.a, bs.b, bs.c));
      // N = 64, whole panels on every level: an f32 B without trans_b is read in place.
      check_all_levels(make_problem(at, 17, 64, 20, DType::f32, uint32_t(200 + v), bs.a, bs.b, bs.c));
    }
  }
}

TEST_CASE("cpu gemm: attention shapes (N x N x 64 and N x 64 x N over heads)") {
  for (int64_t n : {63, 128, 200}) {
    CAPTURE(n);
    MatmulAttrs qk{.trans_b = true, .alpha = 0.125f};
    check_all_levels(make_problem(qk, n, n, 64, DType::f32, 7, {2, 3}, {2, 3}));
    check_all_levels(make_problem(MatmulAttrs{}, n, 64, n, DType::f32, 8, {2, 3}, {2, 3}));
  }
}

TEST_CASE("cpu gemm: outputs beyond the cache are streamed (non-temporal stores) with the same bits") {
  struct Shape {
    MatmulAttrs at;
    int64_t M, N, K;
  };
  const MatmulAttrs qk{.trans_b = true}, pv{};
  const Shape shapes[] = {
      {qk, 5, 16, 64},
      {qk, 63, 48, 64},
      {qk, 128, 80, 64},
      {qk, 29, 128, 64},  // streamed: N % 16 == 0
      {pv, 63, 64, 63},
      {pv, 128, 64, 128},  // the wide P·V tile
      {pv, 17, 48, 33},
      {qk, 20, 33, 64},  // N % 16 != 0: plain stores
      {qk, 20, 64, 600},
      {MatmulAttrs{.trans_b = true, .alpha = 0.125f}, 20, 64, 64}};  // 2 K blocks; epilogue
  auto two = pool_of(2);
  int v = 0;
  for (const Shape& sh : shapes) {
    for (bool batched : {false, true}) {
      CAPTURE(v);
      const std::vector<int64_t> batch = batched ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{};
      const Problem p = make_problem(sh.at, sh.M, sh.N, sh.K, DType::f32, uint32_t(300 + v++), batch, batch);
      const std::vector<float> want = run_reference(p);
      for (const Level& level : kLevels) {
        if (!has(level.isa)) continue;
        CAPTURE(cpu::isa_name(level.isa));
        const std::vector<float> plain = run_ours(level.kernels(), p, nullptr, nullptr, nullptr, true);
        test_support::ScopedStreamMinBytes streamed_from(1);
        const std::vector<float> one = run_ours(level.kernels(), p, nullptr, nullptr, nullptr, true);
        check_close(one, want);
        CHECK(bitwise_equal(one, plain));
        CHECK(bitwise_equal(one, run_ours(level.kernels(), p, two.get(), nullptr, nullptr, true)));
        CHECK(bitwise_equal(one, run_ours(level.kernels(), p, two.get())));  // misaligned: plain stores
      }
    }
  }
}

TEST_CASE("cpu gemm: a weight B is prepacked at prepare; an input B uses the prepared scratch") {
  auto two = pool_of(2);
  int v = 0;
  for (DType bt : {DType::f32, DType::f16, DType::bf16}) {
    for (const std::vector<int64_t>& b_batch : {std::vector<int64_t>{}, std::vector<int64_t>{3}}) {
      for (bool weight : {true, false}) {
        ++v;
        MatmulAttrs at{.trans_b = v % 2 == 0, .has_bias = true, .activation = Activation::gelu};
        const Problem p = make_problem(at, 45, 70, 300, bt, uint32_t(v), {3}, b_batch);
        GraphBuilder b;
        const ValueId a = b.input("a", p.descs[0]);
        const ValueId w = weight ? b.weight("w", p.descs[1], p.data[1]->data()) : b.input("w", p.descs[1]);
        const ValueId bias = b.weight("bias", p.descs[2], p.data[2]->data());
        b.output(b.matmul({a, w, bias}, at), "y");
        auto g = b.build();
        REQUIRE(g.ok());
        const std::vector<float> want = run_reference(p);
        for (const Level& level : kLevels) {
          if (!has(level.isa)) continue;
          CAPTURE(cpu::isa_name(level.isa));
          CAPTURE(v);
          for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), two.get()}) {
            auto state = gemm::matmul_prepare(level.kernels(), *g, g->nodes()[0], pool);
            REQUIRE(state.ok());
            REQUIRE(*state != nullptr);
            const std::vector<float> unprepared = run_ours(level.kernels(), p, pool);
            const std::vector<float> first = run_ours(level.kernels(), p, pool, state->get());
            const std::vector<float> second = run_ours(level.kernels(), p, pool, state->get());
            check_close(first, want);
            CHECK(bitwise_equal(first, unprepared));  // same FMA chains, packed once or per run
            CHECK(bitwise_equal(first, second));
          }
        }
      }
    }
  }
}

// A small M on several threads splits N into several tasks per M block; A (packed: rows
// 8 KiB apart alias in L1, or trans_a) is then packed once per M block by whichever task
// comes first and shared (gemm.cpp, shares_a): same bits as one thread, with and without a
// prepared state, with a weight B (prepacked) and an input B, over batches.
TEST_CASE("cpu gemm: N-split tasks share one packed A per M block") {
  auto two = pool_of(2), three = pool_of(3);
  int v = 0;
  for (const bool trans_a : {false, true}) {
    for (const bool weight : {true, false}) {
      ++v;
      MatmulAttrs at{.trans_a = trans_a, .trans_b = true, .has_bias = v % 2 == 0};
      const Problem p =
          make_problem(at, 40, 300, trans_a ? 2148 : 2048, DType::f32, uint32_t(30 + v), {2}, {});
      check_all_levels(p);
      GraphBuilder b;
      const ValueId a = b.input("a", p.descs[0]);
      const ValueId w = weight ? b.weight("w", p.descs[1], p.data[1]->data()) : b.input("w", p.descs[1]);
      std::vector<ValueId> ins{a, w};
      if (at.has_bias) ins.push_back(b.weight("bias", p.descs[2], p.data[2]->data()));
      b.output(b.matmul(ins, at), "y");
      auto g = b.build();
      REQUIRE(g.ok());
      for (const Level& level : kLevels) {
        if (!has(level.isa)) continue;
        CAPTURE(cpu::isa_name(level.isa));
        CAPTURE(v);
        const std::vector<float> one = run_ours(level.kernels(), p, nullptr);
        for (ThreadPool* pool : {two.get(), three.get()}) {
          auto state = gemm::matmul_prepare(level.kernels(), *g, g->nodes()[0], pool);
          REQUIRE(state.ok());
          REQUIRE(*state != nullptr);
          CHECK(bitwise_equal(one, run_ours(level.kernels(), p, pool, state->get())));
          CHECK(bitwise_equal(one, run_ours(level.kernels(), p, pool, state->get())));
        }
      }
    }
  }
}

TEST_CASE("cpu gemm: a batched B too large to pack at once is packed batch by batch") {
  // 5 x 1024 x 1024 packs to 20 MiB, above the 16 MiB per-run cap.
  MatmulAttrs at{.has_c = true};
  const Problem p = make_problem(at, 2, 1024, 1024, DType::bf16, 11, {5}, {5}, {1});
  check_all_levels(p);
}

TEST_CASE("cpu gemm: one input B too large to pack at once is packed in column slabs") {
  // 4096 x 1100 packs to over 16 MiB on its own (a pooling's [1, N] x [N, D] at long N):
  // column slabs of whole panels, each packed then used, with bias, C and batches, with and
  // without the prepared state (whose scratch holds one slab, not the matrix).
  MatmulAttrs at{.has_bias = true, .has_c = true};
  const Problem p = make_problem(at, 3, 1100, 4096, DType::f32, 12, {2}, {2}, {2});
  check_all_levels(p);
  GraphBuilder b;
  const ValueId a = b.input("a", p.descs[0]);
  const ValueId w = b.input("w", p.descs[1]);
  const ValueId bias = b.weight("bias", p.descs[2], p.data[2]->data());
  const ValueId c = b.input("c", p.descs[3]);
  b.output(b.matmul({a, w, bias, c}, at), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  auto two = pool_of(2);
  for (const Level& level : kLevels) {
    if (!has(level.isa)) continue;
    CAPTURE(cpu::isa_name(level.isa));
    const std::vector<float> one = run_ours(level.kernels(), p, nullptr);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), two.get()}) {
      auto state = gemm::matmul_prepare(level.kernels(), *g, g->nodes()[0], pool);
      REQUIRE(state.ok());
      REQUIRE(*state != nullptr);
      CHECK(bitwise_equal(one, run_ours(level.kernels(), p, pool, state->get())));
    }
  }
}

TEST_CASE("cpu gemm: the per-run packed B scratch does not grow with a pooling's sequence length") {
  // weights [1, 1, N] x x [1, N, 512] (Fastformer's pooler): one B matrix of N x 512 floats
  // (128 MiB at N = 65,536) is packed one column slab at a time, so the prepared graph's
  // kernel scratch stays within the 16 MiB cap plus the A blocks (the shared packed A of the
  // one-row A: MR x N floats, 1.5 MiB at N = 65,536). Prepare only: the scratch is mapped,
  // never touched, and the inputs are never bound.
  for (const int64_t n : {int64_t(4096), int64_t(65536)}) {
    CAPTURE(n);
    GraphBuilder b;
    const ValueId w = b.input("w", TensorDesc(DType::f32, {1, 1, n}));
    const ValueId x = b.input("x", TensorDesc(DType::f32, {1, n, 512}));
    b.output(b.matmul({w, x}, {}), "y");
    auto g = b.build();
    REQUIRE(g.ok());
    auto plan = plan_memory(*g);
    REQUIRE(plan.ok());
    auto backend = create_backend("cpu", {.threads = 2});
    REQUIRE(backend.ok());
    auto prepared = (*backend)->prepare(*g, *plan, {});
    REQUIRE(prepared.ok());
    CHECK((*prepared)->memory_report().workspace_bytes <= (int64_t(20) << 20));
  }
}

TEST_CASE("cpu gemm: K up to 4096 stays within the conformance tolerance") {
  for (int64_t K : {1000, 4096}) {
    CAPTURE(K);
    check_all_levels(make_problem(MatmulAttrs{}, 33, 40, K, DType::f32, 21));
    // Same-sign data: the partial sums grow linearly, the hardest case for one FMA chain.
    Problem p = make_problem(MatmulAttrs{.trans_a = true}, 20, 17, K, DType::f32, 22);
    for (int i = 0; i < 2; ++i) {
      float* d = static_cast<float*>(p.data[size_t(i)]->data());
      for (int64_t e = 0; e < p.descs[size_t(i)].numel(); ++e) d[e] = std::fabs(d[e]);
    }
    check_all_levels(p);
  }
}

TEST_CASE("cpu gemm: activations over a wide range of pre-activations") {
  // Y = act(alpha * x * 1): A is one column of values from -30 to 30, B a row of ones, so
  // every output is an activation of a known value; gelu's vector erf is checked tightly.
  const int64_t M = 601;
  for (int act = 0; act < 4; ++act) {
    MatmulAttrs at{.alpha = 0.05f, .activation = Activation(act)};
    Problem p = make_problem(at, M, 19, 1, DType::f32, 5);
    float* a = static_cast<float*>(p.data[0]->data());
    float* b = static_cast<float*>(p.data[1]->data());
    for (int64_t i = 0; i < M; ++i) a[i] = float(i - 300);
    for (int64_t j = 0; j < 19; ++j) b[j] = 1.0f;
    const std::vector<float> want = run_reference(p);
    for (const Level& level : kLevels) {
      if (!has(level.isa)) continue;
      CAPTURE(cpu::isa_name(level.isa));
      CAPTURE(act);
      const std::vector<float> got = run_ours(level.kernels(), p, nullptr);
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst =
            std::max(worst, std::fabs(double(got[i]) - want[i]) / std::max(1.0, std::fabs(double(want[i]))));
      CHECK(worst <= 1e-6);
    }
  }
}

TEST_CASE("cpu gemm: NaN and infinities propagate like the reference") {
  for (int act = 0; act < 4; ++act) {
    MatmulAttrs at{.has_bias = true, .activation = Activation(act)};
    Problem p = make_problem(at, 9, 35, 6, DType::f32, 31);
    float* a = static_cast<float*>(p.data[0]->data());
    float* bias = static_cast<float*>(p.data[2]->data());
    a[0] = kNaN;           // row 0 all NaN
    a[6 * 2 + 1] = kInf;   // row 2: +-inf by the sign of B's row 1 (NaN where B is 0)
    a[6 * 4 + 3] = -kInf;  // row 4
    bias[7] = kInf;        // column 7: +inf, or NaN where a row is -inf
    bias[20] = -kInf;
    CAPTURE(act);
    check_all_levels(p);
  }
}

TEST_CASE("cpu gemm: strided views work and unusual layouts fall back to the reference") {
  // A as a strided (transposed) view of a larger buffer, C with padded rows, bias with stride 2.
  std::vector<float> abuf(20 * 40), cbuf(17 * 24), biasbuf(34);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto* buf : {&abuf, &cbuf, &biasbuf})
    for (float& x : *buf) x = u(rng);
  const Problem base = make_problem(MatmulAttrs{.has_bias = true, .has_c = true}, 17, 17, 19, DType::f32, 9);
  auto ad = TensorDesc::make_strided(DType::f32, std::vector<int64_t>{17, 19}, std::vector<int64_t>{1, 40});
  auto cd = TensorDesc::make_strided(DType::f32, std::vector<int64_t>{17, 17}, std::vector<int64_t>{24, 1});
  auto bd = TensorDesc::make_strided(DType::f32, std::vector<int64_t>{17}, std::vector<int64_t>{2});
  REQUIRE(ad.ok());
  REQUIRE(cd.ok());
  REQUIRE(bd.ok());
  const std::vector<TensorView> b = base.views();
  // Strided A and padded C rows go through the GEMM; a strided bias through the fallback.
  for (const std::vector<TensorView>& in :
       {std::vector<TensorView>{{*ad, abuf.data()}, b[1], b[2], {*cd, cbuf.data()}},
        std::vector<TensorView>{b[0], b[1], {*bd, biasbuf.data()}, b[3]}}) {
    std::vector<float> want(size_t(base.y.numel()));
    const OpAttrs attrs = base.at;
    const TensorView out{base.y, want.data()};
    KernelArgs args;
    args.attrs = &attrs;
    args.inputs = in;
    args.outputs = {&out, 1};
    REQUIRE(reference_matmul(args).ok());
    for (const Level& level : kLevels) {
      if (!has(level.isa)) continue;
      CAPTURE(cpu::isa_name(level.isa));
      check_close(run_ours(level.kernels(), base, nullptr, nullptr, &in), want);
    }
  }
}

TEST_CASE("cpu gemm: the cpu backend runs matmul with its kernels (session, weights, 2 threads)") {
  const Problem p =
      make_problem(MatmulAttrs{.trans_b = true, .has_bias = true, .activation = Activation::gelu_tanh}, 50,
                   96, 128, DType::f16, 41, {2});
  const std::vector<float> want = run_reference(p);
  for (const char* isa : {"avx2", "avx512"}) {
    if (!create_backend("cpu", {.threads = 2, .isa = isa}).ok()) continue;
    CAPTURE(isa);
    GraphBuilder b;
    const ValueId a = b.input("a", p.descs[0]);
    const ValueId w = b.weight("w", p.descs[1], p.data[1]->data());
    const ValueId bias = b.weight("bias", p.descs[2], p.data[2]->data());
    b.output(b.matmul({a, w, bias}, p.at), "y");
    auto g = b.build();
    REQUIRE(g.ok());
    auto s = Session::create(std::move(*g), {.backend = "cpu", .threads = 2, .isa = isa});
    REQUIRE(s.ok());
    NamedTensorRef in{"a", TensorView{p.descs[0], p.data[0]->data()}};
    auto out = (*s)->run({&in, 1});
    REQUIRE(out.ok());
    const Tensor& y = (*out)[0].tensor;
    check_close(std::vector<float>(y.data<float>(), y.data<float>() + y.desc().numel()), want);
  }
}
