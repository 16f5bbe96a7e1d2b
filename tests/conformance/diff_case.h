// The differential cases: per op of op_list.inc, a generator of adversarial random inputs
// (sizes around the 8/16-lane vector widths and GEMM tiles, primes, N = 1, a few
// model-shaped cases, broadcast patterns, masks, ties, NaN/±inf where the spec defines the
// result, f16/bf16 weights). differential_test.cpp runs each case on the backend under test
// and on the reference backend and compares them under tolerances.cpp.
//
// Generation is deterministic: one seeded stream per op (seeded from the op's name), so a
// case name identifies the same inputs on every run of the same build.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conformance/case_runner.h"
#include "longrun/ops/attrs.h"

namespace longrun::conformance::diff {

// splitmix64: small, fast, and the same sequence on every platform (std:: distributions
// are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);     // [lo, hi)
  int64_t integer(int64_t lo, int64_t hi);  // [lo, hi], inclusive
  bool chance(double p) { return uniform(0, 1) < p; }

 private:
  uint64_t s_;
};

// A contiguous host tensor with aligned storage.
struct HostTensor {
  TensorDesc desc;
  std::shared_ptr<AlignedBuffer> buf;
  std::span<const std::byte> bytes() const { return {buf->data(), size_t(desc.nbytes())}; }
  TensorView view() const { return TensorView{desc, buf->data()}; }
};
HostTensor zeros(DType dtype, std::span<const int64_t> dims);
inline HostTensor zeros(DType dtype, std::initializer_list<int64_t> dims) {
  return zeros(dtype, std::span<const int64_t>(dims.begin(), dims.size()));
}

// How float elements are drawn. Each element is, with the given probabilities: a signed
// zero, one of a few repeated values (ties), a tiny or subnormal magnitude, NaN, +inf,
// -inf; otherwise uniform in [lo, hi) (rounded to a multiple of `quantum` when > 0, which
// makes sums exact and ties likely).
struct Fill {
  double lo = -1.0, hi = 1.0;
  double zeros = 0, ties = 0, tiny = 0, nan = 0, inf = 0, neg_inf = 0;
  double quantum = 0;
};
inline constexpr Fill kUniform{};
// Finite adversarial values: signed zeros, ties, subnormals.
inline constexpr Fill kFinite{-2.0, 2.0, 0.05, 0.1, 0.05, 0, 0, 0, 0};
// kFinite plus NaN and both infinities.
inline constexpr Fill kSpecial{-2.0, 2.0, 0.05, 0.1, 0.05, 0.03, 0.03, 0.03, 0};

// A float (f32/f16/bf16) tensor drawn from `f` (16-bit dtypes round the drawn value).
HostTensor random(Rng& rng, DType dtype, std::span<const int64_t> dims, const Fill& f = kUniform);
inline HostTensor random(Rng& rng, DType dtype, std::initializer_list<int64_t> dims,
                         const Fill& f = kUniform) {
  return random(rng, dtype, std::span<const int64_t>(dims.begin(), dims.size()), f);
}
// An integer (i32/i64/u8) tensor uniform in [lo, hi].
HostTensor random_int(Rng& rng, DType dtype, std::span<const int64_t> dims, int64_t lo, int64_t hi);
inline HostTensor random_int(Rng& rng, DType dtype, std::initializer_list<int64_t> dims, int64_t lo,
                             int64_t hi) {
  return random_int(rng, dtype, std::span<const int64_t>(dims.begin(), dims.size()), lo, hi);
}
// Element access (any dtype) through the oracle's loaders.
void set(const HostTensor& t, int64_t flat, double v);
double get(const HostTensor& t, int64_t flat);

// Sizes below/at/above the 8- and 16-lane vector widths and common GEMM tiles.
inline constexpr int64_t kSizes[] = {1,  2,  3,  5,  7,  8,  9,   15,  16,  17,
                                     31, 32, 33, 63, 64, 65, 100, 127, 128, 129};
// A few primes not in kSizes.
inline constexpr int64_t kPrimes[] = {11, 13, 37, 61, 97, 131};

struct DiffCase {
  std::string name;
  OpAttrs attrs;
  std::vector<HostTensor> inputs;
  // The reference rejects the case at run time (an id out of range, a cast that does not
  // fit): the backend under test must fail with the same status code.
  bool expect_error = false;
  // Non-empty: a backend may refuse the case at plan time (supports() false) with a reason
  // containing this text (bf16 K/V on the cuda backend); the case is then not run there.
  std::string may_refuse;
};

class CaseList {
 public:
  explicit CaseList(OpKind op);
  OpKind op() const { return op_; }
  Rng& rng() { return rng_; }
  // Adds a case; names must be unique per op (checked by the test).
  DiffCase& add(std::string name, const OpAttrs& attrs, std::vector<HostTensor> inputs);
  std::vector<DiffCase>& cases() { return cases_; }

 private:
  OpKind op_;
  Rng rng_;
  std::vector<DiffCase> cases_;
};

using Generator = void (*)(CaseList&);

// The generator of `op`, or nullptr when op_list.inc has an op without one (a test failure).
Generator generator_for(OpKind op);

// All cases of one op (empty when it has no generator).
std::vector<DiffCase> generate_cases(OpKind op);

// "3x17" for dims {3, 17}: case names.
std::string dims_name(std::span<const int64_t> dims);
inline std::string dims_name(std::initializer_list<int64_t> dims) {
  return dims_name(std::span<const int64_t>(dims.begin(), dims.size()));
}

// Per-family generators (diff_gen_*.cpp). The registry (diff_case.cpp) lists them by
// hand, on purpose: an op added to op_list.inc without a generator fails
// differential.generators instead of silently running nothing.
void generate_matmul(CaseList& list);
void generate_add(CaseList& list);
void generate_sub(CaseList& list);
void generate_mul(CaseList& list);
void generate_scale(CaseList& list);
void generate_exp(CaseList& list);
void generate_tanh(CaseList& list);
void generate_relu(CaseList& list);
void generate_gelu(CaseList& list);
void generate_gelu_tanh(CaseList& list);
void generate_cast(CaseList& list);
void generate_softmax(CaseList& list);
void generate_layer_norm(CaseList& list);
void generate_embedding(CaseList& list);
void generate_dct(CaseList& list);
void generate_idct(CaseList& list);
void generate_spectral_filter(CaseList& list);
void generate_topk_mask(CaseList& list);
void generate_topk_indices(CaseList& list);
void generate_matmul_topk(CaseList& list);
void generate_cummax(CaseList& list);
void generate_cumsum(CaseList& list);
void generate_segment_max(CaseList& list);
void generate_upsample_nearest(CaseList& list);
void generate_concat(CaseList& list);
void generate_slice(CaseList& list);
void generate_pad(CaseList& list);
void generate_transpose(CaseList& list);
void generate_reshape(CaseList& list);
void generate_roll(CaseList& list);
void generate_where(CaseList& list);
void generate_attention(CaseList& list);
void generate_sparse_attention(CaseList& list);
void generate_axial_attention(CaseList& list);

}  // namespace longrun::conformance::diff
