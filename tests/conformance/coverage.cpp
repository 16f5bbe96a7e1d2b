#include "conformance/coverage.h"

#include <array>

namespace longrun::conformance {

OpTally& tally(OpKind op) {
  static std::array<OpTally, kNumOps> t{};
  return t[size_t(op)];
}

}  // namespace longrun::conformance
