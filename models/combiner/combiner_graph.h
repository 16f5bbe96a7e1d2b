// Graph pieces the Combiner attention forms are built from (docs/models.md#combiner): host constants
// (index masks), masking by `where`, the "one softmax over direct and
// summary logits" combination, and the prefix/segment pooling along rows or columns.
//
// Layouts. A head tensor [B, H, N, hd] with N = n * s is viewed blocked as "rows"
// [B, H, n, s, hd] (position i = u * s + t: row u, column t) or transposed as "cols"
// [B, H, s, n, hd]. Masks are u8 "keep" tensors (1 = the slot takes part) that broadcast to
// the logits they mask; a masked slot becomes -inf, which the softmax turns into an exact 0
// weight (a fully masked row gives zeros, never NaN), as the official -1e10 / -1e9 do in f32.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/architecture.h"

namespace longrun::models::combiner {

// A host-computed constant, kept alive by the graph. dims: any rank <= 3 (leading 1s are
// fine for broadcasting); keep(i0, i1, i2) gets the index padded on the left with zeros.
ValueId keep_mask(GraphContext& c, const std::string& name, std::vector<int64_t> dims,
                  const std::function<bool(int64_t, int64_t, int64_t)>& keep);
ValueId constant_f32(GraphContext& c, const std::string& name, std::vector<int64_t> dims,
                     std::vector<float> data);

// where(keep, x, fill) for every keep in `keeps` that is not kNoValue. fill = -inf masks
// logits, 0 clears values.
ValueId masked(GraphContext& c, ValueId x, const std::vector<ValueId>& keeps, float fill,
               const std::string& name);

ValueId matmul_nt(GraphContext& c, ValueId a, ValueId b, const std::string& name);  // a b^T
ValueId matmul_nn(GraphContext& c, ValueId a, ValueId b, const std::string& name);  // a b
// Swaps the two axes before the last of a rank-5 tensor (rows <-> cols layout).
ValueId swap_blocks(GraphContext& c, ValueId x);

// softmax(masked(q k^T)) v: plain attention of (batched) queries on their own keys. Used
// for the local expectations E_Omega and the axial within-row attention.
ValueId attend(GraphContext& c, ValueId q, ValueId k, ValueId v, const std::vector<ValueId>& keeps,
               const std::string& name);

// One group of slots of the joint softmax. rows layout: logits = Q_rows key^T with key
// [.., G, hd] broadcasting to [B, H, n, ., hd] and the weights multiply `value` the same way.
// cols layout: the same with Q_cols [B, H, s, n, hd] (logits [B, H, s, n, G]). keeps
// broadcast to the group's logits in its own layout.
struct SlotGroup {
  bool cols = false;
  ValueId key = kNoValue;
  ValueId value = kNoValue;
  std::vector<ValueId> keeps;
  std::string name;
};
// The Combiner attention: every group's logits go into ONE softmax per query (concatenated
// along the slot axis), out = sum over groups of weights @ values, as [B, H, n, s, hd].
// q_cols is read only by cols-layout groups (kNoValue when there is none).
ValueId combine(GraphContext& c, ValueId q_rows, ValueId q_cols, const std::vector<SlotGroup>& groups,
                const std::string& name);

enum class Pooling { max, sum };
// The exclusive prefix pooling over a partition that docs/models.md#combiner-mixture calls shift(cummax):
// along `axis` (a positive axis of x), y[j] pools x over indices < j (reverse: > j); an empty partition gives
// 0 (JAX shift_right/shift_left pad with 0). max uses the cummax op; sum (the TF "approx_cummax", which is a
// cumsum) the exclusive cumsum op (f32, in order along axis).
ValueId exclusive_pool(GraphContext& c, ValueId x, int axis, bool reverse, Pooling pooling,
                       const std::string& name);

}  // namespace longrun::models::combiner
