#include "op_cases.h"

#include <algorithm>
#include <cmath>
#include <new>

#include "longrun/ops/attrs.h"
#include "peers.h"

namespace longrun::bench {
namespace {

constexpr int64_t kD = 512;       // model width
constexpr int64_t kHeads = 8;     // attention heads
constexpr int64_t kHd = 64;       // head dim
constexpr double kSparse = 0.05;  // sparse attention / top-k keep 5 % of N
constexpr double kSpectralRatio = 0.2;
constexpr double kF = 4.0;  // bytes per f32

std::string dims(std::initializer_list<int64_t> d) {
  std::string s = "[";
  for (int64_t v : d) s += (s.size() > 1 ? "," : "") + std::to_string(v);
  return s + "]";
}

int64_t ceil_frac(int64_t n, double r) { return std::max<int64_t>(1, int64_t(std::ceil(double(n) * r))); }

// FFT-convention flop count of a real transform of length n (benchFFT's 2.5 n log2 n), the
// usual yardstick for DCT speed; not the flops any particular algorithm performs.
double fft_flops(int64_t n) { return n > 1 ? 2.5 * double(n) * std::log2(double(n)) : 0.0; }

// Collects a case: graph inputs bound to buffers as they are declared.
class CaseMaker {
 public:
  CaseMaker(std::string op, std::string shape, int64_t n) {
    c_.op = std::move(op);
    c_.shape = std::move(shape);
    c_.n = n;
  }
  ValueId input(const std::string& name, const TensorDesc& desc, BufferPtr buf) {
    c_.inputs.push_back(TensorView{desc, buf->data()});
    c_.owners.push_back(buf);
    return b.input(name, desc);
  }
  ValueId weight(const std::string& name, const TensorDesc& desc, BufferPtr buf) {
    c_.owners.push_back(buf);
    return b.weight(name, desc, buf->data(), buf);
  }
  Result<BenchCase> finish(ValueId y, double flops, double bytes, std::vector<PeerFactory> peers = {}) {
    b.output(y, "y");
    LR_ASSIGN_OR_RETURN(c_.graph, b.build());
    c_.flops = flops;
    c_.bytes = bytes;
    c_.peers = std::move(peers);
    return std::move(c_);
  }
  GraphBuilder b;

