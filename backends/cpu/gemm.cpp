// The GEMM driver behind the cpu matmul kernels (gemm.h): argument checks, batch
// broadcasting, cache blocking, packing, threading and the prepare step. No intrinsics here.
//
// Loop nest (BLIS order): tasks = (output batch) x (M block of mc rows) x (N block of nc
// columns), run in parallel; in a task, for each K block (<= kc_max): A's MR-row panels are
// read in place when A is contiguous along k (only a partial last panel is packed), else
// packed into the chunk's scratch; then for each NR-column B panel (kc x NR, cache-resident)
// and each A panel, one microkernel call, and on the last K block the epilogue. B is packed
// once per run (or once at prepare when it is a weight) as full-K panels, so a K block of a
// panel is just an offset into it.
#include "cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_isa.h"
#include "cpu/gemm_blocks.h"
#include "cpu/gemm_weight_cache.h"
#include "longrun/file_pages.h"
#include "longrun/ops/reduced_precision.h"

namespace longrun::cpu {
namespace gemm {
namespace {

// Cache blocking (kc_max, mc) comes with the ISA's kernels (GemmIsaKernels).
constexpr int64_t kNcMax = 4096;                    // columns per task (B is packed whole, so only task size)
constexpr int64_t kPackedBCap = int64_t(16) << 20;  // bytes: per-run packed B above this goes batch by batch,
                                                    // and one B matrix above it in column slabs

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Everything the loops need, derived from the bound descs and attrs.
struct Problem {
  int64_t M = 0, N = 0, K = 0;
  int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0;  // element strides of op(A) (m, k) and op(B) (k, n)
  DType b_dtype = DType::f32;
  int nbd = 0;  // output batch dims
  int64_t bdims[kMaxRank] = {};
  int64_t a_bs[kMaxRank] = {}, b_bs[kMaxRank] = {}, c_bs[kMaxRank] = {};  // strides; 0 = broadcast
  int64_t b_flat[kMaxRank] = {};  // B's own flat batch index per output batch dim (packed B)
  int64_t batch = 1, b_batches = 1;
  int64_t ldc = 0;
  int64_t ldy = 0;  // Y's row stride: N, or the whole output's N for a column slab (b_slab)
  const float* a = nullptr;
  const char* b = nullptr;
  const float* bias = nullptr;
  const float* c = nullptr;
  float* y = nullptr;
};

struct Offsets {
  int64_t a = 0, b_flat = 0, c = 0;
};

Offsets batch_offsets(const Problem& p, int64_t batch) {
  Offsets o;
  for (int i = p.nbd - 1; i >= 0; --i) {
    const int64_t idx = batch % p.bdims[i];
    batch /= p.bdims[i];
    o.a += idx * p.a_bs[i];
    o.b_flat += idx * p.b_flat[i];
    o.c += idx * p.c_bs[i];
  }
  return o;
}

// Fills `p` from descs and attrs; false when the layout is one this kernel does not take (the
// caller then runs the reference kernel, which also reports malformed arguments).
bool describe(const MatmulAttrs& at, std::span<const TensorDesc> in, const TensorDesc& out, Problem* p) {
  if (in.size() != size_t(2 + (at.has_bias ? 1 : 0) + (at.has_c ? 1 : 0))) return false;
  const TensorDesc& A = in[0];
  const TensorDesc& B = in[1];
  if (A.dtype() != DType::f32 || A.rank() < 2 || B.rank() < 2 || out.dtype() != DType::f32) return false;
  if (B.dtype() != DType::f32 && B.dtype() != DType::f16 && B.dtype() != DType::bf16) return false;
  const int ra = A.rank(), rb = B.rank(), ro = out.rank();
  p->M = at.trans_a ? A.dim(ra - 1) : A.dim(ra - 2);
  p->K = at.trans_a ? A.dim(ra - 2) : A.dim(ra - 1);
  p->N = at.trans_b ? B.dim(rb - 2) : B.dim(rb - 1);
  if ((at.trans_b ? B.dim(rb - 1) : B.dim(rb - 2)) != p->K) return false;
  p->a_m = at.trans_a ? A.stride(ra - 1) : A.stride(ra - 2);
  p->a_k = at.trans_a ? A.stride(ra - 2) : A.stride(ra - 1);
  p->b_k = at.trans_b ? B.stride(rb - 1) : B.stride(rb - 2);
  p->b_n = at.trans_b ? B.stride(rb - 2) : B.stride(rb - 1);
  p->b_dtype = B.dtype();
  if (ro < 2 || ro > kMaxRank || !out.is_contiguous() || out.dim(ro - 2) != p->M || out.dim(ro - 1) != p->N)
    return false;
  p->ldy = p->N;
  p->nbd = ro - 2;
  p->batch = 1;
  for (int i = 0; i < p->nbd; ++i) p->batch *= p->bdims[i] = out.dim(i);

  // Batch strides of an operand aligned to the output's batch dims (numpy: right-aligned,
  // size-1 dims broadcast). False when a dim neither matches nor broadcasts.
  auto align = [&](const TensorDesc& d, int64_t* strides, int64_t* flat) {
    const int nb = d.rank() - 2, shift = p->nbd - nb;
    if (shift < 0) return false;
    int64_t flat_stride = 1;
    for (int i = p->nbd - 1; i >= 0; --i) {
      strides[i] = 0;
      if (flat != nullptr) flat[i] = 0;
      const int j = i - shift;
      if (j < 0 || d.dim(j) == 1) continue;
      if (d.dim(j) != p->bdims[i]) return false;
      strides[i] = d.stride(j);
      if (flat != nullptr) flat[i] = flat_stride;
      flat_stride *= d.dim(j);
    }
    return true;
  };
  if (!align(A, p->a_bs, nullptr) || !align(B, p->b_bs, p->b_flat)) return false;
  p->b_batches = 1;
  for (int i = 0; i < rb - 2; ++i) p->b_batches *= B.dim(i);

  size_t next = 2;
  if (at.has_bias) {
    const TensorDesc& bias = in[next++];
    if (bias.dtype() != DType::f32 || bias.rank() != 1 || bias.dim(0) != p->N) return false;
    if (p->N > 1 && bias.stride(0) != 1) return false;
  }
  if (at.has_c) {
    const TensorDesc& C = in[next];
    const int rc = C.rank();
    if (C.dtype() != DType::f32 || rc < 2 || C.dim(rc - 2) != p->M || C.dim(rc - 1) != p->N) return false;
    if (p->N > 1 && C.stride(rc - 1) != 1) return false;
    if (!align(C, p->c_bs, nullptr)) return false;
    p->ldc = C.stride(rc - 2);
  }
  return true;
}

// Whether B is read in place by the microkernel instead of packed: a per-run f32 B that is
// row-major along n (op(B)[k, n] at k * b_k + n) with whole NR-column panels, at most four
// of them, as attention's P V has (N = head size 64). Packing such a small B per batch costs
// up to a fifth of its product; reading it in place gives the same sums in the same order.
// A wider B stays packed: its panels would be read from rows far apart (a page per k step).
bool direct_b(const GemmIsaKernels& isa, const Problem& p) {
  return p.b_dtype == DType::f32 && p.b_n == 1 && p.N % isa.nr == 0 && p.N <= 4 * isa.nr;
}

// The most of an MR-row A panel's rows that share one L1 set when read in place: a row
// stride of a multiple of 4 KiB puts every row's current line in the same set (64 sets of
// 64 B on the L1d of every AVX2 / AVX-512 core we target: 32 KiB 8-way, 48 KiB 12-way).
int64_t a_rows_per_l1_set(const GemmIsaKernels& isa, const Problem& p) {
  constexpr int64_t kSets = 64, kLine = 64;
  int64_t per_set[kSets] = {};
  int64_t worst = 0;
  for (int64_t i = 0; i < isa.mr; ++i) {
    const int64_t set = (i * p.a_m * int64_t(sizeof(float)) / kLine) % kSets;
    worst = std::max(worst, ++per_set[set]);
  }
  return worst;
}

// Whether A is read in place (contiguous along k, i.e. no trans_a): packing it would cost as
// much as the compute when N is small (attention's P V has N = 64), and gains nothing for
// large N. Except when the panel's rows alias in L1 (more than half an 8-way set: K = 2048
// rows are 8 KiB apart) and the packed block is reused by more than 4 B panels: the rows'
// lines then evict each other between k steps, and packing them once is cheaper. Attention's
// P V (N = 64: 2 AVX-512 or 4 AVX2 panels) always reads A in place.
bool direct_a(const GemmIsaKernels& isa, const Problem& p) {
  return p.a_k == 1 && (a_rows_per_l1_set(isa, p) <= 4 || ceil_div(p.N, isa.nr) <= 4);
}

// Whether the product runs the ISA's wide tile (gemm_impl.h, macro_wide): A and B both read
// in place and all of N within one tile (attention's P·V, N = 64, on AVX-512). N is never
// split into blocks then (at most four NR panels; choose_blocking splits only above four).
bool runs_wide(const GemmIsaKernels& isa, const Problem& p) {
  return isa.macro_wide != nullptr && direct_a(isa, p) && direct_b(isa, p) && p.N > isa.nr &&
         p.N <= isa.wide_n;
}

// Whether a wide-tile product runs K blocks of wide_kc_max instead of kc_max: only where all
// of K fits one kc_max block (attention's P·V up to N = 512), so each A row is still read in
// runs of at least wide_kc_max floats; longer rows keep kc_max (gemm_avx512.cpp, kWideKc).
bool wide_short_k(const GemmIsaKernels& isa, const Problem& p) {
  return runs_wide(isa, p) && isa.wide_kc_max > 0 && p.K <= isa.kc_max;
}

// Cache and task blocking for one problem on `threads` threads. M and N are cut into
// blocks of whole MR / NR panels, the panels spread evenly over the blocks.
struct Blocking {
  int64_t kc = 0, k_blocks = 0;  // K blocks of kc (the last may be shorter)
  int64_t mr = 0, m_panels = 0, m_blocks = 0;
  int64_t nr = 0, n_panels = 0, n_blocks = 0;
  int64_t tasks() const { return m_blocks * n_blocks; }
  // First row / column of block b; block b spans [m_begin(b), m_begin(b + 1)).
  int64_t m_begin(int64_t b, int64_t M) const { return std::min(M, b * m_panels / m_blocks * mr); }
  int64_t n_begin(int64_t b, int64_t N) const { return std::min(N, b * n_panels / n_blocks * nr); }
};

Blocking choose_blocking(const GemmIsaKernels& isa, const Problem& p, int threads) {
  Blocking bl;
  bl.k_blocks = ceil_div(p.K, wide_short_k(isa, p) ? isa.wide_kc_max : isa.kc_max);
  bl.kc = ceil_div(p.K, bl.k_blocks);
  bl.mr = isa.mr;
  bl.nr = isa.nr;
  bl.m_panels = ceil_div(p.M, isa.mr);
  bl.n_panels = ceil_div(p.N, isa.nr);
  int64_t mc_panels = std::min(bl.m_panels, isa.mc / isa.mr);
  int64_t nc_panels = std::min(bl.n_panels, kNcMax / isa.nr);
  // Enough tasks to balance the pool's chunks: split N, then M, down to a few panels each.
  gemm::split_for_threads(bl.m_panels, bl.n_panels, p.batch, threads, 2, mc_panels, nc_panels);
  bl.m_blocks = ceil_div(bl.m_panels, mc_panels);
  bl.n_blocks = ceil_div(bl.n_panels, nc_panels);
  return bl;
}

int64_t packed_b_floats(const GemmIsaKernels& isa, const Problem& p) {
  return ceil_div(p.N, isa.nr) * p.K * isa.nr;
}

// Element offset of B's matrix `mat` (B's own flat batch index).
int64_t b_matrix_offset(const TensorDesc& bdesc, int64_t mat) {
  int64_t off = 0, rest = mat;
  for (int i = bdesc.rank() - 3; i >= 0; --i) {
    off += (rest % bdesc.dim(i)) * bdesc.stride(i);
    rest /= bdesc.dim(i);
  }
  return off;
}

// Packs B matrices [first, first + count) (B's own flat batch index) into dst, full-K panels.
void pack_b(const GemmIsaKernels& isa, const Problem& p, const TensorDesc& bdesc, int64_t first,
            int64_t count, float* dst, ThreadPool* pool) {
  const int64_t panels = ceil_div(p.N, isa.nr), per_matrix = packed_b_floats(isa, p);
  const int64_t esize = int64_t(dtype_size(p.b_dtype));
  auto job = [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t mat = first + item / panels, panel = item % panels;
      const int64_t off = b_matrix_offset(bdesc, mat);
      const int64_t n0 = panel * isa.nr;
      const char* src = p.b + (off + n0 * p.b_n) * esize;
      isa.pack_panel(src, p.b_dtype, p.b_n, p.b_k, std::min<int64_t>(isa.nr, p.N - n0), p.K, isa.nr,
                     dst + (mat - first) * per_matrix + panel * p.K * isa.nr);
    }
  };
  const int64_t items = count * panels;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, p.K * isa.nr));
  if (pool != nullptr)
    pool->parallel_for(items, grain, job);
  else
    job(0, items);
}

