// DCT peers: FFTW's own REDFT10 (DCT-II) and REDFT01 (DCT-III), compiled in when CMake found
// fftw3f and fftw3f_threads (LONGRUN_BENCH_HAVE_FFTW).
//
// One fftwf_plan_many_r2r does all columns of x [n, cols] along axis 0 (stride cols,
// distance 1), in place, planned with FFTW_MEASURE (which overwrites the array, so the
// data is copied in afterwards and before every run, untimed). FFTW's transforms are
// unnormalised: the orthonormal scaling longrun applies is one more pass FFTW does not do.
// Threads: fftwf_plan_with_nthreads(T) while planning; it is set back to 1 afterwards so
// that plans made elsewhere in the process are not affected.
#include <cstring>
#include <new>

#include "peers.h"

#if LONGRUN_BENCH_HAVE_FFTW
#include <fftw3.h>
#endif

namespace longrun::bench {

#if LONGRUN_BENCH_HAVE_FFTW
namespace {

PeerFactory fftw_dct_peer(const DctProblem& p) {
  PeerFactory f;
  f.name = "fftw";
  f.external = true;
  f.make = [p](const Engine& engine) -> Result<PeerRun> {
    static const bool threads_ok = fftwf_init_threads() != 0;
    if (!threads_ok) return internal_error("fftwf_init_threads failed");
    struct State {
      BufferPtr work;
      fftwf_plan plan = nullptr;
      ~State() {
        if (plan) fftwf_destroy_plan(plan);
      }
    };
    auto st = std::make_shared<State>();
    const size_t bytes = size_t(p.n * p.cols) * sizeof(float);
    try {
      st->work = std::make_shared<HostBuffer>(bytes);
    } catch (const std::bad_alloc&) {
      return out_of_memory("fftw peer: cannot allocate its buffer");
    }
    const int n = int(p.n);
    const fftwf_r2r_kind kind = p.inverse ? FFTW_REDFT01 : FFTW_REDFT10;
    float* w = st->work->f32();
    fftwf_plan_with_nthreads(engine.threads);
    st->plan = fftwf_plan_many_r2r(1, &n, int(p.cols), w, nullptr, int(p.cols), 1, w, nullptr, int(p.cols), 1,
                                   &kind, FFTW_MEASURE);
    fftwf_plan_with_nthreads(1);
    if (!st->plan) return internal_error("fftwf_plan_many_r2r returned no plan");
    PeerRun r;
    r.name = "fftw";
    r.reset = [w, src = p.x->f32(), bytes] { std::memcpy(w, src, bytes); };
    r.run = [plan = st->plan]() -> Status {
      fftwf_execute(plan);
      return {};
    };
    r.state = st;
    return r;
  };
  return f;
}

}  // namespace
#endif

std::vector<PeerFactory> dct_peers([[maybe_unused]] const DctProblem& problem) {
#if LONGRUN_BENCH_HAVE_FFTW
  return {fftw_dct_peer(problem)};
#else
  return {};
#endif
}

std::vector<std::string> fftw_peer_descriptions() {
#if LONGRUN_BENCH_HAVE_FFTW
  return {std::string("fftw: ") + fftwf_version + " REDFT10/REDFT01 (threads: fftwf_plan_with_nthreads)"};
#else
  return {};
#endif
}

}  // namespace longrun::bench
