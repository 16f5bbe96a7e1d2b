// matmul_topk by tiled GEMM and a running top k per row (see matmul_topk.h).
#include "backends/cpu/matmul_topk.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/topk_order.h"

namespace longrun::cpu {
namespace {

// Key columns per score tile: a 48 x 512 tile (96 KiB) and its 512-key B panels (128 KiB at
// d = 64) stay in a 1-2 MiB L2 while the tile is scanned.
constexpr int64_t kTileColumns = 512;
// Query rows per block, in microkernel rows: enough rows that each B panel is reused from L1
// across several microkernel tiles.
constexpr int64_t kBlockTiles = 8;
// Candidate slots beyond 2k per row: compactions stay rare for small k.
constexpr int64_t kSlack = 256;
// Blocks are dealt round robin to at most this many chunks per thread (causal rows near the
// end cost more, so interleaving balances them).
constexpr int kChunksPerThread = 4;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t bytes64(int64_t bytes) { return round_up(bytes, 64); }

struct Geometry {
  int64_t batch = 0, m = 0, nk = 0, d = 0, k = 0;
  int64_t rows = 0;    // query rows per block
  int64_t blocks = 0;  // batch * ceil(m / rows)
  int64_t panels = 0;  // NR-column panels of B per batch
  int64_t cap = 0;     // candidate slots per row
  int64_t chunks = 1;  // per-chunk scratch buffers (and parallel tasks)
  int64_t packed_b_bytes = 0, chunk_bytes = 0;
  // Offsets inside one chunk's buffer.
  int64_t tile_at = 0, cand_at = 0, thr_at = 0, count_at = 0;
};

Geometry plan(const gemm::GemmIsaKernels& isa, const TensorDesc& q, const TensorDesc& kd, int64_t k,
              int threads) {
  Geometry g;
  g.batch = q.dim(0), g.m = q.dim(1), g.d = q.dim(2), g.nk = kd.dim(1), g.k = k;
  g.rows = int64_t(isa.mr) * kBlockTiles;
  g.blocks = g.batch * ((g.m + g.rows - 1) / g.rows);
  g.panels = (g.nk + isa.nr - 1) / isa.nr;
  g.cap = 2 * k + kSlack;
  g.chunks = threads <= 1 || g.blocks <= 1 ? 1
                                           : std::min(thread_pool_chunk_count(g.blocks, 1, threads),
                                                      int64_t(threads) * kChunksPerThread);
  g.packed_b_bytes = bytes64(g.batch * g.panels * isa.nr * g.d * int64_t(sizeof(float)));
  int64_t at = 0;
  g.tile_at = at, at += bytes64(g.rows * kTileColumns * int64_t(sizeof(float)));
  g.cand_at = at, at += bytes64(g.rows * g.cap * int64_t(sizeof(uint64_t)));
  g.thr_at = at, at += bytes64(g.rows * int64_t(sizeof(uint64_t)));
  g.count_at = at, at += bytes64(g.rows * int64_t(sizeof(int64_t)));
  g.chunk_bytes = at;
  return g;
}

int64_t scratch_bytes(const Geometry& g) { return g.packed_b_bytes + g.chunks * g.chunk_bytes; }

struct MatmulTopkState {
  Geometry geometry;
  std::shared_ptr<const host::SharedScratch> scratch;
};

// Packed B of batch b, K block starting at k0 (kc wide): panels kc * NR floats apart.
float* packed_b(float* base, const Geometry& g, int nr, int64_t b, int64_t k0) {
  return base + b * g.panels * nr * g.d + k0 * g.panels * nr;
}

// The running top k of one row.
struct RowTopk {
  uint64_t* cand;
  uint64_t* thr;
  int64_t* count;
  int64_t k, cap;