// Columns of one slab of a per-run B whose single matrix packs to more than kPackedBCap (a
// pooling's weights [1, N] times x [N, D]: K = N): whole NR panels, as many as fit the cap,
// so the packed B stays within kPackedBCap whatever the sequence length. The whole N when
// one matrix fits.
int64_t b_slab_columns(const GemmIsaKernels& isa, const Problem& p) {
  if (packed_b_floats(isa, p) * int64_t(sizeof(float)) <= kPackedBCap) return p.N;
  const int64_t panels = std::max<int64_t>(1, kPackedBCap / (p.K * isa.nr * int64_t(sizeof(float))));
  return std::min(p.N, panels * isa.nr);
}

// Columns [n0, n0 + cols) of p as a problem of its own: B, bias, C and Y start n0 columns in,
// Y keeps its row stride.
Problem b_slab(const Problem& p, int64_t n0, int64_t cols) {
  Problem s = p;
  s.N = cols;
  s.b = p.b + n0 * p.b_n * int64_t(dtype_size(p.b_dtype));
  if (p.bias != nullptr) s.bias = p.bias + n0;
  if (p.c != nullptr) s.c = p.c + n0;
  s.y = p.y + n0;
  return s;
}

// The per-node state: prepacked weight B (or the per-run B scratch) and one A-block buffer
// per parallel chunk.
struct MatmulState {
  const void* weight = nullptr;  // the prepacked weight's data; null when B is packed per run
  TensorDesc b_desc;
  std::shared_ptr<const PackedWeight> packed_weight;  // shared with other plans (gemm_weight_cache.h)
  // Run-time scratch (shared with the graph's other nodes): the packed B when B is not a
  // weight (b_floats), then one A block per chunk from a_offset.
  std::shared_ptr<const host::SharedScratch> scratch;
  int64_t b_floats = 0, a_offset = 0;
  int64_t a_floats_per_chunk = 0;
  int64_t a_region_floats = 0;  // from a_offset: the chunks' A blocks, then any shared A
  int64_t chunks = 1;
};

