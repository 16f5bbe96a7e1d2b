// The ISA kernels of the machine check (machine_check.h) and of the store_copy peer
// (peers.h), one set per ISA file
// (machine_probes_avx2.cpp, machine_probes_avx512.cpp, each compiled with its own flags).
// Each returns a value derived from its work so that the work cannot be optimised away.
#pragma once

#include <cstdint>

namespace longrun::bench::probes {

// A chain of `iters` dependent scalar FMAs (4 cycles each on every x86 core with FMA this
// project has met: Zen 3/4/5, Golden Cove): wall time / (4 iters) is the core's clock.
double fma_chain_avx2(int64_t iters);

// 12 independent vector FMA chains, `iters` steps each: 12 * iters FMAs of 8 (AVX2) or 16
// (AVX-512) lanes, enough chains to fill two FMA pipes of latency 4 or 5.
float fma_throughput_avx2(int64_t iters);
float fma_throughput_avx512(int64_t iters);

// Sums rows[idx[i]] (64 floats each) weighted by w[i] over i < n, two rows at a time into
// two accumulator sets: the inner loop of sparse attention's second pass. With the rows in L1
// this costs two cycles per row on a core with two free 512-bit FMA pipes.
float row_gather_avx2(const float* rows, const int32_t* idx, const float* w, int64_t n);
float row_gather_avx512(const float* rows, const int32_t* idx, const float* w, int64_t n);

// dst[i] = src[i] for i < n with ordinary vector loads and stores: a copy that, unlike
// glibc's memcpy (rep movsb, which writes whole lines without reading them first, on cores
// with ERMS/FSRM), reads every destination line before writing it, as every kernel that
// writes through the cache does. The ceiling of such a kernel's bandwidth.
void store_copy_avx2(float* dst, const float* src, int64_t n);
void store_copy_avx512(float* dst, const float* src, int64_t n);
// The best of the two this machine runs, else a scalar loop.
void store_copy(float* dst, const float* src, int64_t n);

}  // namespace longrun::bench::probes