 private:
  BenchCase c_;
};

using Adder = void (*)(int64_t n, std::vector<CaseSpec>* out);

// A case whose op runs differently at `precisions` (f32 first).
void add(std::vector<CaseSpec>* out, const std::string& op, std::string shape, int64_t n,
         std::vector<PrecisionUse> precisions, std::function<Result<BenchCase>()> build) {
  out->push_back(CaseSpec{op, shape, n,
                          [op, shape, build = std::move(build)]() -> Result<BenchCase> {
                            try {
                              return build();
                            } catch (const std::bad_alloc&) {
                              return out_of_memory("cannot allocate the inputs of " + op + " " + shape);
                            }
                          },
                          std::move(precisions)});
}
// A case that runs the same at every precision.
void add(std::vector<CaseSpec>* out, const std::string& op, std::string shape, int64_t n,
         std::function<Result<BenchCase>()> build) {
  add(out, op, std::move(shape), n, {PrecisionUse{}}, std::move(build));
}

// --- matmul: the model's linear layers (B a prepacked weight) and attention's two GEMMs.
// Only a linear layer runs differently at bf16 and int8 (the cpu backend's reduced-precision
// GEMMs take a prepacked weight); attention's GEMMs multiply activations in f32 at any precision.
void matmul_cases(int64_t n, std::vector<CaseSpec>* out) {
  const std::vector<PrecisionUse> linear_precisions = {
      {Precision::f32, ""}, {Precision::bf16, ""}, {Precision::int8, ""}};
  struct Linear {
    int64_t out, in;
  };
  for (const Linear l : {Linear{3 * kD, kD}, Linear{4 * kD, kD}, Linear{kD, 4 * kD}, Linear{kD, kD}}) {
    const std::string shape = "x" + dims({n, l.in}) + "*W" + dims({l.out, l.in}) + "^T";
    add(out, "matmul", shape, n, linear_precisions, [n, l, shape]() -> Result<BenchCase> {
      CaseMaker m("matmul", shape, n);
      BufferPtr x = random_f32(n * l.in, 1), w = random_f32(l.out * l.in, 2, -0.05f, 0.05f);
      const ValueId xi = m.input("x", TensorDesc(DType::f32, {n, l.in}), x);
      const ValueId wi = m.weight("w", TensorDesc(DType::f32, {l.out, l.in}), w);
      const GemmProblem p{1, n, l.out, l.in, true, true, x, w};
      std::vector<PeerFactory> peers = gemm_peers(p);
      peers.push_back(int8_gemm_peer(x, w, n, l.out, l.in));
      peers.push_back(bf16_gemm_peer(x, w, n, l.out, l.in));
      return m.finish(m.b.matmul({xi, wi}, {.trans_b = true}), 2.0 * double(n * l.out * l.in),
                      kF * double(n * l.in + l.out * l.in + n * l.out), std::move(peers));
    });
  }
  const std::string qk = std::to_string(kHeads) + "x " + dims({n, kHd}) + "*" + dims({n, kHd}) + "^T";
  add(out, "matmul", qk, n, [n, qk]() -> Result<BenchCase> {
    CaseMaker m("matmul", qk, n);
    const TensorDesc d(DType::f32, {1, kHeads, n, kHd});
    BufferPtr q = random_f32(kHeads * n * kHd, 3), k = random_f32(kHeads * n * kHd, 4);
    const ValueId qi = m.input("q", d, q), ki = m.input("k", d, k);
    const GemmProblem p{kHeads, n, n, kHd, true, false, q, k};
    return m.finish(m.b.matmul({qi, ki}, {.trans_b = true}), 2.0 * double(kHeads * n * n * kHd),
                    kF * double(kHeads * (2 * n * kHd + n * n)), gemm_peers(p));
  });
  const std::string pv = std::to_string(kHeads) + "x " + dims({n, n}) + "*" + dims({n, kHd});
  add(out, "matmul", pv, n, [n, pv]() -> Result<BenchCase> {
    CaseMaker m("matmul", pv, n);
    BufferPtr p = random_f32(kHeads * n * n, 5, 0.0f, 1.0f), v = random_f32(kHeads * n * kHd, 6);
    const ValueId pi = m.input("p", TensorDesc(DType::f32, {1, kHeads, n, n}), p);
    const ValueId vi = m.input("v", TensorDesc(DType::f32, {1, kHeads, n, kHd}), v);
    const GemmProblem g{kHeads, n, kHd, n, false, false, p, v};
    return m.finish(m.b.matmul({pi, vi}), 2.0 * double(kHeads * n * n * kHd),
                    kF * double(kHeads * (n * n + 2 * n * kHd)), gemm_peers(g));
  });
}

// --- spectral: DCT-II / DCT-III / the Fourier filter along N of [N, D].
void dct_family(int64_t n, std::vector<CaseSpec>* out, bool inverse) {
  const std::string op = inverse ? "idct" : "dct";
  const std::string shape = dims({n, kD}) + " axis 0";
  add(out, op, shape, n, [n, op, shape, inverse]() -> Result<BenchCase> {
    CaseMaker m(op, shape, n);
    BufferPtr x = random_f32(n * kD, 7);
    const ValueId xi = m.input("x", TensorDesc(DType::f32, {n, kD}), x);
    const ValueId y = inverse ? m.b.idct({xi}, {.axis = 0}) : m.b.dct({xi}, {.axis = 0});
    const double bytes = kF * double(2 * n * kD);
    std::vector<PeerFactory> peers = dct_peers(DctProblem{n, kD, inverse, x});
    peers.push_back(memcpy_peer(bytes));
    return m.finish(y, double(kD) * fft_flops(n), bytes, std::move(peers));
  });
}
void dct_cases(int64_t n, std::vector<CaseSpec>* out) { dct_family(n, out, false); }
void idct_cases(int64_t n, std::vector<CaseSpec>* out) { dct_family(n, out, true); }

void spectral_filter_cases(int64_t n, std::vector<CaseSpec>* out) {
  const int64_t keep = ceil_frac(n, kSpectralRatio);
  const std::string shape = dims({n, kD}) + " axis 0 keep " + std::to_string(keep);
  add(out, "spectral_filter", shape, n, [n, keep, shape]() -> Result<BenchCase> {
    CaseMaker m("spectral_filter", shape, n);
    const ValueId xi = m.input("x", TensorDesc(DType::f32, {n, kD}), random_f32(n * kD, 8));
    return m.finish(m.b.spectral_filter({xi}, {.axis = 0, .keep = keep}),
                    double(kD) * (fft_flops(n) + fft_flops(keep)), kF * double((n + keep) * kD));
  });
}

// --- memory-bound ops on [N, D]: compared with memcpy of the same traffic, and with the same
// copy by ordinary vector stores (the ceiling of a kernel writing through the cache).
template <typename BuildOp>
void rowwise(std::vector<CaseSpec>* out, const std::string& op, int64_t n, std::string shape, int inputs,
             int64_t out_rows, BuildOp build_op) {
  add(out, op, shape, n, [=]() -> Result<BenchCase> {
    CaseMaker m(op, shape, n);
    std::vector<ValueId> in;
    for (int i = 0; i < inputs; ++i)
      in.push_back(
          m.input("x" + std::to_string(i), TensorDesc(DType::f32, {n, kD}), random_f32(n * kD, 9 + i)));
    const auto [y, extra_bytes] = build_op(m, in);
    const double bytes = kF * double((inputs * n + out_rows) * kD) + extra_bytes;
    return m.finish(y, 0.0, bytes, {memcpy_peer(bytes), store_copy_peer(bytes)});
  });
}
void softmax_cases(int64_t n, std::vector<CaseSpec>* out) {
  rowwise(out, "softmax", n, dims({n, kD}) + " axis -1", 1, n,
          [](CaseMaker& m, const std::vector<ValueId>& x) {
            return std::pair{m.b.softmax(x, {.axis = -1}), 0.0};
          });
}
void layer_norm_cases(int64_t n, std::vector<CaseSpec>* out) {
  rowwise(out, "layer_norm", n, dims({n, kD}), 1, n, [](CaseMaker& m, const std::vector<ValueId>& x) {
    const TensorDesc d(DType::f32, {kD});
    const ValueId g = m.weight("gamma", d, random_f32(kD, 20, 0.5f, 1.5f));
    const ValueId b = m.weight("beta", d, random_f32(kD, 21));
    return std::pair{m.b.layer_norm({x[0], g, b}, {.eps = 1e-5f}), kF * double(2 * kD)};
  });
}
void gelu_cases(int64_t n, std::vector<CaseSpec>* out) {
  rowwise(out, "gelu", n, dims({n, kD}), 1, n, [](CaseMaker& m, const std::vector<ValueId>& x) {
    return std::pair{m.b.gelu(x), 0.0};
  });
}
void add_cases(int64_t n, std::vector<CaseSpec>* out) {
  rowwise(out, "add", n, dims({n, kD}) + "+" + dims({n, kD}), 2, n,
          [](CaseMaker& m, const std::vector<ValueId>& x) {
            return std::pair{m.b.add(x), 0.0};
          });
}
void cummax_cases(int64_t n, std::vector<CaseSpec>* out) {
  rowwise(out, "cummax", n, dims({n, kD}) + " axis 0", 1, n, [](CaseMaker& m, const std::vector<ValueId>& x) {
    return std::pair{m.b.cummax(x, {.axis = 0}), 0.0};
  });
}
void cumsum_cases(int64_t n, std::vector<CaseSpec>* out) {
  rowwise(out, "cumsum", n, dims({n, kD}) + " axis 0", 1, n, [](CaseMaker& m, const std::vector<ValueId>& x) {
    return std::pair{m.b.cumsum(x, {.axis = 0}), 0.0};
  });
}
void segment_max_cases(int64_t n, std::vector<CaseSpec>* out) {
  // Segment sqrt(N): the Combiner's axial layout (rows of sqrt(N) positions).
  const int64_t seg = std::max<int64_t>(1, std::llround(std::sqrt(double(n))));
  const int64_t rows = (n + seg - 1) / seg;
  rowwise(out, "segment_max", n, dims({n, kD}) + " axis 0 seg " + std::to_string(seg), 1, rows,
          [seg](CaseMaker& m, const std::vector<ValueId>& x) {
            return std::pair{m.b.segment_max(x, {.axis = 0, .segment = seg}), 0.0};
          });
}

// --- attention: fused dense, and sparse with k = 5 % of N keys per query.
std::string heads_shape(int64_t n) {
  return "B1 H" + std::to_string(kHeads) + " N" + std::to_string(n) + " hd64";
}
constexpr float kScale = 0.125f;  // 1 / sqrt(hd)

void attention_cases(int64_t n, std::vector<CaseSpec>* out) {
  const std::string shape = heads_shape(n);
  add(out, "attention", shape, n, [n, shape]() -> Result<BenchCase> {
    CaseMaker m("attention", shape, n);
    const TensorDesc d(DType::f32, {1, kHeads, n, kHd});
    const ValueId q = m.input("q", d, random_f32(kHeads * n * kHd, 30)),
                  k = m.input("k", d, random_f32(kHeads * n * kHd, 31)),
                  v = m.input("v", d, random_f32(kHeads * n * kHd, 32));
    return m.finish(m.b.attention({q, k, v}, {.scale = kScale}), 4.0 * double(kHeads * n * n * kHd),
                    kF * double(4 * kHeads * n * kHd));
  });
}

// kk distinct random keys in [0, range) per query (range >= kk), in random order (as top-k
// selection would give).
BufferPtr random_indices(int64_t rows, int64_t range, int64_t kk, uint32_t seed) {
  auto buf = std::make_shared<HostBuffer>(size_t(rows * kk) * sizeof(int32_t));
  auto* idx = reinterpret_cast<int32_t*>(buf->data());
  std::vector<int64_t> seen(size_t(range), -1);  // row that last picked each key
  uint64_t s = seed;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < kk;) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;  // 64-bit LCG
      const int64_t key = int64_t((s >> 33) % uint64_t(range));
      if (seen[size_t(key)] == r) continue;
      seen[size_t(key)] = r;
      idx[r * kk + j++] = int32_t(key);
    }
  return buf;
}

