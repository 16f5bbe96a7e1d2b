// Glue of the cpu spectral kernels (dct.h): layout, blocking, prepare steps, the per-block
// pipeline, the unpaired path for non-finite inputs and threading. The DFTs and the filter
// matrix are in dct_fft.cpp, the vector loops in dct_avx2.cpp / dct_avx512.cpp.
#include "cpu/dct.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <numbers>
#include <span>
#include <thread>
#include <vector>

namespace longrun::cpu {
namespace {

using dct_detail::DctLoops;

enum class SpectralOp { dct2, dct3, filter };

// Blocking. Reading or writing a column block of a [N, D] row-major tensor runs at memcpy
// speed only when each row segment is >= 128-256 bytes (shorter segments waste most of each
// cache line and DRAM burst), so a block spans up to kBlockBytes of sequences (64 columns at
// N = 4096), while FFTW and the twiddle loops work on sub-blocks of up to kSubBytes that
// stay in L2 with their output buffer.
constexpr int64_t kBlockBytes = 1024 * 1024;
constexpr int64_t kSubBytes = 256 * 1024;
constexpr int64_t kMinPairs = 8, kMaxPairs = 128;  // one 8 x 8 transpose tile .. FFTW's loop overhead paid
// Below this many columns per outer index (but more than one: the axis-last case reads
// lines directly) the columns of [outer, inner] are flattened and go through staging rows.
constexpr int64_t kGenericBelow = 16;
// The filter's forward half takes the column route up to this length (see make_state).
constexpr int64_t kFilterColumnsUpTo = 8192;

// ---- state -------------------------------------------------------------------------------

struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using FloatBuffer = std::unique_ptr<float[], AlignedFree>;

Result<FloatBuffer> alloc_floats(int64_t n) {
  if (n <= 0) return FloatBuffer();
  LR_RETURN_IF_ERROR(host::reserve_workspace_bytes(n * int64_t(sizeof(float))));  // when preparing
  void* p = ::operator new[](size_t(n) * sizeof(float), std::align_val_t{64}, std::nothrow);
  if (p == nullptr)
    return out_of_memory("dct: cannot allocate " + std::to_string(n * 4) + " bytes of scratch");
  return FloatBuffer(static_cast<float*>(p));
}

// Per parallel chunk: the block's sequences (`block / 2` x `ld` complex), the FFT output of
// one sub-block, the DFTs' work space and, for flattened columns only, the staging rows of
// input and output.
struct Scratch {
  FloatBuffer a, w, work, stage_in, stage_out;
  FloatBuffer columns;  // the filter's forward half on the column route: its FFT buffers
};

struct SpectralState {
  SpectralOp op = SpectralOp::dct2;
  OpAttrs attrs;
  TensorDesc in_desc, out_desc;  // the shapes this state was made for
  int64_t outer = 0, inner = 0, n_in = 0, n_out = 0;
  int64_t n = 0;          // forward (DCT-II) length
  int64_t m = 0;          // inverse (DCT-III) length
  int64_t keep = 0;       // DCT-II coefficients computed
  int64_t used = 0;       // DCT-III input coefficients used (the rest are zero)
  int64_t ld = 0;         // sequence stride in complex values: max(n, m) rounded to 8, plus 8
  bool lines = false;     // inner == 1: the columns are contiguous lines
  bool generic = false;   // 1 < inner < kGenericBelow: columns gathered through staging rows
  int64_t block = 0;      // columns per full block (even)
  int64_t sub_pairs = 0;  // sequences per FFT sub-block
  int64_t blocks_per_outer = 0, units = 0, cols = 0;
  std::shared_ptr<const dct_detail::SequenceDft> fwd, bwd;  // length n (forward), m (backward)
  std::vector<float> ca2, sb2, tw2;
  bool use_matrix = false;
  std::shared_ptr<const std::vector<float>> matrix;       // R [m x n]; transposed [n x m] when inner == 1
  std::shared_ptr<const dct_detail::ColumnPlan> columns;  // the column route (power-of-two lengths)
  // One scratch per thread of the pool that runs a call at a time (runs of one prepared graph
  // are serialised), each taken by one chunk at a time: busy[i] while scratch[i] is taken.
  mutable std::vector<Scratch> scratch;
  std::unique_ptr<std::atomic<bool>[]> busy;
};

// Scratch slots for `threads` threads over `units` units (at least one).
int64_t scratch_slots(int64_t units, int threads) {
  return threads <= 1 ? 1 : std::max<int64_t>(1, std::min<int64_t>(units, threads));
}
void size_scratch(SpectralState* st, int64_t slots) {
  st->scratch.resize(size_t(slots));
  st->busy = std::make_unique<std::atomic<bool>[]>(size_t(slots));
}

int64_t round_even(int64_t v) { return v + (v & 1); }

// The filter's route, from a cost model fitted to per-column times of both routes on
// [N, 512] (AVX-512, one thread; N = 32..1024, M = 4..256): the FFT route costs about
// kFftPerPoint * (w(n) + w(m)) + kFftPerRow * (n + m) + kFftFixed ns per column, with
// w(L) = L log2 L for lengths FFTW runs directly and 4 L2 log2 L2 + 8 L2 for Bluestein's
// two length-L2 FFTs and three chirp passes; the matrix product about m n / kMatrixPerNs ns
// (2mn flops at ~50 GFLOP/s). The choice depends only on (n, m): deterministic.
constexpr double kFftPerPoint = 0.05, kFftPerRow = 0.5, kFftFixed = 20.0, kMatrixPerNs = 25.0;

double fft_work(int64_t len) {
  const int64_t l2 = dct_detail::bluestein_length(len);
  if (l2 == 0) return double(len) * std::log2(double(len) + 1);
  return 4.0 * double(l2) * std::log2(double(l2)) + 8.0 * double(l2);
}

bool matrix_is_cheaper(int64_t n, int64_t m) {
  const double fft = kFftPerPoint * (fft_work(n) + fft_work(m)) + kFftPerRow * double(n + m) + kFftFixed;
  return double(m) * double(n) / kMatrixPerNs < fft;
}

// ---- prepare ------------------------------------------------------------------------------

int axis_attr(SpectralOp op, const OpAttrs& a) {
  switch (op) {
    case SpectralOp::dct2: return std::get<DctAttrs>(a).axis;
    case SpectralOp::dct3: return std::get<IdctAttrs>(a).axis;
    case SpectralOp::filter: return std::get<SpectralFilterAttrs>(a).axis;
  }
  return 0;
}

OpKind kind_of(SpectralOp op) {
  return op == SpectralOp::dct2   ? OpKind::dct
         : op == SpectralOp::dct3 ? OpKind::idct
                                  : OpKind::spectral_filter;
}

// Tables in double, rounded once. DCT-II: X_k = c_k Re(e^{-i pi k/2n} V_k) with V the FFT of
// the shuffled column, and V_k = (Z_k + conj Z_{n-k})/2 for the paired columns; the 1/2 is
// folded in: ca = c_k/2 cos, sb = c_k/2 sin. DCT-III: the pre-twiddle of docs/models.md#spectral-filter with
// the 1/m of the inverse FFT and the ortho scale folded into h_k = 1/sqrt(m) (k = 0),
// 1/sqrt(2m) (k >= 1).
void build_tables(SpectralState& st) {
  // Per complex slot (both floats of slot k hold the constant of k): the loops run along k.
  for (int64_t k = 0; k < st.keep; ++k) {
    const double c = (k == 0 ? std::sqrt(1.0 / double(st.n)) : std::sqrt(2.0 / double(st.n))) / 2;
    const double a = std::numbers::pi * double(k) / double(2 * st.n);
    st.ca2.insert(st.ca2.end(), 2, float(c * std::cos(a)));
    st.sb2.insert(st.sb2.end(), 2, float(c * std::sin(a)));
  }
  const double h = 1.0 / std::sqrt(2.0 * double(st.m));
  st.tw2.assign(size_t(8 * st.m), 0.0f);
  for (int64_t k = 0; k < st.m; ++k) {
    const double hk = k == 0 ? 1.0 / std::sqrt(double(st.m)) : h;
    const double a = std::numbers::pi * double(k) / double(2 * st.m);
    const double v[4] = {hk * std::cos(a), hk * std::sin(a), h * std::cos(a), h * std::sin(a)};
    for (int t = 0; t < 4; ++t)
      st.tw2[size_t(t * 2 * st.m + 2 * k)] = st.tw2[size_t(t * 2 * st.m + 2 * k + 1)] = float(v[t]);
  }
}

Result<std::shared_ptr<SpectralState>> make_state(SpectralOp op, const OpAttrs& attrs, const TensorDesc& in,
                                                  const TensorDesc& out, int threads) {
  std::vector<TensorDesc> inferred;
  LR_RETURN_IF_ERROR(infer_op(kind_of(op), attrs, std::span<const TensorDesc>(&in, 1), &inferred));
  if (inferred.size() != 1 || !inferred[0].same_shape(out))
    return invalid_argument(std::string(op_name(kind_of(op))) + ": output is " + out.to_string() +
                            ", expected " + inferred[0].to_string());
  auto st = std::make_shared<SpectralState>();
  st->op = op;
  st->attrs = attrs;
  st->in_desc = in;
  st->out_desc = out;
  const int axis = in.normalize_axis(axis_attr(op, attrs));
  st->outer = 1;
  st->inner = 1;
  for (int i = 0; i < axis; ++i) st->outer *= in.dim(i);
  for (int i = axis + 1; i < in.rank(); ++i) st->inner *= in.dim(i);
  st->n_in = in.dim(axis);
  st->n_out = out.dim(axis);
  st->cols = st->outer * st->inner;
  switch (op) {
    case SpectralOp::dct2: st->n = st->n_in, st->keep = st->n_out; break;
    case SpectralOp::dct3: st->m = st->n_out, st->used = std::min(st->n_in, st->m); break;
    case SpectralOp::filter: st->n = st->n_in, st->m = st->keep = st->used = st->n_out; break;
  }
  if (st->cols == 0 || (op == SpectralOp::dct3 && st->used == 0)) return st;  // empty or all zeros
  if (op == SpectralOp::filter) {
    const auto method = std::get<SpectralFilterAttrs>(attrs).method;
    st->use_matrix = method == SpectralMethod::matrix ||
                     (method == SpectralMethod::automatic && matrix_is_cheaper(st->n, st->m));
    if (st->use_matrix) {
      st->matrix = dct_detail::filter_matrix(st->n, st->m, st->inner == 1);
      return st;
    }
  }
  st->lines = st->inner == 1;
  st->generic = !st->lines && st->inner < kGenericBelow;
  const int64_t length = op == SpectralOp::dct3 ? st->m : st->n;
  const bool column_route = !st->lines && !st->generic && dct_detail::column_route_fits(length);
  if (column_route && op != SpectralOp::filter) {
    st->columns = dct_detail::make_column_plan(op == SpectralOp::dct3, length,
                                               op == SpectralOp::dct3 ? st->used : st->n, st->n_out);
    st->block = std::min(dct_detail::column_plan_width(length), st->inner);
    st->blocks_per_outer = (st->inner + st->block - 1) / st->block;
    st->units = st->outer * st->blocks_per_outer;
    size_scratch(st.get(), scratch_slots(st->units, threads));
    for (Scratch& s : st->scratch) {
      LR_ASSIGN_OR_RETURN(s.a, alloc_floats(dct_detail::column_work_floats(*st->columns, st->block)));
    }
    return st;
  }
  // The filter's forward half on the column route (into staging rows of m coefficients):
  // the sequences below then serve only its m-point inverse. Up to n = 8192, where the
  // column route's pieces are 64 columns wide (column_block_width) and so read the input
  // rows in segments as long as the sequence route's paired blocks do.
  if (column_route && st->n <= kFilterColumnsUpTo)
    st->columns = dct_detail::make_column_plan(false, st->n, st->n, st->m);
  const int64_t fwd_len = st->columns ? 0 : st->n;
  // Block and sub-block widths (in pairs of columns), see kBlockBytes.
  // Sequences 64 bytes apart modulo 4 KB: power-of-two strides would put every sequence of
  // a block in the same L1 set.
  st->ld = (std::max(fwd_len, st->m) + 7) / 8 * 8 + 8;
  // Blocks are sized from n even when the forward half runs on the column route: its reads of
  // the input rows want the same wide blocks.
  const int64_t len = std::max(st->n, st->m);  // sizes from the unpadded length: 64 columns at 4096
  // A sub-block's working set: its FFT input and output, and Bluestein's two buffers.
  const int64_t sub_len =
      std::max({len, dct_detail::bluestein_length(fwd_len), dct_detail::bluestein_length(st->m)});
  auto pairs_within = [&](int64_t bytes, int64_t per_pair) {
    return std::clamp<int64_t>(bytes / per_pair / kMinPairs * kMinPairs, kMinPairs, kMaxPairs);
  };
  int64_t block_pairs = pairs_within(kBlockBytes, 8 * len);
  // (Sub-blocks need not fill a transpose tile: Bluestein's long buffers may take fewer.)
  st->sub_pairs = std::clamp<int64_t>(kSubBytes / (8 * sub_len), 1, block_pairs);
  if (st->generic) {  // the staging rows take the room of the block's own reads
    const int64_t stage = 8 * ((op == SpectralOp::dct3 ? st->used : st->n_in) + st->n_out);
    block_pairs = st->sub_pairs = pairs_within(kBlockBytes, 16 * sub_len + stage);
  }
  int64_t tail = 0;
  if (st->generic || st->lines) {
    st->block = std::min(2 * block_pairs, round_even(st->cols));
    st->units = (st->cols + st->block - 1) / st->block;
    tail = st->cols - (st->units - 1) * st->block;
  } else {
    st->block = std::min(2 * block_pairs, round_even(st->inner));
    st->blocks_per_outer = (st->inner + st->block - 1) / st->block;
    st->units = st->outer * st->blocks_per_outer;
    tail = st->inner - (st->blocks_per_outer - 1) * st->block;
  }
  st->sub_pairs = std::min(st->sub_pairs, st->block / 2);
  // The sub-block sizes that occur: full ones, and the remainders of full and tail blocks.
  std::vector<int64_t> sizes;
  for (int64_t pairs : {st->sub_pairs, (st->block / 2) % st->sub_pairs, ((tail + 1) / 2) % st->sub_pairs})
    if (pairs > 0 && std::find(sizes.begin(), sizes.end(), pairs) == sizes.end()) sizes.push_back(pairs);
  if (st->n > 0 && !st->columns) {
    LR_ASSIGN_OR_RETURN(st->fwd, dct_detail::make_sequence_dft(st->n, -1, st->ld, sizes));
  }
  if (st->m > 0) {
    LR_ASSIGN_OR_RETURN(st->bwd, dct_detail::make_sequence_dft(st->m, +1, st->ld, sizes));
  }
  build_tables(*st);
  size_scratch(st.get(), scratch_slots(st->units, threads));
  const int64_t b = st->block;
  for (Scratch& s : st->scratch) {
    LR_ASSIGN_OR_RETURN(s.a, alloc_floats(b * st->ld));
    LR_ASSIGN_OR_RETURN(s.w, alloc_floats(2 * st->sub_pairs * st->ld));
    int64_t work = 0;
    for (const auto& dft : {st->fwd, st->bwd})
      if (dft) work = std::max(work, dct_detail::sequence_dft_work_floats(*dft, st->sub_pairs));
    LR_ASSIGN_OR_RETURN(s.work, alloc_floats(work));
    if (st->generic) {
      LR_ASSIGN_OR_RETURN(s.stage_in, alloc_floats(st->n_in * b));
      LR_ASSIGN_OR_RETURN(s.stage_out, alloc_floats(st->n_out * b));
    }
    if (st->columns) {
      LR_ASSIGN_OR_RETURN(s.stage_in, alloc_floats(st->m * b));
      LR_ASSIGN_OR_RETURN(s.columns, alloc_floats(dct_detail::column_work_floats(
                                         *st->columns, dct_detail::column_block_width(st->n))));
    }
  }
  return st;
}

Result<std::shared_ptr<void>> prepare_for(SpectralOp op, const Graph& graph, const Node& node,
                                          ThreadPool* pool) {
  if (node.inputs.size() != 1 || node.outputs.size() != 1)
    return invalid_argument(std::string(op_name(kind_of(op))) + ": expected one input and one output");
  const TensorDesc& in = graph.value(node.inputs[0]).desc;
  const TensorDesc& out = graph.value(node.outputs[0]).desc;
  if (in.dtype() != DType::f32 || out.dtype() != DType::f32) return std::shared_ptr<void>();  // reference
  LR_ASSIGN_OR_RETURN(auto st, make_state(op, node.attrs, in, out, pool ? pool->num_threads() : 1));
  return std::shared_ptr<void>(std::move(st));
}

// ---- running ------------------------------------------------------------------------------

// Row j of the shuffled column comes from row perm(j): v[j] = x[2j], v[n-1-j] = x[2j+1].
int64_t shuffled_row(int64_t j, int64_t n) { return j < (n + 1) / 2 ? 2 * j : 2 * (n - 1 - j) + 1; }

// One block of columns: `width` columns of input rows `in` (row stride `is`) to output rows
// `out`; ceil(width / 2) complex sequences.
struct Block {
  const float* in;  // element (row r, column c) at in[r * is + c * ics]
  int64_t is, ics;
  float* out;  // likewise with os, ocs
  int64_t os, ocs;
  int64_t width, pairs;
};

class Runner {
 public:
  Runner(const SpectralState& st, const DctLoops& loops, const float* x, float* y)
      : st_(st), l_(loops), x_(x), y_(y) {}

