// Reference kernel of embedding: out[ids..., d] = table[ids[ids...], d], ids bounds-checked.
#include <string>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {

Status reference_embedding(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::embedding, args));
  const TensorView& table = args.inputs[0];
  const TensorView& ids = args.inputs[1];
  const TensorView& out = args.outputs[0];
  const int64_t V = table.desc.dim(0), D = table.desc.dim(1);

  // Ids come from user data: check them all before writing anything, so that a bad id
  // leaves the output untouched and the error names the first offending position.
  Status st;
  ref::for_each_index(ids.desc.dims(), [&](std::span<const int64_t> idx) {
    const int64_t id = ref::load_int(ids, ref::offset_of(ids.desc, idx));
    if (st.ok() && (id < 0 || id >= V))
      st = out_of_range("embedding: input 1 (ids " + ids.desc.to_string() + ") at " + ref::index_string(idx) +
                        ": id " + std::to_string(id) + " out of range [0, " + std::to_string(V) + ")");
  });
  LR_RETURN_IF_ERROR(st);

  const int out_axis = out.desc.rank() - 1;
  ref::for_each_index(ids.desc.dims(), [&](std::span<const int64_t> idx) {
    const int64_t row = ref::load_int(ids, ref::offset_of(ids.desc, idx)) * table.desc.stride(0);
    std::vector<int64_t> pos(idx.begin(), idx.end());
    pos.push_back(0);
    const int64_t o0 = ref::offset_of(out.desc, pos);
    for (int64_t d = 0; d < D; ++d)
      ref::store(out, o0 + d * out.desc.stride(out_axis), ref::load(table, row + d * table.desc.stride(1)));
  });
  return {};
}

}  // namespace longrun