// The f32 values of `buf` rounded to bf16 (f32_to_bf16), as a new buffer of `count` bf16.
BufferPtr to_bf16(const BufferPtr& buf, int64_t count) {
  auto out = std::make_shared<HostBuffer>(size_t(count) * sizeof(uint16_t));
  const auto* x = reinterpret_cast<const float*>(buf->data());
  auto* y = reinterpret_cast<uint16_t*>(out->data());
  for (int64_t i = 0; i < count; ++i) y[i] = f32_to_bf16(x[i]);
  return out;
}

// keys: the key rows the indices are drawn from (the first `keys`; n: all of them). kv: the
// dtype of K and V (f32 or bf16); the bf16 case's K and V are the f32 ones rounded, and its
// peer, dense f32 attention, reads those rounded values widened. A bf16 session rounds f32 K
// and V to bf16 before the gather (those rows' shape ends in "kv f32->bf16"); K and V given in
// bf16 run the same at every precision.
void sparse_attention_case(int64_t n, int64_t keys, DType kv, std::vector<CaseSpec>* out) {
  const int64_t kk = ceil_frac(n, kSparse);
  const std::string shape = heads_shape(n) + " k" + std::to_string(kk) +
                            (keys < n ? " keys<" + std::to_string(keys) : "") +
                            (kv == DType::bf16 ? " kv bf16" : "");
  std::vector<PrecisionUse> precisions{PrecisionUse{}};
  if (kv == DType::f32) precisions.push_back({Precision::bf16, " kv f32->bf16"});
  add(out, "sparse_attention", shape, n, precisions, [n, kk, keys, kv, shape]() -> Result<BenchCase> {
    if (keys < kk || keys > n)
      return invalid_argument("--sparse-keys " + std::to_string(keys) + ": " + shape + " needs " +
                              std::to_string(kk) + " .. " + std::to_string(n));
    CaseMaker m("sparse_attention", shape, n);
    const int64_t e = kHeads * n * kHd;
    const TensorDesc d(DType::f32, {1, kHeads, n, kHd}), dkv(kv, {1, kHeads, n, kHd});
    BufferPtr q = random_f32(e, 30), k = random_f32(e, 31), v = random_f32(e, 32);
    BufferPtr kin = k, vin = v;
    if (kv == DType::bf16) {
      kin = to_bf16(k, e);
      vin = to_bf16(v, e);
      auto widen = [e](const BufferPtr& b16) {
        auto f = std::make_shared<HostBuffer>(size_t(e) * sizeof(float));
        const auto* h = reinterpret_cast<const uint16_t*>(b16->data());
        auto* w = reinterpret_cast<float*>(f->data());
        for (int64_t i = 0; i < e; ++i) w[i] = bf16_to_f32(h[i]);
        return BufferPtr(f);
      };
      k = widen(kin);
      v = widen(vin);
    }
    const ValueId qi = m.input("q", d, q), ki = m.input("k", dkv, kin), vi = m.input("v", dkv, vin);
    const ValueId ii =
        m.input("idx", TensorDesc(DType::i32, {1, kHeads, n, kk}), random_indices(kHeads * n, keys, kk, 33));
    // The peer: dense f32 attention over the same q, k, v values on the same engine.
    GraphBuilder dense;
    const ValueId dq = dense.input("q", d), dk = dense.input("k", d), dv = dense.input("v", d);
    dense.output(dense.attention({dq, dk, dv}, {.scale = kScale}), "y");
    LR_ASSIGN_OR_RETURN(Graph dense_graph, dense.build());
    std::vector<PeerFactory> peers{graph_peer(
        "attention", std::move(dense_graph),
        {TensorView{d, q->data()}, TensorView{d, k->data()}, TensorView{d, v->data()}}, {q, k, v})};
    const double kv_bytes = double(dtype_size(kv));
    return m.finish(
        m.b.sparse_attention({qi, ki, vi, ii}, {.scale = kScale}), 4.0 * double(kHeads * n * kk * kHd),
        kF * double(2 * kHeads * n * kHd + kHeads * n * kk) + kv_bytes * double(2 * kHeads * n * kHd),
        std::move(peers));
  });
}
void sparse_attention_cases(int64_t n, std::vector<CaseSpec>* out) {
  for (DType kv : {DType::f32, DType::bf16}) sparse_attention_case(n, n, kv, out);
}