// Floats of one chunk's A-block scratch (none when A is read in place).
int64_t a_block_floats(const GemmIsaKernels& isa, const Problem& p) {
  return direct_a(isa, p) ? 0 : std::min(round_up(p.M, isa.mr), isa.mc) * std::min(p.K, isa.kc_max);
}

// Whether A is packed once per M block and shared by that block's N-split tasks instead of
// once per task: when A is packed at all and N is split (a small M on several threads).
// x[128,2048]·W[512,2048]^T on 2 threads has 3 M blocks x 4 N blocks: per-task packing
// would pack A four times over. A task that arrives while its block is being packed packs
// its own copy instead of waiting, so a packer that loses its CPU stalls no other task.
bool shares_a(const GemmIsaKernels& isa, const Problem& p, const Blocking& bl) {
  return !direct_a(isa, p) && bl.n_blocks > 1;
}

// Floats of the shared packed A of one batch and K block: every MR panel at a stride of kc x
// MR (the last K block's panels are shorter and start at the same places); of `count` batches.
int64_t shared_a_kblock_floats(const GemmIsaKernels& isa, const Blocking& bl) {
  return bl.m_panels * isa.mr * bl.kc;
}
int64_t shared_a_floats(const GemmIsaKernels& isa, const Blocking& bl, int64_t count) {
  return count * bl.k_blocks * shared_a_kblock_floats(isa, bl);
}