  // Keeps the best k composites; the k-th becomes the threshold.
  void compact() {
    std::nth_element(cand, cand + (k - 1), cand + *count, std::greater<uint64_t>());
    *thr = cand[k - 1];
    *count = k;
  }
  float threshold_value() const {
    const auto key = uint32_t(*thr >> 32);
    // Threshold 0 (nothing kept yet) or a NaN key: every value passes the float test and the
    // composite decides.
    return *thr == 0 || key == 0xffffffffu ? std::numeric_limits<float>::quiet_NaN() : key_value(key);
  }
  // Offers columns [j0, j0 + len) of the row's scores s (s[0] is column j0); mask: the
  // batch's key mask (1 = eligible) or null.
  void offer(const float* s, int64_t j0, int64_t len, const uint8_t* mask) {
    float tf = threshold_value();
    for (int64_t c0 = 0; c0 < len; c0 += 64) {
      const int64_t n = std::min<int64_t>(64, len - c0);
      for (uint64_t bits = reaching(s + c0, 1, n, tf); bits != 0; bits &= bits - 1) {
        const int64_t c = c0 + __builtin_ctzll(bits);
        const int64_t j = j0 + c;
        if (mask != nullptr && mask[j] == 0) continue;
        const uint64_t comp = composite(order_key(s[c]), j);
        if (comp <= *thr) continue;
        cand[(*count)++] = comp;
        if (*count == cap) {
          compact();
          tf = threshold_value();
        }
      }
    }
  }
};

Status run(const gemm::GemmIsaKernels& isa, const KernelArgs& args) {
  const auto& a = args.attr<MatmulTopkAttrs>();
  const TensorView& q = args.inputs[0];
  const TensorView& kv = args.inputs[1];
  const TensorView& y = args.outputs[0];
  size_t next = 2;
  const TensorView* mask = a.has_key_mask ? &args.inputs[next++] : nullptr;
  const TensorView* row_k = a.has_row_k ? &args.inputs[next] : nullptr;
  bool contiguous = q.desc.is_contiguous() && kv.desc.is_contiguous() && y.desc.is_contiguous();
  if (mask != nullptr) contiguous = contiguous && mask->desc.is_contiguous();
  if (row_k != nullptr) contiguous = contiguous && row_k->desc.is_contiguous();
  if (!contiguous || q.desc.dim(2) == 0) return reference_matmul_topk(args);

  const int threads = args.pool != nullptr ? args.pool->num_threads() : 1;
  Geometry g = plan(isa, q.desc, kv.desc, a.k, threads);
  if (g.blocks == 0) return {};
  // The prepared scratch when it was planned for this shape, else a buffer of this call's.
  const auto* state = static_cast<const MatmulTopkState*>(args.prepared);
  std::vector<std::byte> local;
  std::byte* base = nullptr;
  if (state != nullptr && state->scratch != nullptr && state->geometry.chunks == g.chunks &&
      scratch_bytes(state->geometry) == scratch_bytes(g) && state->scratch->bytes() >= scratch_bytes(g)) {
    base = reinterpret_cast<std::byte*>(state->scratch->floats());
  } else {
    local.resize(size_t(scratch_bytes(g) + 64));
    const auto addr = reinterpret_cast<uintptr_t>(local.data());
    base = local.data() + (round_up(int64_t(addr), 64) - int64_t(addr));
  }
  auto* pb = reinterpret_cast<float*>(base);
  const int nr = isa.nr;
  const float* qp = q.ptr<const float>();
  const float* kp = kv.ptr<const float>();

  // Pack B: every (batch, K block, panel) once, in parallel over batch x panels.
  auto pack = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / g.panels, p = t % g.panels;
      for (int64_t k0 = 0; k0 < g.d; k0 += isa.kc_max) {
        const int64_t kc = std::min<int64_t>(isa.kc_max, g.d - k0);
        const float* src = kp + (b * g.nk + p * nr) * g.d + k0;
        isa.pack_panel(src, DType::f32, g.d, 1, std::min<int64_t>(nr, g.nk - p * nr), kc, nr,
                       packed_b(pb, g, nr, b, k0) + p * kc * nr);
      }
    }
  };
  if (args.pool != nullptr && threads > 1)
    args.pool->parallel_for(g.batch * g.panels, 64, pack);
  else
    pack(0, g.batch * g.panels);

