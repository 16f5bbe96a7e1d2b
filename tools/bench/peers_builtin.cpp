// The peers that need no other library: memcpy, store_copy, std::sort top-k, another longrun
// graph.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>
#include <thread>
#include <utility>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/gemm_s8.h"
#include "graph_run.h"
#include "longrun/thread_pool.h"
#include "machine_probes.h"
#include "peers.h"

namespace longrun::bench {
namespace {

// Splits [0, count) into `parts` contiguous ranges; part i is [begin, end).
std::pair<int64_t, int64_t> part_range(int64_t count, int64_t parts, int64_t i) {
  return {count * i / parts, count * (i + 1) / parts};
}

// A copy of bytes / 2 split in one contiguous chunk per thread, by `copy` (dst, src, bytes).
PeerFactory copy_peer(std::string name, void (*copy)(std::byte*, const std::byte*, size_t), double bytes) {
  PeerFactory f;
  f.name = name;
  f.make = [name, copy, bytes](const Engine& engine) -> Result<PeerRun> {
    struct State {
      BufferPtr src, dst;
      std::unique_ptr<ThreadPool> pool;
    };
    auto st = std::make_shared<State>();
    const size_t n = size_t(bytes / 2) / sizeof(float) * sizeof(float);
    try {
      st->src = std::make_shared<HostBuffer>(n);
      st->dst = std::make_shared<HostBuffer>(n);
    } catch (const std::bad_alloc&) {
      return out_of_memory(name + " peer: cannot allocate 2 x " + std::to_string(n) + " bytes");
    }
    std::memset(st->src->data(), 1, n);  // first-touch page faults stay out of the timing
    std::memset(st->dst->data(), 0, n);
    LR_ASSIGN_OR_RETURN(st->pool, make_thread_pool(engine.threads));
    const int64_t parts = st->pool->num_threads();
    PeerRun r;
    r.name = name;
    r.run = [s = st.get(), n, parts, copy]() -> Status {
      // One chunk per thread (chunk count = min(n, 4 * threads) with grain 1, n = threads),
      // each a whole number of floats.
      const int64_t floats = int64_t(n / sizeof(float));
      s->pool->parallel_for(parts, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const auto [lo, hi] = part_range(floats, parts, i);
          const size_t off = size_t(lo) * sizeof(float);
          copy(s->dst->data() + off, s->src->data() + off, size_t(hi - lo) * sizeof(float));
        }
      });
      return {};
    };
    r.state = st;
    return r;
  };
  return f;
}

void libc_copy(std::byte* dst, const std::byte* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void vector_store_copy(std::byte* dst, const std::byte* src, size_t bytes) {
  probes::store_copy(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src),
                     int64_t(bytes / sizeof(float)));
}

}  // namespace

PeerFactory memcpy_peer(double bytes) { return copy_peer("memcpy", &libc_copy, bytes); }
PeerFactory store_copy_peer(double bytes) { return copy_peer("store_copy", &vector_store_copy, bytes); }

PeerFactory sort_topk_peer(BufferPtr x, int64_t rows, int64_t cols, int64_t k) {
  PeerFactory f;
  f.name = "std::sort";
  f.make = [x = std::move(x), rows, cols, k](const Engine& engine) -> Result<PeerRun> {
    struct State {
      std::unique_ptr<ThreadPool> pool;
      std::vector<std::vector<std::pair<float, int32_t>>> keys;  // one scratch row per part
      std::vector<int32_t> out;
    };
    auto st = std::make_shared<State>();
    LR_ASSIGN_OR_RETURN(st->pool, make_thread_pool(engine.threads));
    const int64_t parts = st->pool->num_threads();
    try {
      st->keys.assign(size_t(parts), std::vector<std::pair<float, int32_t>>(size_t(cols)));
      st->out.assign(size_t(rows * k), 0);
    } catch (const std::bad_alloc&) {
      return out_of_memory("std::sort peer: cannot allocate its scratch");
    }
    PeerRun r;
    r.name = "std::sort";
    r.run = [s = st.get(), src = x->f32(), rows, cols, k, parts]() -> Status {
      s->pool->parallel_for(parts, 1, [&](int64_t b, int64_t e) {
        for (int64_t part = b; part < e; ++part) {
          auto& keys = s->keys[size_t(part)];
          const auto [r0, r1] = part_range(rows, parts, part);
          for (int64_t row = r0; row < r1; ++row) {
            const float* v = src + row * cols;
            for (int64_t j = 0; j < cols; ++j) keys[size_t(j)] = {v[j], int32_t(j)};
            std::sort(keys.begin(), keys.end(), [](const auto& p, const auto& q) {
              return p.first > q.first || (p.first == q.first && p.second < q.second);
            });
            int32_t* o = s->out.data() + row * k;
            for (int64_t j = 0; j < k; ++j) o[j] = keys[size_t(j)].second;
          }
        }
      });
      return {};
    };
    r.state = st;
    return r;
  };
  return f;
}