  void run_unit(int64_t u, Scratch& s) const {
    SpectralOp op = st_.op;  // the filter's inverse half alone runs as dct3 below
    Block b{};
    b.ics = b.ocs = 1;
    int64_t c0 = 0;
    if (st_.lines) {
      c0 = u * st_.block;
      b.width = std::min(st_.block, st_.cols - c0);
      b.in = x_ + c0 * st_.n_in;
      b.out = y_ + c0 * st_.n_out;
      b.is = b.os = 1;
      b.ics = st_.n_in;
      b.ocs = st_.n_out;
    } else if (!st_.generic) {
      const int64_t o = u / st_.blocks_per_outer;
      c0 = (u % st_.blocks_per_outer) * st_.block;
      b.width = std::min(st_.block, st_.inner - c0);
      b.in = x_ + o * st_.n_in * st_.inner + c0;
      b.out = y_ + o * st_.n_out * st_.inner + c0;
      b.is = b.os = st_.inner;
      if (st_.columns && st_.op != SpectralOp::filter) {  // no pairing, no sequences: all done here
        l_.columns(*st_.columns, b.in, b.is, b.out, b.os, b.width, s.a.get());
        return;
      }
      if (st_.columns) {  // the filter's first m coefficients into staging rows, then the inverse
        const int64_t step = dct_detail::column_block_width(st_.n);
        for (int64_t c = 0; c < b.width; c += step)
          l_.columns(*st_.columns, b.in + c, b.is, s.stage_in.get() + c, st_.block,
                     std::min(step, b.width - c), s.columns.get());
        b.in = s.stage_in.get();
        b.is = st_.block;
        op = SpectralOp::dct3;
      }
    } else {
      c0 = u * st_.block;
      b.width = std::min(st_.block, st_.cols - c0);
      gather_columns(c0, b.width, s.stage_in.get());
      b.in = s.stage_in.get();
      b.out = s.stage_out.get();
      b.is = b.os = st_.block;
    }
    b.pairs = (b.width + 1) / 2;
    // Paired columns share one FFT, so an Inf or NaN would leak into the partner column:
    // such (rare) blocks run twice, once per column of each pair, the partner read as zero.
    if (!transform(op, b, s, -1)) {
      transform(op, b, s, 0);
      transform(op, b, s, 1);
    }
    if (st_.generic) scatter_columns(s.stage_out.get(), c0, b.width);
  }

