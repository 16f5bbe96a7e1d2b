// GEMM peers: OpenBLAS cblas_sgemm and oneDNN dnnl_sgemm, each compiled in only when CMake
// found it (LONGRUN_BENCH_HAVE_OPENBLAS / LONGRUN_BENCH_HAVE_ONEDNN).
//
// Threads: OpenBLAS (Debian's libopenblas0-pthread) takes openblas_set_num_threads(T).
// Debian's oneDNN is built with the OpenMP CPU runtime (DNNL_CPU_RUNTIME = OMP, libgomp),
// so dnnl_sgemm uses omp_get_max_threads() of the calling thread: omp_set_num_threads(T)
// sets it. Both calls happen in the untimed reset before every run, as the two libraries
// share nothing and another peer may have changed the count in between.
#include <cstring>
#include <new>

#include "peers.h"

#if LONGRUN_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if LONGRUN_BENCH_HAVE_ONEDNN
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace longrun::bench {
namespace {

[[maybe_unused]] Result<BufferPtr> zeroed_output(const GemmProblem& p) {
  try {
    auto c = std::make_shared<HostBuffer>(size_t(p.batch * p.m * p.n) * sizeof(float));
    std::memset(c->data(), 0, c->size());
    return c;
  } catch (const std::bad_alloc&) {
    return out_of_memory("gemm peer: cannot allocate the output");
  }
}

// Row-major offsets of batch b's operands.
[[maybe_unused]] const float* a_of(const GemmProblem& p, int64_t b) { return p.a->f32() + b * p.m * p.k; }
[[maybe_unused]] const float* b_of(const GemmProblem& p, int64_t b) {
  return p.b->f32() + (p.shared_b ? 0 : b * p.k * p.n);
}

#if LONGRUN_BENCH_HAVE_OPENBLAS
PeerFactory openblas_peer(const GemmProblem& p) {
  PeerFactory f;
  f.name = "openblas";
  f.external = true;
  f.make = [p](const Engine& engine) -> Result<PeerRun> {
    LR_ASSIGN_OR_RETURN(BufferPtr c, zeroed_output(p));
    PeerRun r;
    r.name = "openblas";
    r.reset = [t = engine.threads] { openblas_set_num_threads(t); };
    r.run = [p, out = c->f32()]() -> Status {
      const int ldb = int(p.trans_b ? p.k : p.n);
      for (int64_t b = 0; b < p.batch; ++b)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans, int(p.m), int(p.n),
                    int(p.k), 1.0f, a_of(p, b), int(p.k), b_of(p, b), ldb, 0.0f, out + b * p.m * p.n,
                    int(p.n));
      return {};
    };
    r.state = c;
    return r;
  };
  return f;
}
#endif

#if LONGRUN_BENCH_HAVE_ONEDNN
PeerFactory onednn_peer(const GemmProblem& p) {
  PeerFactory f;
  f.name = "onednn";
  f.external = true;
  f.make = [p](const Engine& engine) -> Result<PeerRun> {
    LR_ASSIGN_OR_RETURN(BufferPtr c, zeroed_output(p));
    PeerRun r;
    r.name = "onednn";
    r.reset = [t = engine.threads] { omp_set_num_threads(t); };
    r.run = [p, out = c->f32()]() -> Status {
      const dnnl_dim_t ldb = p.trans_b ? p.k : p.n;
      for (int64_t b = 0; b < p.batch; ++b) {
        const dnnl_status_t s = dnnl_sgemm('N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, 1.0f, a_of(p, b), p.k,
                                           b_of(p, b), ldb, 0.0f, out + b * p.m * p.n, p.n);
        if (s != dnnl_success)
          return internal_error("dnnl_sgemm failed with status " + std::to_string(int(s)));
      }
      return {};
    };
    r.state = c;
    return r;
  };
  return f;
}
#endif

}  // namespace

std::vector<PeerFactory> gemm_peers([[maybe_unused]] const GemmProblem& problem) {
  std::vector<PeerFactory> peers;
#if LONGRUN_BENCH_HAVE_OPENBLAS
  peers.push_back(openblas_peer(problem));
#endif
#if LONGRUN_BENCH_HAVE_ONEDNN
  peers.push_back(onednn_peer(problem));
#endif
  return peers;
}

std::vector<std::string> blas_peer_descriptions() {
  std::vector<std::string> d;
#if LONGRUN_BENCH_HAVE_OPENBLAS
  d.push_back(std::string("openblas: ") + openblas_get_config() + " (threads: openblas_set_num_threads)");
#endif
#if LONGRUN_BENCH_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  d.push_back(
      "onednn: oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
      std::to_string(v->patch) + " dnnl_sgemm (threads: " +
      (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP, omp_set_num_threads)" : "its own runtime, not set)"));
#endif
  return d;
}

}  // namespace longrun::bench
