// Peers: what longrun's time is compared with in the same run, on the same inputs and with
// the same thread count. Built-in peers are always there (memcpy of the same bytes, a full
// std::sort for top-k, another longrun graph); external ones (OpenBLAS, oneDNN, FFTW) are
// compiled in only when CMake found them (LONGRUN_BENCH_PEERS, see
// third_party/cmake/longrun_bench_peers.cmake) and are linked into longrun-bench alone.
#pragma once

#include <string>
#include <vector>

#include "bench_case.h"

namespace longrun::bench {

// C[b] = A[b] * op(B[b]) for b < batch, row-major, alpha 1, beta 0. A is [batch, m, k];
// B is [n, k] with trans_b, else [k, n], one per batch or one shared (a weight).
struct GemmProblem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_b = false;
  bool shared_b = false;
  BufferPtr a, b;
};
// cblas_sgemm (OpenBLAS) and dnnl_sgemm (oneDNN), those compiled in; a batch is a loop.
std::vector<PeerFactory> gemm_peers(const GemmProblem& problem);

// The int8 GEMM kernel layer (backends/cpu/gemm_s8.h) on the same x [m, k] and weight
// W [n, k] (y = x · Wᵀ): W quantized and packed once, untimed; each run quantizes x per row
// and multiplies (AVX2; unsupported below it). Named "int8": a different precision, so its
// time is a target for the int8 path, not a like-for-like f32 peer.
PeerFactory int8_gemm_peer(BufferPtr x, BufferPtr w, int64_t m, int64_t n, int64_t k);
// The bf16 GEMM kernel layer (backends/cpu/gemm_bf16.h) likewise: W rounded to bf16 and
// packed once, untimed; each run rounds x and multiplies (AVX2). Named "bf16".
PeerFactory bf16_gemm_peer(BufferPtr x, BufferPtr w, int64_t m, int64_t n, int64_t k);

// FFTW's unnormalised DCT-II (inverse: DCT-III) along axis 0 of x [n, cols] (one transform
// of stride cols per column), in place: FFTW REDFT10 / REDFT01 via fftwf_plan_many_r2r, planned with
// FFTW_MEASURE outside the timed region; each timed run starts from a fresh copy of x (untimed).
struct DctProblem {
  int64_t n = 0, cols = 0;
  bool inverse = false;
  BufferPtr x;
};
std::vector<PeerFactory> dct_peers(const DctProblem& problem);

// memcpy of bytes / 2 (so that bytes read + written equal `bytes`, the op's traffic),
// split in `threads` contiguous chunks.
PeerFactory memcpy_peer(double bytes);
// The same copy with ordinary vector stores (probes::store_copy), which read every
// destination line before writing it as the op's own kernel does; glibc's memcpy (rep movsb
// on ERMS/FSRM cores) writes whole lines without reading them. The ceiling of an op that
// writes through the cache, where memcpy is the ceiling of any copy.
PeerFactory store_copy_peer(double bytes);

// Top-k by a full per-row std::sort of (value, index) keys (descending value, ascending
// index), writing the first k indices as i32. Rows are split over the threads.
PeerFactory sort_topk_peer(BufferPtr x, int64_t rows, int64_t cols, int64_t k);

// Another longrun graph on the same engine (e.g. dense attention on the sparse case's
// inputs). `inputs` are bound in Graph::inputs() order; `owners` keep their memory alive.
PeerFactory graph_peer(std::string name, Graph graph, std::vector<TensorView> inputs,
                       std::vector<BufferPtr> owners);

// One line per external peer library compiled in, with its version and threading, e.g.
// "openblas: OpenBLAS 0.3.21 DYNAMIC_ARCH ... (threads: openblas_set_num_threads)".
std::vector<std::string> external_peer_descriptions();
std::vector<std::string> blas_peer_descriptions();  // peers_blas.cpp
std::vector<std::string> fftw_peer_descriptions();  // peers_fftw.cpp

// Lets the worker threads of external libraries go idle (OpenBLAS and OpenMP spin for a
// while after a call) so that they do not steal cores from the next measurement.
void settle_after_external_peer();

}  // namespace longrun::bench
