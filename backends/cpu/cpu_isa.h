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
// is unknown. Tests lower it. An output of exactly the cache's size already gains from
// streaming; a smaller one may still be found in the cache by its next reader.
int64_t& stream_min_bytes();
// True when an output of `bytes` bytes in rows of `row_floats` floats starting at `y` can be
// streamed by whole 64-byte vectors: large enough (stream_min_bytes()), y on a cache line,
// every row a whole number of lines.
bool rows_streamable(const void* y, int64_t row_floats, int64_t bytes);

}  // namespace longrun::cpu