// The Combiner axial joint softmax at segment 128: both passes (direct keys of the row, then
// the column slots), and the column pass alone continuing a given direct state (the
// bidirectional model's form: the state is its row attention with_lse).
void axial_attention_cases(int64_t n, std::vector<CaseSpec>* out) {
  constexpr int64_t kSegment = 128;
  if (n % kSegment != 0) return;
  const int64_t rows = n / kSegment;
  for (const bool given : {false, true}) {
    const std::string shape = heads_shape(n) + " s" + std::to_string(kSegment) +
                              (given ? " cols (direct state given)" : " rows+cols");
    add(out, "axial_attention", shape, n, [n, rows, given, shape]() -> Result<BenchCase> {
      CaseMaker m("axial_attention", shape, n);
      const TensorDesc d(DType::f32, {1, kHeads, n, kHd});
      const int64_t e = kHeads * n * kHd;
      const ValueId q = m.input("q", d, random_f32(e, 30)), ks = m.input("ks", d, random_f32(e, 33)),
                    vs = m.input("vs", d, random_f32(e, 34));
      ValueId in1 = kNoValue, in2 = kNoValue;
      if (given) {
        in1 = m.input("y0", d, random_f32(e, 35));
        in2 = m.input("lse0", TensorDesc(DType::f32, {1, kHeads, n}), random_f32(kHeads * n, 36, 4.0f, 6.0f));
      } else {
        in1 = m.input("k", d, random_f32(e, 31));
        in2 = m.input("v", d, random_f32(e, 32));
      }
      const double slots = double(rows + (given ? 0 : kSegment));
      return m.finish(m.b.axial_attention({q, in1, in2, ks, vs},
                                          {.scale = kScale, .segment = kSegment, .has_direct_state = given}),
                      4.0 * double(kHeads * n) * slots * double(kHd), kF * double(6 * e));
    });
  }
}