// Which chunk of thread_pool_chunk_range a range starting at `begin` is.
int64_t chunk_of(int64_t n, int64_t chunks, int64_t begin) {
  const int64_t base = n / chunks, extra = n % chunks, big = extra * (base + 1);
  return begin < big ? begin / (base + 1) : extra + (begin - big) / base;
}

// Whether Y's full vectors may be streamed (MacroArgs::stream): at least stream_min_bytes of
// output, and every tile's vectors aligned (y on a line, rows a whole number of lines apart;
// the panels start at multiples of NR, 16 or 32 floats at both ISAs). Streaming skips the
// read for ownership, which would only fetch lines about to be overwritten. Not below the
// cache size, where Y's next reader may still find it in the cache. The AVX2 short-K tile
// loop never streams (gemm_impl.h, short_k_tiles).
bool streams_output(const Problem& p) {
  return rows_streamable(p.y, p.ldy, p.batch * p.M * p.ldy * int64_t(sizeof(float)));
}

// Computes output batches [first, first + count) with B packed at `packed_b` (matrix j of
// B's flat batch index at packed_b + (j - b_first) * packed size), or with B read in place
// when `bdesc` is given (direct_b: packed_b is then B's data and b_first unused).
void compute(const GemmIsaKernels& isa, const MatmulAttrs& at, const Problem& p, const Blocking& bl,
             int64_t first, int64_t count, const float* packed_b, int64_t b_first, float* a_scratch,
             int64_t a_floats, ThreadPool* pool, const TensorDesc* bdesc = nullptr,
             float* shared_a = nullptr) {
  const int64_t per_b = packed_b_floats(isa, p);
  const bool trivial = at.alpha == 1.0f && !at.has_bias && !at.has_c && at.activation == Activation::none;
  const bool stream = trivial && bl.k_blocks == 1 && streams_output(p);
  const int64_t tasks = count * bl.tasks();
  const bool direct = direct_a(isa, p);
  // Shared A (shares_a): the first task of an M block to arrive packs it, all K blocks, for
  // every later task of the block. A task that arrives while it is being packed does not wait
  // (the packer's thread may have lost its CPU): it packs its own copy, as without sharing.
  // Packing is a copy, so who packs never changes a bit.
  std::unique_ptr<std::atomic<int>[]> packed;  // per (batch, M block): 0 no, 1 packing, 2 done
  if (shared_a != nullptr) packed.reset(new std::atomic<int>[size_t(count * bl.m_blocks)]());
  const int64_t shared_kb_floats = shared_a_kblock_floats(isa, bl);
  auto pack_a = [&](float* dst, const float* a_block, int64_t mc, int64_t kc, int64_t panel_stride) {
    for (int64_t i = 0; i < mc; i += isa.mr)
      isa.pack_panel(a_block + i * p.a_m, DType::f32, p.a_m, p.a_k, std::min<int64_t>(isa.mr, mc - i), kc,
                     isa.mr, dst + i / isa.mr * panel_stride);
  };
  auto shared_block = [&](int64_t batch, int64_t kb, int64_t m0) {
    return shared_a + ((batch - first) * bl.k_blocks + kb) * shared_kb_floats +
           m0 / isa.mr * std::min(bl.kc, p.K - kb * bl.kc) * isa.mr;
  };
  auto job = [&](int64_t begin, int64_t end, float* apack) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t batch = first + t / bl.tasks(), in_batch = t % bl.tasks();
      const int64_t mb = in_batch / bl.n_blocks, nb = in_batch % bl.n_blocks;
      const int64_t m0 = bl.m_begin(mb, p.M), mc = bl.m_begin(mb + 1, p.M) - m0;
      const int64_t n0 = bl.n_begin(nb, p.N), nc = bl.n_begin(nb + 1, p.N) - n0;
      const Offsets o = batch_offsets(p, batch);
      float* y = p.y + (batch * p.M + m0) * p.ldy + n0;
      const float* b = bdesc != nullptr
                           ? packed_b + b_matrix_offset(*bdesc, o.b_flat) + n0
                           : packed_b + (o.b_flat - b_first) * per_b + (n0 / isa.nr) * p.K * isa.nr;
      const int64_t ldb = bdesc != nullptr ? p.b_k : isa.nr;
      // A and B both in place and N within one wide tile: the ISA's wide macro kernel.
      const bool wide = bdesc != nullptr && runs_wide(isa, p);
      bool use_shared = false;
      if (shared_a != nullptr) {
        std::atomic<int>& state = packed[size_t((batch - first) * bl.m_blocks + mb)];
        int seen = 0;
        if (state.compare_exchange_strong(seen, 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
          for (int64_t kb = 0; kb < bl.k_blocks; ++kb) {
            const int64_t k0 = kb * bl.kc, kc = std::min(bl.kc, p.K - k0);
            pack_a(shared_block(batch, kb, m0), p.a + o.a + m0 * p.a_m + k0 * p.a_k, mc, kc, kc * isa.mr);
          }
          state.store(2, std::memory_order_release);
          use_shared = true;
        } else {
          use_shared = seen == 2;  // the failed exchange loaded the state (acquire)
        }
      }
      Epilogue ep{at.alpha,
                  at.beta,
                  p.bias != nullptr ? p.bias + n0 : nullptr,
                  p.c != nullptr ? p.c + o.c + m0 * p.ldc + n0 : nullptr,
                  p.ldc,
                  at.activation};
      for (int64_t kb = 0; kb < bl.k_blocks; ++kb) {
        const int64_t k0 = kb * bl.kc, kc = std::min(bl.kc, p.K - k0);
        const float* a0 = p.a + o.a + m0 * p.a_m + k0 * p.a_k;
        if (!direct && !use_shared) pack_a(apack, a0, mc, kc, kc * isa.mr);
        MacroArgs g;
        g.a = use_shared ? shared_block(batch, kb, m0) : apack;
        g.a_direct = direct ? a0 : nullptr;
        g.lda = p.a_m;
        g.b = b + k0 * ldb;
        g.b_panel_stride = bdesc != nullptr ? isa.nr : p.K * isa.nr;
        g.ldb = ldb;
        g.m = mc;
        g.n = nc;
        g.kc = kc;
        g.y = y;
        g.ldy = p.ldy;
        g.accumulate = kb > 0;
        g.epilogue = kb + 1 == bl.k_blocks && !trivial ? &ep : nullptr;
        g.stream = stream;
        if (wide)
          isa.macro_wide(g);
        else
          isa.macro(g);
      }
    }
  };
  if (pool == nullptr) {
    job(0, tasks, a_scratch);
    return;
  }
  const int64_t chunks = thread_pool_chunk_count(tasks, 1, pool->num_threads());
  pool->parallel_for(tasks, 1, [&](int64_t begin, int64_t end) {
    job(begin, end, a_scratch + chunk_of(tasks, chunks, begin) * a_floats);
  });
}

