// The ISA kernels of the machine check (machine_check.h), one set per ISA file
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

}  // namespace longrun::bench::probes