// --- selection: top-k indices of every row of an [N, N] score matrix.
void topk_indices_cases(int64_t n, std::vector<CaseSpec>* out) {
  const int64_t k = ceil_frac(n, kSparse);
  const std::string shape = dims({n, n}) + " k " + std::to_string(k);
  add(out, "topk_indices", shape, n, [n, k, shape]() -> Result<BenchCase> {
    CaseMaker m("topk_indices", shape, n);
    BufferPtr x = random_f32(n * n, 40);
    const ValueId xi = m.input("x", TensorDesc(DType::f32, {n, n}), x);
    return m.finish(m.b.topk_indices({xi}, {.k = k, .axis = -1}), 0.0, kF * double(n * n + n * k),
                    {sort_topk_peer(x, n, n, k)});
  });
}

// --- selection: each row's top k of Q K^T / 8 for Q, K [N, 64] (Lasformer's selection scores),
// against the dense route on the same engine: the [N, N] product, then topk_indices.
void matmul_topk_cases(int64_t n, std::vector<CaseSpec>* out) {
  constexpr int64_t kDs = 64;
  const int64_t k = ceil_frac(n, kSparse);
  const std::string shape = dims({n, kDs}) + " k " + std::to_string(k);
  add(out, "matmul_topk", shape, n, [n, k, shape]() -> Result<BenchCase> {
    CaseMaker m("matmul_topk", shape, n);
    const TensorDesc d(DType::f32, {1, n, kDs});
    BufferPtr q = random_f32(n * kDs, 41), kb = random_f32(n * kDs, 42);
    const ValueId qi = m.input("q", d, q), ki = m.input("k", d, kb);
    constexpr float kAlpha = 0.125f;  // 1 / sqrt(64)
    GraphBuilder dense;
    const ValueId dq = dense.input("q", d), dk = dense.input("k", d);
    const ValueId scores = dense.matmul({dq, dk}, {.trans_b = true, .alpha = kAlpha});
    dense.output(dense.topk_indices({scores}, {.k = k, .axis = -1}), "y");
    LR_ASSIGN_OR_RETURN(Graph dense_graph, dense.build());
    std::vector<PeerFactory> peers{graph_peer("matmul+topk_indices", std::move(dense_graph),
                                              {TensorView{d, q->data()}, TensorView{d, kb->data()}},
                                              {q, kb})};
    return m.finish(m.b.matmul_topk({qi, ki}, {.k = k, .alpha = kAlpha}), 2.0 * double(n * n * kDs),
                    kF * double(2 * n * kDs + n * k), std::move(peers));
  });
}