  // Matrix route of the filter: Y = R X per outer index, or Y^T = X^T R^T for rows (inner 1).
  int64_t matrix_units() const {
    return st_.inner == 1 ? (st_.outer + kRowsPerUnit - 1) / kRowsPerUnit
                          : st_.outer * ((st_.inner + kColsPerUnit - 1) / kColsPerUnit);
  }
  void run_matrix_unit(int64_t u) const {
    const float* r = st_.matrix->data();
    const int64_t n = st_.n, m = st_.m;
    if (st_.inner == 1) {
      const int64_t r0 = u * kRowsPerUnit, rows = std::min(kRowsPerUnit, st_.outer - r0);
      l_.gemm(rows, m, n, x_ + r0 * n, n, r, m, y_ + r0 * m, m);
      return;
    }
    const int64_t per = (st_.inner + kColsPerUnit - 1) / kColsPerUnit;
    const int64_t o = u / per, c0 = (u % per) * kColsPerUnit, w = std::min(kColsPerUnit, st_.inner - c0);
    l_.gemm(m, w, n, r, n, x_ + o * n * st_.inner + c0, st_.inner, y_ + o * m * st_.inner + c0, st_.inner);
  }

 private:
  static constexpr int64_t kRowsPerUnit = 64, kColsPerUnit = 256;

