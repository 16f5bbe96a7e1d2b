// AVX2 instantiation of the cummax / cumsum / segment_max column scans (scan_impl.h, contract in
// scan.h): 8 columns per vector.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/scan_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu {
namespace {
struct ScanBlocksAvx2 {
  // 8 of the 16 ymm registers hold running values; the rest are the loads and compare masks.
  static constexpr int kFull = 8;
  static constexpr int kUnroll = 16;  // 128 columns per row step in the masked blocks
};
}  // namespace

const ScanIsa kScanAvx2 = ScanKernels<avx2::Vec, ScanBlocksAvx2>::kTable;

}  // namespace longrun::cpu
