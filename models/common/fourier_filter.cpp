#include "common/fourier_filter.h"

#include <algorithm>
#include <cmath>

#include "common/blocks.h"

namespace longrun::models {

ValueId filter_after_cls(GraphContext& c, ValueId x, int64_t* length, double ratio, const std::string& name) {
  const int64_t len = *length;
  const auto keep = int64_t(std::ceil(double(len) * ratio));
  const ValueId filtered = c.b.spectral_filter({slice(c, x, 1, 1, len)}, {.axis = 1, .keep = keep}, name);
  *length = 1 + std::min(keep, len - 1);
  return c.b.concat({slice(c, x, 1, 0, 1), filtered}, {.axis = 1}, name + ".cls");
}

ValueId filter_sequence(GraphContext& c, ValueId x, double ratio, const std::string& name) {
  if (!c.ok()) return kNoValue;
  const auto keep = int64_t(std::ceil(double(c.desc(x).dim(1)) * ratio));
  return c.b.spectral_filter({x}, {.axis = 1, .keep = keep}, name);
}

ValueId global_residual(GraphContext& c, const std::vector<ValueId>& inputs, ValueId last, int64_t length,
                        const std::string& name) {
  ValueId sum = inputs.front();
  for (size_t j = 1; j <= inputs.size(); ++j) {
    const ValueId term = j < inputs.size() ? inputs[j] : last;
    const ValueId up = c.b.upsample_nearest({term}, {.axis = 1, .size = length}, name + ".up");
    sum = c.b.add({sum, up}, {}, name);
  }
  return sum;
}

}  // namespace longrun::models