// Whether value u is a weight whose bytes overlap [lo, hi).
bool overlaps(const Value& u, const char* lo, const char* hi) {
  if (u.role != ValueRole::weight || u.weight_data == nullptr) return false;
  const char* b = static_cast<const char*>(u.weight_data);
  return b < hi && lo < b + size_t(u.desc.nbytes());
}

// What a packed weight's bytes depend on: the weight (address and desc), the ISA's packer
// and panel width, and op(B)'s shape and strides.
std::string weight_key(const GemmIsaKernels& isa, const Problem& p, const Value& b) {
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(b.weight_data)) + " " + b.desc.to_string() +
                    " isa " + std::to_string(reinterpret_cast<uintptr_t>(&isa)) + " nr " +
                    std::to_string(isa.nr) + " N " + std::to_string(p.N) + " K " + std::to_string(p.K) +
                    " b_n " + std::to_string(p.b_n) + " b_k " + std::to_string(p.b_k) + " batches " +
                    std::to_string(p.b_batches);
  key += " strides";
  for (int i = 0; i < b.desc.rank(); ++i) key += " " + std::to_string(b.desc.stride(i));
  return key;
}

}  // namespace

Status matmul_run(const GemmIsaKernels& isa, const KernelArgs& args) {
  if (args.attrs == nullptr || !std::holds_alternative<MatmulAttrs>(*args.attrs) || args.outputs.size() != 1)
    return reference_matmul(args);
  const MatmulAttrs& at = args.attr<MatmulAttrs>();
  TensorDesc in[4];
  const size_t n_in = std::min<size_t>(args.inputs.size(), 4);
  for (size_t i = 0; i < n_in; ++i) in[i] = args.inputs[i].desc;
  // A quantized B is read only through its packed f32 copy (matmul_prepare, checked below).
  if (n_in >= 2 && in[1].dtype() == DType::i8) in[1] = in[1].with_dtype(DType::f32);
  Problem p;
  if (args.inputs.size() > 4 ||
      !describe(at, std::span<const TensorDesc>(in, n_in), args.outputs[0].desc, &p))
    return reference_matmul(args);
  for (const TensorView& v : args.inputs)
    if (v.data == nullptr && v.desc.numel() > 0) return reference_matmul(args);
  if (args.outputs[0].desc.numel() == 0) return {};
  if (p.K == 0 || args.outputs[0].data == nullptr) return reference_matmul(args);  // Y = epilogue(0)

  p.a = args.inputs[0].ptr<const float>();
  p.b = static_cast<const char*>(args.inputs[1].data);
  size_t next = 2;
  if (at.has_bias) p.bias = args.inputs[next++].ptr<const float>();
  if (at.has_c) p.c = args.inputs[next].ptr<const float>();
  p.y = args.outputs[0].ptr<float>();

  // The state's scratch is written during the run: runs of one prepared graph are serialised.
  auto* state = static_cast<MatmulState*>(const_cast<void*>(args.prepared));
  ThreadPool* pool = args.pool != nullptr && args.pool->num_threads() > 1 ? args.pool : nullptr;
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  const Blocking bl = choose_blocking(isa, p, threads);
  const int64_t a_floats = a_block_floats(isa, p);
  const int64_t per_b = packed_b_floats(isa, p);

  // Scratch: the prepared state's when it fits this call, else (direct calls) local.
  AlignedFloats local_a, local_b;
  float* a_scratch = nullptr;
  const int64_t chunks = pool != nullptr ? thread_pool_chunk_count(p.batch * bl.tasks(), 1, threads) : 1;
  if (state != nullptr && state->a_floats_per_chunk >= a_floats && state->chunks >= chunks) {
    a_scratch = state->scratch->floats() + state->a_offset;
  } else if (state != nullptr && state->a_floats_per_chunk >= a_floats) {
    pool = nullptr;  // more chunks than prepared for: run serially (same results, see gemm.h)
    a_scratch = state->scratch->floats() + state->a_offset;
  } else {
    local_a = AlignedFloats(a_floats * chunks);
    a_scratch = local_a.data();
  }

  // Shared A (shares_a) follows the chunks' A blocks: the prepared region is sized for both
  // (matmul_prepare); a call without that room packs into a local buffer. Only the paths
  // that run all batches in one compute call ask for it.
  AlignedFloats local_shared;
  auto shared_a = [&]() -> float* {
    if (pool == nullptr || !shares_a(isa, p, bl)) return nullptr;
    const int64_t need = shared_a_floats(isa, bl, p.batch), blocks = a_floats * chunks;
    if (state != nullptr && a_scratch == state->scratch->floats() + state->a_offset &&
        state->a_region_floats >= blocks + need)
      return a_scratch + blocks;
    local_shared = AlignedFloats(need);
    return local_shared.data();
  };

  const TensorDesc& bdesc = args.inputs[1].desc;
  if (state != nullptr && state->weight != nullptr && state->weight == args.inputs[1].data &&
      state->b_desc == bdesc) {
    compute(isa, at, p, bl, 0, p.batch, state->packed_weight->floats.data(), 0, a_scratch, a_floats, pool,
            nullptr, shared_a());
    return {};
  }
  if (bdesc.dtype() == DType::i8)  // read only through its packed copy (matmul_prepare)
    return invalid_argument("matmul: a quantized (i8) B that was not packed at prepare");
  if (direct_b(isa, p)) {
    compute(isa, at, p, bl, 0, p.batch, args.inputs[1].ptr<const float>(), 0, a_scratch, a_floats, pool,
            &bdesc, shared_a());
    return {};
  }
  float* b_scratch = nullptr;
  const bool all_b = p.b_batches * per_b * 4 <= kPackedBCap;
  const int64_t slab = b_slab_columns(isa, p);
  const int64_t b_need = all_b ? p.b_batches * per_b : ceil_div(slab, isa.nr) * p.K * isa.nr;
  if (state != nullptr && state->weight == nullptr && state->b_floats >= b_need) {
    b_scratch = state->scratch->floats();
  } else {
    local_b = AlignedFloats(b_need);
    b_scratch = local_b.data();
  }
  if (all_b && pool != nullptr && p.b_batches == p.batch && p.batch % threads == 0) {
    // Whole batches per chunk, each packing its own B right before using it: the packing is
    // split over the threads too (a separate pack_b call would do it serially when B is
    // small, as attention's per-head K and V are), and there is one fork-join, not two.
    // Every output element still sees the same blocking, so the results do not change.
    const int64_t batch_chunks = thread_pool_chunk_count(p.batch, 1, threads);
    pool->parallel_for(p.batch, 1, [&](int64_t begin, int64_t end) {
      float* apack = a_scratch + chunk_of(p.batch, batch_chunks, begin) * a_floats;
      for (int64_t batch = begin; batch < end; ++batch) {
        const int64_t bf = batch_offsets(p, batch).b_flat;
        pack_b(isa, p, bdesc, bf, 1, b_scratch + bf * per_b, nullptr);
        compute(isa, at, p, bl, batch, 1, b_scratch, 0, apack, a_floats, nullptr);
      }
    });
    return {};
  }
  if (all_b) {
    pack_b(isa, p, bdesc, 0, p.b_batches, b_scratch, pool);
    compute(isa, at, p, bl, 0, p.batch, b_scratch, 0, a_scratch, a_floats, pool, nullptr, shared_a());
    return {};
  }
  if (slab < p.N) {
    // One B matrix over the cap: column slabs, each packed and used before the next, batch by
    // batch. Every output element sees the same K blocking as in one piece; A is packed per
    // task (no shared A), which is a copy and changes no bit.
    for (int64_t batch = 0; batch < p.batch; ++batch) {
      const int64_t bf = batch_offsets(p, batch).b_flat;
      for (int64_t n0 = 0; n0 < p.N; n0 += slab) {
        const Problem s = b_slab(p, n0, std::min(slab, p.N - n0));
        const Blocking sbl = choose_blocking(isa, s, threads);
        ThreadPool* spool =
            pool != nullptr && thread_pool_chunk_count(s.batch * sbl.tasks(), 1, threads) <= chunks ? pool
                                                                                                    : nullptr;
        pack_b(isa, s, bdesc, bf, 1, b_scratch, spool);
        compute(isa, at, s, sbl, batch, 1, b_scratch, bf, a_scratch, a_floats, spool);
      }
    }
    return {};
  }
  // Large batched B: one output batch at a time, repacking only when its B changes.
  int64_t packed = -1;
  for (int64_t batch = 0; batch < p.batch; ++batch) {
    const int64_t bf = batch_offsets(p, batch).b_flat;
    if (bf != packed) pack_b(isa, p, bdesc, bf, 1, b_scratch, pool);
    packed = bf;
    compute(isa, at, p, bl, batch, 1, b_scratch, bf, a_scratch, a_floats, pool);
  }
  return {};
}

