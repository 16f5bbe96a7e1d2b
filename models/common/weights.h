// Parameter tables and the weights bound from a model file.
//
// A family's parameter table is a list of ParamSpec built with the helpers below, which name
// tensors the way PyTorch modules do (nn.Linear: "<prefix>.weight" [out, in] and
// "<prefix>.bias" [out]; nn.LayerNorm: "<prefix>.weight"/"<prefix>.bias" [D]; nn.Embedding:
// "<prefix>.weight" [rows, D]). The blocks in blocks.h read the same names from the same
// prefixes, so a table and its builder cannot drift apart silently (Model also checks that
// the builder used every parameter).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/graph.h"
#include "longrun/safetensors.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun::models {

struct ParamSpec {
  std::string name;
  std::vector<int64_t> dims;
  // True when every op that reads it accepts f16/bf16 as stored (matmul B, layer_norm
  // gamma/beta, embedding table); otherwise such a weight is widened to f32 at load.
  bool half_ok = false;
};

void add_linear(std::vector<ParamSpec>* table, const std::string& prefix, int64_t out, int64_t in,
                bool bias = true);
void add_layer_norm(std::vector<ParamSpec>* table, const std::string& prefix, int64_t dim);
void add_embedding(std::vector<ParamSpec>* table, const std::string& prefix, int64_t rows, int64_t dim);

// One weight as the graph will see it.
struct BoundWeight {
  TensorDesc desc;                    // contiguous; f32, f16/bf16 where half_ok, or i8 (quantized)
  const void* data = nullptr;         // into the mapped file, or into `owner`'s copy
  std::shared_ptr<const void> owner;  // keeps the mapping (or the copy) alive, and the scales
  bool copied = false;
  // A weight stored quantized (docs/checkpoints.md#quantized-weights): desc is i8, data its q
  // in the mapped file, and these its per-output-channel scales (a checked copy).
  ChannelScales scales;
};

// The metadata key listing a file's quantized weights, and its one scheme.
inline constexpr const char* kQuantizationMetadataKey = "longrun.quantization";
inline constexpr const char* kQuantizationScheme = "int8-per-channel";
// The companion tensor holding a quantized weight's scales: "<weight>.scale".
inline constexpr const char* kScaleSuffix = ".scale";

class WeightStore {
 public:
  // Checks that `file` holds exactly the tensors of `table`: every name present, no other
  // tensor, a float dtype (F32/F16/BF16) and the table's shape. All problems are listed in
  // one format_error (up to 20, then a count), each naming the tensor with expected vs found.
  // f32 weights aligned to 4 bytes are used in place; half weights stay as stored where
  // half_ok (aligned to 2 bytes); anything else is copied (widened to f32) once. A weight
  // listed in the file's longrun.quantization is checked (I8 q of the table's shape, in
  // [-127, 127]; "<name>.scale" F32 [channels], finite, >= 0) and bound as it is stored: i8
  // values in the file and their scales (backends dequantize where they need f32).
  static Result<WeightStore> bind(const std::shared_ptr<const SafetensorsFile>& file,
                                  std::span<const ParamSpec> table);

  const BoundWeight* find(std::string_view name) const;
  int64_t bytes() const { return bytes_; }
  int64_t bytes_copied() const { return bytes_copied_; }
  size_t size() const { return weights_.size(); }

 private:
  std::map<std::string, BoundWeight, std::less<>> weights_;
  int64_t bytes_ = 0;
  int64_t bytes_copied_ = 0;
};

}  // namespace longrun::models