struct Family {
  OpKind op;
  // Default N. The elementwise and row ops also run at N = 32768 (64 MiB per [N, 512]
  // tensor): at 4096 every operand fits a 32 MiB L3, so their memcpy peer runs at L3 speed;
  // at 32768 it runs at DRAM speed, the bound a bandwidth target is meant against.
  std::vector<int64_t> sizes;
  int64_t quick;  // N under --quick
  Adder add;
  const char* what;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {OpKind::matmul,
       {128, 512, 1024, 4096},
       128,
       matmul_cases,
       "x[N,512]*W^T for W [1536,512], [2048,512], [512,2048], [512,512] (prepacked weight; "
       "precision f32, bf16, int8; peers also the int8 and bf16 GEMM kernels alone); 8 heads of "
       "[N,64]*[N,64]^T and [N,N]*[N,64] (f32 only); peers openblas, onednn"},
      {OpKind::add, {4096, 32768}, 4096, add_cases, "[N,512]+[N,512]; peers memcpy, store_copy"},
      {OpKind::gelu, {4096, 32768}, 4096, gelu_cases, "[N,512]; peers memcpy, store_copy"},
      {OpKind::softmax,
       {4096, 32768},
       4096,
       softmax_cases,
       "[N,512] along the last axis; peers memcpy, store_copy"},
      {OpKind::layer_norm,
       {4096, 32768},
       4096,
       layer_norm_cases,
       "[N,512] (gamma, beta weights); peers memcpy, store_copy"},
      {OpKind::dct, {512, 1024, 2048, 4096}, 512, dct_cases, "DCT-II along N of [N,512]; peers fftw, memcpy"},
      {OpKind::idct,
       {512, 1024, 2048, 4096},
       512,
       idct_cases,
       "DCT-III along N of [N,512]; peers fftw, memcpy"},
      {OpKind::spectral_filter,
       {512, 1024, 2048, 4096},
       512,
       spectral_filter_cases,
       "[N,512] along N, keep ceil(0.2 N)"},
      {OpKind::topk_indices, {4096}, 1024, topk_indices_cases, "[N,N], k = ceil(0.05 N); peer std::sort"},
      {OpKind::matmul_topk,
       {4096, 16384},
       1024,
       matmul_topk_cases,
       "[N,64]x[N,64]^T, k = ceil(0.05 N); peer the dense matmul + topk_indices graph"},
      {OpKind::cummax, {4096}, 4096, cummax_cases, "[N,512] along N; peers memcpy, store_copy"},
      {OpKind::cumsum, {4096}, 4096, cumsum_cases, "[N,512] along N; peers memcpy, store_copy"},
      {OpKind::segment_max,
       {4096},
       4096,
       segment_max_cases,
       "[N,512] along N, segment round(sqrt N); peers memcpy, store_copy"},
      {OpKind::attention, {4096}, 1024, attention_cases, "fused, 8 heads, hd 64, q = k = v length N"},
      {OpKind::sparse_attention,
       {4096},
       1024,
       sparse_attention_cases,
       "8 heads, hd 64, k = ceil(0.05 N) random keys per query, K/V f32 (precision f32, bf16: "
       "the session rounds K/V, shape kv f32->bf16) and bf16 (f32 only); peer attention "
       "(dense f32, same values)"},
      {OpKind::axial_attention,
       {8192},
       1024,
       axial_attention_cases,
       "8 heads, hd 64, segment 128: both passes, and the column pass on a given direct state"},
  };
  return f;
}

