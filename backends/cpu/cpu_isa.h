// Run-time ISA detection for the cpu backend: CPUID for the instruction sets and XGETBV for
// the OS saving the registers (an AVX-512 CPU under an OS that does not enable ZMM state
// must not run AVX-512 code).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace longrun::cpu {

enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2 };  // avx2 = AVX2+FMA+F16C; avx512 = F/BW/DQ/VL

std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);
// The best level this machine and OS support.
Isa detect_isa();
// The size of one last-level data cache in bytes (Linux sysfs, cpu0's highest cache level;
// not glibc's sysconf, which reports ten times the L3 on some AMD VMs), or 0 when unknown.
// Read once.
int64_t last_level_cache_bytes();
// The size of cpu0's level-2 data (or unified) cache in bytes, per core on the machines we
// target (sysfs as above), or 0 when unknown. Read once.
int64_t l2_cache_bytes();
// Kernels write an output of at least this many bytes (whole, over its batches) with
// non-temporal stores where their layout allows (gemm, add/sub/mul, layer_norm): it cannot stay in the
// cache anyway, and its lines are then never read for ownership. Default: the size of the
// last-level cache (an output that large cannot share it with its inputs), never when that
// is unknown. Tests lower it. One byte more than the cache until session 25, when outputs of
// exactly its size gained from streaming on a Zen 5 VM (32 MiB L3; six alternating pairs of
// runs): 8 heads of [1024,64]·[1024,64]ᵀ (32 MiB of Y) took 0.73-0.95 of the time on 1
// thread and 0.67-0.94 on 2 (one 2-thread pair 1.49, a run without its second vCPU), medians
// of five runs 5.11 against 6.80 ms; add [16384,512] 0.49-0.72 on 1 thread; layer_norm
// [16384,512] 0.95-1.14 on 1 thread, within this VM's noise. At 19 MiB (Q·Kᵀ at N = 768)
// streaming was even, so the bound stays at the cache size.
int64_t& stream_min_bytes();
// True when an output of `bytes` bytes in rows of `row_floats` floats starting at `y` can be
// streamed by whole 64-byte vectors: large enough (stream_min_bytes()), y on a cache line,
// every row a whole number of lines.
bool rows_streamable(const void* y, int64_t row_floats, int64_t bytes);

}  // namespace longrun::cpu
