// AVX-512 instantiation of the spectral kernels' inner loops (dct_impl.h; dct.h): 8 complex
// values per vector, 8 x 8 transposes of doubles, k-masked loads throughout.
#include "cpu/dct_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu::dct_detail {

const DctLoops kDctLoopsAvx512 = DctKernels<avx512::Vec>::kTable;

}  // namespace longrun::cpu::dct_detail
