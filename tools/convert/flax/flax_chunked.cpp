// Reassembly of Flax chunked arrays with checked sizes.
#include "flax_chunked.h"

#include <cstring>
#include <new>

#include "longrun/checked_math.h"

namespace longrun::checkpoint {
namespace {

Status chunk_error(const std::string& what) { return format_error("chunked array: " + what); }

// "0", "1", ... without leading zeros or signs; nullopt otherwise.
std::optional<uint64_t> parse_index(std::string_view s) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  return v;
}

// Orders the values of a map keyed "0".."n-1" (in any order, as flax's _dict_to_tuple reads
// them) by index.
Result<std::vector<const FlaxNode*>> indexed_values(const FlaxDict& d, std::string_view field) {
  std::vector<const FlaxNode*> out(d.keys.size(), nullptr);
  for (size_t i = 0; i < d.keys.size(); ++i) {
    const auto idx = parse_index(d.keys[i]);
    if (!idx || *idx >= out.size())
      return chunk_error("'" + std::string(field) + "' keys must be \"0\"..\"" +
                         std::to_string(out.size() - 1) + "\", found '" + d.keys[i] + "'");
    out[size_t(*idx)] = &d.values[i];  // keys are unique, so every slot is filled once
  }
  return out;
}

}  // namespace

Result<FlaxTensor> join_chunked_array(const FlaxDict& d, const FlaxLimits& limits) {
  const FlaxNode* marker = d.find(kChunkedMarker);
  const FlaxNode* shape_node = d.find("shape");
  const FlaxNode* chunks_node = d.find("chunks");
  for (const std::string& k : d.keys)
    if (k != kChunkedMarker && k != "shape" && k != "chunks")
      return chunk_error("unexpected key '" + k + "'");
  if (marker == nullptr || !marker->scalar() || marker->scalar()->kind != FlaxScalar::Kind::boolean ||
      !marker->scalar()->b)
    return chunk_error("'__msgpack_chunked_array__' must be true");
  if (shape_node == nullptr || !shape_node->dict()) return chunk_error("missing 'shape' map");
  if (chunks_node == nullptr || !chunks_node->dict()) return chunk_error("missing 'chunks' map");

  FlaxTensor x;
  if (shape_node->dict()->keys.size() > limits.max_rank)
    return Status(StatusCode::out_of_range, "chunked array: rank " +
                                                std::to_string(shape_node->dict()->keys.size()) +
                                                " exceeds the limit of " + std::to_string(limits.max_rank));
  LR_ASSIGN_OR_RETURN(const auto dims, indexed_values(*shape_node->dict(), "shape"));
  for (size_t i = 0; i < dims.size(); ++i) {
    const FlaxScalar* s = dims[i]->scalar();
    if (s == nullptr || s->kind != FlaxScalar::Kind::integer || s->i < 0)
      return chunk_error("shape[" + std::to_string(i) + "] is not a non-negative integer");
    x.shape.push_back(s->i);
  }
  int64_t numel = 0;
  if (!checked_product(x.shape, &numel)) return overflow_error("chunked array: element count overflows");

  LR_ASSIGN_OR_RETURN(const auto chunks, indexed_values(*chunks_node->dict(), "chunks"));
  if (chunks.empty()) return chunk_error("'chunks' is empty");
  uint64_t total = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const FlaxTensor* c = chunks[i]->tensor();
    if (c == nullptr) return chunk_error("chunk " + std::to_string(i) + " is not an ndarray");
    if (c->shape.size() != 1)
      return chunk_error("chunk " + std::to_string(i) + " has rank " + std::to_string(c->shape.size()) +
                         ", expected a flat (rank-1) array");
    if (c->dtype != chunks[0]->tensor()->dtype)
      return chunk_error("chunk " + std::to_string(i) + " has dtype '" +
                         std::string(flax_dtype_name(c->dtype)) + "' but chunk 0 has '" +
                         std::string(flax_dtype_name(chunks[0]->tensor()->dtype)) + "'");
    if (!checked_add(total, uint64_t(c->shape[0]), &total))
      return overflow_error("chunked array: chunk element counts overflow");
  }
  x.dtype = chunks[0]->tensor()->dtype;
  if (total != uint64_t(numel))
    return chunk_error("chunks hold " + std::to_string(total) + " elements but the shape needs " +
                       std::to_string(numel));
  uint64_t nbytes = 0;
  if (!checked_mul(total, flax_dtype_size(x.dtype), &nbytes))
    return overflow_error("chunked array: byte size overflows");
  if (nbytes > limits.max_chunked_bytes)
    return Status(StatusCode::out_of_range, "chunked array: " + std::to_string(nbytes) +
                                                " bytes exceed the limit of " +
                                                std::to_string(limits.max_chunked_bytes));
  try {
    auto joined = std::make_shared<std::vector<std::byte>>(size_t(nbytes));
    size_t at = 0;
    for (const FlaxNode* n : chunks) {
      const auto b = n->tensor()->bytes;
      if (!b.empty()) std::memcpy(joined->data() + at, b.data(), b.size());
      at += b.size();
    }
    x.bytes = *joined;
    x.owned = std::move(joined);
  } catch (const std::bad_alloc&) {
    return out_of_memory("chunked array: cannot allocate " + std::to_string(nbytes) + " bytes");
  }
  return x;
}

}  // namespace longrun::checkpoint