  // The pipeline on one block: its sequences in s.a, each sub-block's FFT out of place
  // through s.w and back. lane < 0: both columns of every pair; returns false, having
  // written nothing, when the input is not finite. lane 0 / 1: only the even / odd columns
  // (the partner read as 0).
  bool transform(SpectralOp op, const Block& b, Scratch& s, int lane) const {
    const int64_t ld = st_.ld;
    const bool shuffled_in = op != SpectralOp::dct3;
    const int64_t rows_in = shuffled_in ? st_.n : st_.used;
    if (lane < 0) {
      const bool finite = st_.lines
                              ? l_.lines_to_seq(b.in, b.ics, b.width, rows_in, shuffled_in, s.a.get(), ld)
                              : l_.rows_to_seq(b.in, b.is, rows_in, shuffled_in, b.width, s.a.get(), ld);
      if (!finite) return false;
    } else {
      masked_rows_to_seq(b, rows_in, shuffled_in, lane, s.a.get());
    }
    for (int64_t q0 = 0; q0 < b.pairs; q0 += st_.sub_pairs)
      transform_sub(op, s.a.get() + 2 * q0 * ld, s.w.get(), s.work.get(),
                    std::min(st_.sub_pairs, b.pairs - q0));
    const bool shuffled_out = op != SpectralOp::dct2;
    const int64_t rows_out = op == SpectralOp::dct2 ? st_.keep : st_.m;
    if (lane < 0 && st_.lines)
      l_.seq_to_lines(s.a.get(), ld, rows_out, shuffled_out, b.width, b.out, b.ocs);
    else if (lane < 0)
      l_.seq_to_rows(s.a.get(), ld, rows_out, shuffled_out, b.width, b.out, b.os);
    else
      masked_seq_to_rows(s.a.get(), b, rows_out, shuffled_out, lane);
    return true;
  }