PeerFactory int8_gemm_peer(BufferPtr x, BufferPtr w, int64_t m, int64_t n, int64_t k) {
  PeerFactory f;
  f.name = "int8";
  f.make = [x = std::move(x), w = std::move(w), m, n, k](const Engine& engine) -> Result<PeerRun> {
    if (int(cpu::detect_isa()) < int(cpu::Isa::avx2)) return unsupported("int8 peer: needs AVX2");
    struct State {
      std::unique_ptr<ThreadPool> pool;
      cpu::s8::PackedWeightS8 packed;
      std::vector<float> y;
      std::vector<float> scratch;  // the quantized A, as a session's prepared scratch holds it
    };
    auto st = std::make_shared<State>();
    LR_ASSIGN_OR_RETURN(st->pool, make_thread_pool(engine.threads));
    try {
      LR_ASSIGN_OR_RETURN(cpu::s8::QuantizedWeight qw,
                          ops::s8::quantize_weight(w->f32(), DType::f32, ops::LinearWeight::nk, n, k));
      LR_ASSIGN_OR_RETURN(st->packed, cpu::s8::pack_weight_s8x16(qw));
      st->y.assign(size_t(m * n), 0.0f);
      LR_ASSIGN_OR_RETURN(const int64_t scratch_bytes, cpu::s8::gemm_s8_scratch_bytes(m, k));
      st->scratch.assign(size_t(scratch_bytes / 4 + 1), 0.0f);
    } catch (const std::bad_alloc&) {
      return out_of_memory("int8 peer: cannot allocate the packed weight and output");
    }
    PeerRun r;
    r.name = "int8";
    r.run = [s = st.get(), src = x->f32(), m, k]() -> Status {
      return cpu::s8::gemm_s8_avx2(src, m, k, s->packed, s->y.data(), s->packed.n, nullptr, s->pool.get(),
                                   s->scratch.data(), int64_t(s->scratch.size() * sizeof(float)));
    };
    r.state = st;
    return r;
  };
  return f;
}

PeerFactory bf16_gemm_peer(BufferPtr x, BufferPtr w, int64_t m, int64_t n, int64_t k) {
  PeerFactory f;
  f.name = "bf16";
  f.make = [x = std::move(x), w = std::move(w), m, n, k](const Engine& engine) -> Result<PeerRun> {
    if (int(cpu::detect_isa()) < int(cpu::Isa::avx2)) return unsupported("bf16 peer: needs AVX2");
    struct State {
      std::unique_ptr<ThreadPool> pool;
      cpu::bf16::PackedWeightBF16 packed;
      std::vector<float> y;
    };
    auto st = std::make_shared<State>();
    LR_ASSIGN_OR_RETURN(st->pool, make_thread_pool(engine.threads));
    try {
      LR_ASSIGN_OR_RETURN(ops::bf16::RoundedWeight rw,
                          ops::bf16::round_weight(w->f32(), DType::f32, ops::LinearWeight::nk, n, k));
      LR_ASSIGN_OR_RETURN(st->packed, cpu::bf16::pack_weight_bf16x16(rw));
      st->y.assign(size_t(m * n), 0.0f);
    } catch (const std::bad_alloc&) {
      return out_of_memory("bf16 peer: cannot allocate the packed weight and output");
    }
    PeerRun r;
    r.name = "bf16";
    r.run = [s = st.get(), src = x->f32(), m, k]() -> Status {
      return cpu::bf16::gemm_bf16_avx2(src, m, k, s->packed, s->y.data(), s->packed.n, nullptr,
                                       s->pool.get());
    };
    r.state = st;
    return r;
  };
  return f;
}

PeerFactory graph_peer(std::string name, Graph graph, std::vector<TensorView> inputs,
                       std::vector<BufferPtr> owners) {
  PeerFactory f;
  f.name = name;
  f.uses_engine = true;
  auto shared = std::make_shared<std::tuple<Graph, std::vector<TensorView>, std::vector<BufferPtr>>>(
      std::move(graph), std::move(inputs), std::move(owners));
  f.make = [name, shared](const Engine& engine) -> Result<PeerRun> {
    LR_ASSIGN_OR_RETURN(std::shared_ptr<GraphRun> run,
                        GraphRun::create(std::get<0>(*shared), std::get<1>(*shared), engine));
    PeerRun r;
    r.name = name;
    r.run = [g = run.get()] { return g->run(); };
    // The inputs' owners must outlive the run: keep both.
    r.state = std::make_shared<std::pair<std::shared_ptr<GraphRun>, decltype(shared)>>(run, shared);
    return r;
  };
  return f;
}

std::vector<std::string> external_peer_descriptions() {
  std::vector<std::string> all = blas_peer_descriptions();
  for (std::string& s : fftw_peer_descriptions()) all.push_back(std::move(s));
  return all;
}

void settle_after_external_peer() {
  // OpenBLAS workers spin for about 2^28 cycles (its THREAD_TIMEOUT default) and libgomp's
  // for its spin count before sleeping; 250 ms covers both on any current CPU.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

}  // namespace longrun::bench