const Family* family_of(OpKind op) {
  for (const Family& f : families())
    if (f.op == op) return &f;
  return nullptr;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

std::vector<std::string> bench_ops() {
  std::vector<std::string> ops;
  for (int i = 0; i < kNumOps; ++i)
    if (family_of(OpKind(i))) ops.emplace_back(op_name(OpKind(i)));
  return ops;
}

std::vector<std::string> describe_cases() {
  std::vector<std::string> lines;
  for (int i = 0; i < kNumOps; ++i)
    if (const Family* f = family_of(OpKind(i)))
      lines.push_back(std::string(op_name(f->op)) + " (N " + join(f->sizes) + "; --quick " +
                      std::to_string(f->quick) + "): " + f->what);
  return lines;
}

std::vector<CaseSpec> select_cases(const CaseSelection& sel) {
  std::vector<CaseSpec> specs;
  for (int i = 0; i < kNumOps; ++i) {
    const Family* f = family_of(OpKind(i));
    if (!f) continue;
    const std::string name(op_name(f->op));
    if (!sel.ops.empty() && std::find(sel.ops.begin(), sel.ops.end(), name) == sel.ops.end()) continue;
    const std::vector<int64_t> ns = !sel.ns.empty() ? sel.ns
                                    : sel.quick     ? std::vector<int64_t>{f->quick}
                                                    : f->sizes;
    for (int64_t n : ns) {
      if (f->op == OpKind::sparse_attention && sel.sparse_keys > 0)
        for (DType kv : {DType::f32, DType::bf16}) sparse_attention_case(n, sel.sparse_keys, kv, &specs);
      else
        f->add(n, &specs);
    }
  }
  if (!sel.shape.empty())
    std::erase_if(specs, [&](const CaseSpec& c) { return c.shape.find(sel.shape) == std::string::npos; });
  return specs;
}

}  // namespace longrun::bench
