// AVX2 (+FMA) instantiation of the spectral kernels' inner loops (dct_impl.h; dct.h): 4
// complex values per vector, 4 x 4 transposes of doubles.
#include "cpu/dct_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu::dct_detail {

const DctLoops kDctLoopsAvx2 = DctKernels<avx2::Vec>::kTable;

}  // namespace longrun::cpu::dct_detail
