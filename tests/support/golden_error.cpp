#include "support/golden_error.h"

#include <algorithm>
#include <cmath>

namespace longrun::golden {

Error measure(std::span<const float> actual, std::span<const float> expected) {
  Error e;
  double d2 = 0, b2 = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double a = actual[i], b = expected[i];
    if (!std::isfinite(a)) e.finite = false;
    d2 += (a - b) * (a - b);
    b2 += b * b;
    e.max_abs = std::max(e.max_abs, std::abs(a - b));
  }
  e.norm_err = b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2);
  if (!e.finite) e.norm_err = e.max_abs = INFINITY;
  return e;
}

}  // namespace longrun::golden