  // FFT, twiddles and (filter) inverse of `pairs` sequences at `a`, in place via `w`.
  void transform_sub(SpectralOp op, float* a, float* w, float* work, int64_t pairs) const {
    const int64_t ld = st_.ld;
    if (op == SpectralOp::dct3) {
      for (int64_t p = 0; p < pairs; ++p)  // zero-padding to m
        std::fill(a + 2 * (p * ld + st_.used), a + 2 * (p * ld + st_.m), 0.0f);
      l_.dct3_pre(a, ld, pairs, st_.m, st_.tw2.data(), w);
      dct_detail::run_sequence_dft(*st_.bwd, l_, w, a, pairs, work);
      return;
    }
    dct_detail::run_sequence_dft(*st_.fwd, l_, a, w, pairs, work);
    l_.dct2_post(w, ld, pairs, st_.n, st_.keep, st_.ca2.data(), st_.sb2.data(), a);
    if (op == SpectralOp::filter) {  // the m-point inverse of the first m coefficients
      l_.dct3_pre(a, ld, pairs, st_.m, st_.tw2.data(), w);
      dct_detail::run_sequence_dft(*st_.bwd, l_, w, a, pairs, work);
    }
  }

  // Scalar copies of the unpaired path: only columns of parity `lane` (the other read as 0,
  // or left unwritten).
  void masked_rows_to_seq(const Block& b, int64_t rows, bool shuffled, int lane, float* seq) const {
    for (int64_t p = 0; p < b.pairs; ++p)
      for (int64_t j = 0; j < rows; ++j) {
        const int64_t c = 2 * p + lane;
        const float v = c < b.width ? b.in[(shuffled ? shuffled_row(j, rows) : j) * b.is + c * b.ics] : 0.0f;
        seq[2 * (p * st_.ld + j)] = lane == 0 ? v : 0.0f;
        seq[2 * (p * st_.ld + j) + 1] = lane == 1 ? v : 0.0f;
      }
  }
  void masked_seq_to_rows(const float* seq, const Block& b, int64_t rows, bool shuffled, int lane) const {
    for (int64_t p = 0; p < b.pairs; ++p)
      for (int64_t j = 0; j < rows; ++j) {
        const int64_t c = 2 * p + lane;
        if (c < b.width)
          b.out[(shuffled ? shuffled_row(j, rows) : j) * b.os + c * b.ocs] = seq[2 * (p * st_.ld + j) + lane];
      }
  }