void release_packed_weight_pages(const Graph& graph, ValueId v) {
  const Value& w = graph.value(v);
  if (w.role != ValueRole::weight || w.weight_data == nullptr) return;
  const char* lo = static_cast<const char*>(w.weight_data);
  const char* hi = lo + size_t(w.desc.nbytes());
  // Every node that reads these bytes, through this value or another weight value over the
  // same memory (a reshaped view, graph.h), must be a matmul taking them as B.
  for (const Node& n : graph.nodes())
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (overlaps(graph.value(n.inputs[i]), lo, hi) && (n.kind != OpKind::matmul || i != 1)) return;
  release_file_pages(w.weight_data, size_t(w.desc.nbytes()));
}

Result<std::shared_ptr<void>> matmul_prepare(const GemmIsaKernels& isa, const Graph& graph, const Node& node,
                                             ThreadPool* pool) {
  if (node.inputs.size() < 2 || node.outputs.size() != 1 || !std::holds_alternative<MatmulAttrs>(node.attrs))
    return std::shared_ptr<void>();
  std::vector<TensorDesc> in;
  for (ValueId v : node.inputs) in.push_back(graph.value(v).desc);
  Problem p;
  const Value& b = graph.value(node.inputs[1]);
  const bool quantized = b.desc.dtype() == DType::i8;   // a quantized weight: dequantized while packing
  if (quantized) in[1] = in[1].with_dtype(DType::f32);  // described as the f32 values it packs
  if (in.size() > 4 ||
      !describe(std::get<MatmulAttrs>(node.attrs), in, graph.value(node.outputs[0]).desc, &p)) {
    if (quantized)
      return unsupported("matmul '" + node.name + "': the cpu f32 kernel cannot take quantized weight '" +
                         b.name + "' " + b.desc.to_string() + " in this call's shape");
    return std::shared_ptr<void>();  // the run falls back to the reference kernel
  }
  auto state = std::make_shared<MatmulState>();
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  const Blocking bl = choose_blocking(isa, p, threads);
  state->chunks =
      threads > 1 ? std::max<int64_t>(1, thread_pool_chunk_count(p.batch * bl.tasks(), 1, threads)) : 1;
  state->a_floats_per_chunk = a_block_floats(isa, p);
  state->a_region_floats = state->a_floats_per_chunk * state->chunks +
                           (threads > 1 && shares_a(isa, p, bl) ? shared_a_floats(isa, bl, p.batch) : 0);

  state->b_desc = b.desc;
  const int64_t per_b = packed_b_floats(isa, p);
  if (b.role == ValueRole::weight && b.weight_data != nullptr && p.K > 0) {
    p.b = static_cast<const char*>(b.weight_data);
    const int64_t floats = p.b_batches * per_b;
    bool created = false;
    // A quantized weight's f32 values exist only while it is packed (on a miss).
    std::vector<float> dequantized;
    const TensorDesc b_read = quantized ? b.desc.with_dtype(DType::f32) : b.desc;
    LR_ASSIGN_OR_RETURN(
        state->packed_weight,
        packed_weight(
            weight_key(isa, p, b), floats,
            [&]() -> Status {
              LR_RETURN_IF_ERROR(host::reserve_weight_copy_bytes(
                  floats * int64_t(sizeof(float)), quantized ? b.desc.numel() * int64_t(sizeof(float)) : 0));
              if (!quantized) return {};
              LR_ASSIGN_OR_RETURN(dequantized, ops::dequantized_copy(b));
              p.b = reinterpret_cast<const char*>(dequantized.data());
              return {};
            },
            [&](float* dst) { pack_b(isa, p, b_read, 0, p.b_batches, dst, pool); }, &created));
    if (created) release_packed_weight_pages(graph, node.inputs[1]);
    state->weight = b.weight_data;
  } else if (quantized && p.K > 0) {
    return unsupported("matmul '" + node.name + "': quantized B '" + b.name + "' is not a weight with data");
  } else if (!direct_b(isa, p)) {
    const bool all_b = p.b_batches * per_b * 4 <= kPackedBCap;
    state->b_floats = all_b ? p.b_batches * per_b : ceil_div(b_slab_columns(isa, p), isa.nr) * p.K * isa.nr;
  }
  state->a_offset = round_up(state->b_floats, 16);  // A blocks start on a cache line
  LR_ASSIGN_OR_RETURN(state->scratch, host::request_scratch((state->a_offset + state->a_region_floats) *
                                                            int64_t(sizeof(float))));
  return std::shared_ptr<void>(state);
}

}  // namespace gemm

Status cpu_matmul_f32_avx2(const KernelArgs& args) {
  return gemm::matmul_run(gemm::gemm_kernels_avx2(), args);
}
Status cpu_matmul_f32_avx512(const KernelArgs& args) {
  return gemm::matmul_run(gemm::gemm_kernels_avx512(), args);
}
Result<std::shared_ptr<void>> cpu_matmul_prepare_avx2(const Graph& graph, const Node& node,
                                                      ThreadPool* pool) {
  return gemm::matmul_prepare(gemm::gemm_kernels_avx2(), graph, node, pool);
}
Result<std::shared_ptr<void>> cpu_matmul_prepare_avx512(const Graph& graph, const Node& node,
                                                        ThreadPool* pool) {
  return gemm::matmul_prepare(gemm::gemm_kernels_avx512(), graph, node, pool);
}

}  // namespace longrun::cpu
