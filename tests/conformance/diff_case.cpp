#include "conformance/diff_case.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "ops/reference/access.h"

namespace longrun::conformance::diff {

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }

int64_t Rng::integer(int64_t lo, int64_t hi) {
  const uint64_t span = uint64_t(hi) - uint64_t(lo) + 1;  // 0: the whole int64 range
  return int64_t(uint64_t(lo) + (span == 0 ? next() : next() % span));
}

HostTensor zeros(DType dtype, std::span<const int64_t> dims) {
  HostTensor t{TensorDesc(dtype, dims), nullptr};
  t.buf = std::make_shared<AlignedBuffer>(size_t(t.desc.nbytes()));
  if (t.buf->size()) std::memset(t.buf->data(), 0, t.buf->size());
  return t;
}

void set(const HostTensor& t, int64_t flat, double v) {
  if (dtype_is_int(t.desc.dtype()))
    ref::store_int(t.view(), flat, int64_t(v));
  else
    ref::store(t.view(), flat, v);
}

double get(const HostTensor& t, int64_t flat) { return ref::load(t.view(), flat); }

namespace {

// One element drawn from `f`.
double draw(Rng& rng, const Fill& f) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  static constexpr double kTies[] = {0.5, -1.0, 1.5, 0.25};
  double u = rng.uniform(0, 1);
  if ((u -= f.zeros) < 0) return rng.chance(0.5) ? 0.0 : -0.0;
  if ((u -= f.ties) < 0) return kTies[rng.next() % 4] * (f.hi > 2 ? f.hi / 4 : 1.0);
  if ((u -= f.tiny) < 0) {
    // Normal tiny values and f32 subnormals (down to ~1e-45), either sign.
    const double mag = std::ldexp(1.0, -int(rng.integer(100, 148)));
    return rng.chance(0.5) ? mag : -mag;
  }
  if ((u -= f.nan) < 0) return std::numeric_limits<double>::quiet_NaN();
  if ((u -= f.inf) < 0) return kInf;
  if ((u -= f.neg_inf) < 0) return -kInf;
  double v = rng.uniform(f.lo, f.hi);
  if (f.quantum > 0) v = std::round(v / f.quantum) * f.quantum;
  return v;
}

}  // namespace

HostTensor random(Rng& rng, DType dtype, std::span<const int64_t> dims, const Fill& f) {
  HostTensor t = zeros(dtype, dims);
  const int64_t n = t.desc.numel();
  for (int64_t i = 0; i < n; ++i) set(t, i, draw(rng, f));
  return t;
}

HostTensor random_int(Rng& rng, DType dtype, std::span<const int64_t> dims, int64_t lo, int64_t hi) {
  HostTensor t = zeros(dtype, dims);
  const int64_t n = t.desc.numel();
  for (int64_t i = 0; i < n; ++i) ref::store_int(t.view(), i, rng.integer(lo, hi));
  return t;
}

std::string dims_name(std::span<const int64_t> dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

namespace {

// FNV-1a of the op name: each op's stream is independent of the others' generators.
uint64_t seed_of(OpKind op) {
  uint64_t h = 1469598103934665603ull;
  for (char c : op_name(op)) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

struct Registered {
  OpKind op;
  Generator gen;
};

constexpr Registered kGenerators[] = {
    {OpKind::matmul, generate_matmul},
    {OpKind::add, generate_add},
    {OpKind::sub, generate_sub},
    {OpKind::mul, generate_mul},
    {OpKind::scale, generate_scale},
    {OpKind::exp, generate_exp},
    {OpKind::tanh, generate_tanh},
    {OpKind::relu, generate_relu},
    {OpKind::gelu, generate_gelu},
    {OpKind::gelu_tanh, generate_gelu_tanh},
    {OpKind::cast, generate_cast},
    {OpKind::softmax, generate_softmax},
    {OpKind::layer_norm, generate_layer_norm},
    {OpKind::embedding, generate_embedding},
    {OpKind::dct, generate_dct},
    {OpKind::idct, generate_idct},
    {OpKind::spectral_filter, generate_spectral_filter},
    {OpKind::topk_mask, generate_topk_mask},
    {OpKind::topk_indices, generate_topk_indices},
    {OpKind::matmul_topk, generate_matmul_topk},
    {OpKind::cummax, generate_cummax},
    {OpKind::cumsum, generate_cumsum},
    {OpKind::segment_max, generate_segment_max},
    {OpKind::upsample_nearest, generate_upsample_nearest},
    {OpKind::concat, generate_concat},
    {OpKind::slice, generate_slice},
    {OpKind::pad, generate_pad},
    {OpKind::transpose, generate_transpose},
    {OpKind::reshape, generate_reshape},
    {OpKind::roll, generate_roll},
    {OpKind::where, generate_where},
    {OpKind::attention, generate_attention},
    {OpKind::sparse_attention, generate_sparse_attention},
    {OpKind::axial_attention, generate_axial_attention},
};

}  // namespace

CaseList::CaseList(OpKind op) : op_(op), rng_(seed_of(op)) {}

DiffCase& CaseList::add(std::string name, const OpAttrs& attrs, std::vector<HostTensor> inputs) {
  cases_.push_back(DiffCase{std::move(name), attrs, std::move(inputs), false});
  return cases_.back();
}

Generator generator_for(OpKind op) {
  for (const Registered& r : kGenerators)
    if (r.op == op) return r.gen;
  return nullptr;
}

std::vector<DiffCase> generate_cases(OpKind op) {
  const Generator gen = generator_for(op);
  if (gen == nullptr) return {};
  CaseList list(op);
  gen(list);
  return std::move(list.cases());
}

}  // namespace longrun::conformance::diff