  // Flattened columns g = o * inner + i (small inner): copy through the staging buffers.
  void gather_columns(int64_t c0, int64_t width, float* stage) const {
    const int64_t rows = st_.op == SpectralOp::dct3 ? st_.used : st_.n_in, ld = st_.block;
    for (int64_t c = 0; c < width; ++c) {
      const int64_t g = c0 + c, o = g / st_.inner, i = g % st_.inner;
      const float* src = x_ + o * st_.n_in * st_.inner + i;
      for (int64_t r = 0; r < rows; ++r) stage[r * ld + c] = src[r * st_.inner];
    }
  }
  void scatter_columns(const float* stage, int64_t c0, int64_t width) const {
    for (int64_t c = 0; c < width; ++c) {
      const int64_t g = c0 + c, o = g / st_.inner, i = g % st_.inner;
      float* dst = y_ + o * st_.n_out * st_.inner + i;
      for (int64_t r = 0; r < st_.n_out; ++r) dst[r * st_.inner] = stage[r * st_.block + c];
    }
  }

  const SpectralState& st_;
  const DctLoops& l_;
  const float* x_;
  float* y_;
};

// Takes a free slot (busy[s] false), first trying the one this thread took last, so that a
// thread keeps reusing the scratch in its own L2.
int64_t take_slot(std::span<std::atomic<bool>> busy) {
  thread_local int64_t last = 0;
  const auto slots = int64_t(busy.size());
  for (;;) {
    for (int64_t i = 0; i < slots; ++i) {
      const int64_t s = (last + i) % slots;
      bool free = false;
      if (!busy[s].load(std::memory_order_relaxed) &&
          busy[s].compare_exchange_strong(free, true, std::memory_order_acquire)) {
        last = s;
        return s;
      }
    }
    std::this_thread::yield();  // a pool with more threads than the state was prepared for
  }
}

// Runs fn(unit, slot) over [0, units): serially on slot 0, or in the pool's chunks, any
// thread taking any chunk, each chunk on a scratch slot that no running chunk holds (busy:
// one flag per slot; empty: no scratch, slot 0). A late worker (one still waking up) then takes
// fewer units instead of a fixed share. Every unit's result depends only on its own data,
// not on its slot or thread, so outputs are bitwise-identical for any thread count.
template <typename Fn>
void for_each_unit(ThreadPool* pool, int64_t units, std::span<std::atomic<bool>> busy, const Fn& fn) {
  if (pool == nullptr || pool->num_threads() <= 1 || units <= 1) {
    for (int64_t u = 0; u < units; ++u) fn(u, int64_t(0));
    return;
  }
  pool->parallel_for(units, 1, [&](int64_t begin, int64_t end) {
    const int64_t slot = busy.empty() ? 0 : take_slot(busy);
    for (int64_t u = begin; u < end; ++u) fn(u, slot);
    if (!busy.empty()) busy[size_t(slot)].store(false, std::memory_order_release);
  });
}

KernelFn reference_for(SpectralOp op) {
  return op == SpectralOp::dct2   ? &reference_dct
         : op == SpectralOp::dct3 ? &reference_idct
                                  : &reference_spectral_filter;
}

Status run_spectral(const KernelArgs& args, SpectralOp op, const DctLoops& loops) {
  if (args.attrs == nullptr || args.inputs.size() != 1 || args.outputs.size() != 1)
    return invalid_argument(std::string(op_name(kind_of(op))) +
                            ": expected attributes, one input, one output");
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  if (x.desc.dtype() != DType::f32 || y.desc.dtype() != DType::f32 || !x.desc.is_contiguous() ||
      !y.desc.is_contiguous())
    return reference_for(op)(args);
  const auto* st = static_cast<const SpectralState*>(args.prepared);
  std::shared_ptr<SpectralState> own;  // no (matching) prepare step: plan now
  if (st == nullptr || st->op != op || !(st->attrs == *args.attrs) || !st->in_desc.same_shape(x.desc) ||
      !st->out_desc.same_shape(y.desc)) {
    LR_ASSIGN_OR_RETURN(
        own, make_state(op, *args.attrs, x.desc, y.desc, args.pool ? args.pool->num_threads() : 1));
    st = own.get();
  }
  if (y.desc.numel() == 0) return {};
  if ((x.data == nullptr && x.desc.numel() > 0) || y.data == nullptr)
    return invalid_argument(std::string(op_name(kind_of(op))) + ": null data pointer");
  float* out = static_cast<float*>(y.data);
  if (op == SpectralOp::dct3 && st->used == 0) {  // an empty input zero-padded to m
    std::memset(out, 0, size_t(y.desc.numel()) * sizeof(float));
    return {};
  }
  const Runner runner(*st, loops, static_cast<const float*>(x.data), out);
  if (st->use_matrix) {
    const int64_t units = runner.matrix_units();
    for_each_unit(args.pool, units, {}, [&](int64_t u, int64_t) { runner.run_matrix_unit(u); });
    return {};
  }
  for_each_unit(args.pool, st->units, std::span(st->busy.get(), st->scratch.size()),
                [&](int64_t u, int64_t slot) { runner.run_unit(u, st->scratch[size_t(slot)]); });
  return {};
}

}  // namespace

Result<std::shared_ptr<void>> prepare_dct(const Graph& graph, const Node& node, ThreadPool* pool) {
  return prepare_for(SpectralOp::dct2, graph, node, pool);
}
Result<std::shared_ptr<void>> prepare_idct(const Graph& graph, const Node& node, ThreadPool* pool) {
  return prepare_for(SpectralOp::dct3, graph, node, pool);
}
Result<std::shared_ptr<void>> prepare_spectral_filter(const Graph& graph, const Node& node,
                                                      ThreadPool* pool) {
  return prepare_for(SpectralOp::filter, graph, node, pool);
}

Status cpu_dct_f32_avx2(const KernelArgs& a) {
  return run_spectral(a, SpectralOp::dct2, dct_detail::kDctLoopsAvx2);
}
Status cpu_dct_f32_avx512(const KernelArgs& a) {
  return run_spectral(a, SpectralOp::dct2, dct_detail::kDctLoopsAvx512);
}
Status cpu_idct_f32_avx2(const KernelArgs& a) {
  return run_spectral(a, SpectralOp::dct3, dct_detail::kDctLoopsAvx2);
}
Status cpu_idct_f32_avx512(const KernelArgs& a) {
  return run_spectral(a, SpectralOp::dct3, dct_detail::kDctLoopsAvx512);
}
Status cpu_spectral_filter_f32_avx2(const KernelArgs& a) {
  return run_spectral(a, SpectralOp::filter, dct_detail::kDctLoopsAvx2);
}
Status cpu_spectral_filter_f32_avx512(const KernelArgs& a) {
  return run_spectral(a, SpectralOp::filter, dct_detail::kDctLoopsAvx512);
}

bool spectral_filter_uses_matrix(const void* prepared) {
  return prepared != nullptr && static_cast<const SpectralState*>(prepared)->use_matrix;
}

}  // namespace longrun::cpu