  const int64_t blocks_per_batch = (g.m + g.rows - 1) / g.rows;
  const int64_t off = g.nk - g.m;  // causal: row i reaches columns j <= i + off
  const gemm::Epilogue epilogue{.alpha = a.alpha};
  int32_t* out = y.ptr<int32_t>();
  auto run_block = [&](int64_t blk, std::byte* buf) {
    const int64_t b = blk / blocks_per_batch, i0 = (blk % blocks_per_batch) * g.rows;
    const int64_t rows = std::min(g.rows, g.m - i0);
    auto* tile = reinterpret_cast<float*>(buf + g.tile_at);
    auto* cand = reinterpret_cast<uint64_t*>(buf + g.cand_at);
    auto* thr = reinterpret_cast<uint64_t*>(buf + g.thr_at);
    auto* count = reinterpret_cast<int64_t*>(buf + g.count_at);
    std::fill(thr, thr + rows, uint64_t{0});
    std::fill(count, count + rows, int64_t{0});
    const uint8_t* mrow = nullptr;
    if (mask != nullptr) mrow = mask->ptr<const uint8_t>() + (mask->desc.dim(0) == 1 ? 0 : b) * g.nk;
    // Columns the block's rows may reach: all, or up to its last row's reach.
    const int64_t reach = a.causal ? std::clamp<int64_t>(i0 + rows + off, 0, g.nk) : g.nk;
    for (int64_t j0 = 0; j0 < reach; j0 += kTileColumns) {
      const int64_t tn = std::min(kTileColumns, reach - j0);
      for (int64_t k0 = 0; k0 < g.d; k0 += isa.kc_max) {
        const int64_t kc = std::min<int64_t>(isa.kc_max, g.d - k0);
        gemm::MacroArgs m;
        m.a_direct = qp + (b * g.m + i0) * g.d + k0;
        m.lda = g.d;
        m.b = packed_b(pb, g, nr, b, k0) + (j0 / nr) * kc * nr;
        m.b_panel_stride = kc * nr;
        m.ldb = nr;
        m.m = rows, m.n = tn, m.kc = kc;
        m.y = tile;
        m.ldy = kTileColumns;
        m.accumulate = k0 > 0;
        m.epilogue = k0 + kc >= g.d ? &epilogue : nullptr;
        isa.macro(m);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t limit = a.causal ? std::min(tn, i0 + r + off + 1 - j0) : tn;
        if (limit <= 0) continue;
        RowTopk row{cand + r * g.cap, thr + r, count + r, g.k, g.cap};
        row.offer(tile + r * kTileColumns, j0, limit, mrow);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      RowTopk row{cand + r * g.cap, thr + r, count + r, g.k, g.cap};
      if (*row.count > g.k) row.compact();
      std::sort(row.cand, row.cand + *row.count, std::greater<uint64_t>());
      int64_t slots = *row.count;
      if (row_k != nullptr) {
        const int64_t cols = row_k->desc.dim(1);
        const int32_t* rk = row_k->ptr<const int32_t>() + (row_k->desc.dim(0) == 1 ? 0 : b) * cols;
        slots = std::min<int64_t>(slots, rk[cols == 1 ? 0 : i0 + r]);
      }
      int32_t* o = out + ((b * g.m) + i0 + r) * g.k;
      for (int64_t s = 0; s < g.k; ++s) o[s] = s < slots ? composite_index(row.cand[s]) : -1;
    }
  };
  if (g.chunks == 1) {
    for (int64_t blk = 0; blk < g.blocks; ++blk) run_block(blk, base + g.packed_b_bytes);
  } else {
    const auto* fn = &run_block;
    const Geometry* gp = &g;
    args.pool->parallel_for(g.chunks, 1, [fn, gp, base](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        for (int64_t blk = c; blk < gp->blocks; blk += gp->chunks)
          (*fn)(blk, base + gp->packed_b_bytes + c * gp->chunk_bytes);
    });
  }
  return {};
}

Result<std::shared_ptr<void>> prepare(const gemm::GemmIsaKernels& isa, const Graph& graph, const Node& node,
                                      ThreadPool* pool) {
  const auto& a = std::get<MatmulTopkAttrs>(node.attrs);
  auto state = std::make_shared<MatmulTopkState>();
  state->geometry = plan(isa, graph.value(node.inputs[0]).desc, graph.value(node.inputs[1]).desc, a.k,
                         pool != nullptr ? pool->num_threads() : 1);
  LR_ASSIGN_OR_RETURN(state->scratch, host::request_scratch(scratch_bytes(state->geometry)));
  return std::shared_ptr<void>(std::move(state));
}

}  // namespace

Status cpu_matmul_topk_f32_avx2(const KernelArgs& args) { return run(gemm::gemm_kernels_avx2(), args); }
Status cpu_matmul_topk_f32_avx512(const KernelArgs& args) { return run(gemm::gemm_kernels_avx512(), args); }

Result<std::shared_ptr<void>> cpu_matmul_topk_prepare_avx2(const Graph& graph, const Node& node,
                                                           ThreadPool* pool) {
  return prepare(gemm::gemm_kernels_avx2(), graph, node, pool);
}
Result<std::shared_ptr<void>> cpu_matmul_topk_prepare_avx512(const Graph& graph, const Node& node,
                                                             ThreadPool* pool) {
  return prepare(gemm::gemm_kernels_avx512(), graph, node, pool);
}

}  // namespace longrun::cpu
