// AVX-512 instantiation of the cummax / cumsum / segment_max column scans (scan_impl.h, contract in
// scan.h): 16 columns per vector.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/scan_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu {
namespace {
struct ScanBlocksAvx512 {
  // 16 of the 32 zmm registers hold running values (compare results live in k registers).
  static constexpr int kFull = 16;
  // 256 columns per row step: 1 KB contiguous per row (few TLB pages per pass).
  static constexpr int kUnroll = 16;
};
}  // namespace

const ScanIsa kScanAvx512 = ScanKernels<avx512::Vec, ScanBlocksAvx512>::kTable;

}  // namespace longrun::cpu
