// The machinery shared by the golden and the differential tests: build the one-op graph of
// a case in a mode, prepare it on a backend, execute it into an output with guard bytes, and
// compare two outputs under a tolerance (tolerances.h).
//
// Modes: the graph is inputs -> op -> output (inputs); the same with the op's conventional
// weight operands bound as graph weights, so prepare-time prepacking runs (weights: matmul B
// and bias, the embedding table, layer_norm gamma/beta); or, for ops whose schema allows
// in-place, input -> transpose(identity) -> op -> reshape(same dims) -> output, so the op
// reads an intermediate that dies there and the planner must give the op's output the same
// buffer (inplace; both extra nodes copy bits exactly).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/tolerances.h"
#include "longrun/backend.h"
#include "longrun/graph.h"
#include "longrun/ops/attrs.h"

namespace longrun::conformance {

enum class Mode { inputs, weights, inplace };
std::string_view mode_name(Mode mode);

// A 64-byte aligned byte buffer (kernels may use aligned loads on graph inputs).
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t n);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  std::byte* data_;
};

// One op application: attrs and the input tensors' descs and pristine bytes (contiguous).
struct OpCase {
  OpKind op = OpKind::matmul;
  OpAttrs attrs;
  std::vector<TensorDesc> descs;
  std::vector<std::span<const std::byte>> bytes;
};

// Which inputs are conventionally weights (bound as graph weights in Mode::weights).
std::vector<size_t> weight_inputs(OpKind op, const OpAttrs& attrs);

// "" when `mode` applies to the case, else why not (a skip, not a failure).
std::string mode_skip_reason(const OpCase& c, Mode mode);

// A case's graph prepared on one backend. The graph lives on the heap: the prepared state
// points into it.
struct PreparedCase {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Prepared> prepared;
  std::vector<std::shared_ptr<AlignedBuffer>> buffers;  // copies of every input
  std::vector<TensorView> in_views;                     // the graph inputs, in graph order
  TensorDesc out_desc;
};

// Builds, plans (checking in-place aliasing in Mode::inplace), checks support and prepares.
// Returns "" on success, else the failure.
std::string prepare_case(Backend& backend, const OpCase& c, Mode mode, PreparedCase* out);

// One execution into a fresh output buffer filled with `fill` and followed by 64 guard
// bytes. `violation` is non-empty when the run broke the harness contract (guard bytes
// overwritten, an input modified); `status` is the backend's own result.
struct RunOutcome {
  Status status;
  std::string violation;
  std::vector<std::byte> bytes;  // the output (when status is ok)
};
RunOutcome execute_case(Backend& backend, const OpCase& c, PreparedCase& p, std::byte fill);

// Measured error of a compared output (0 for exact comparisons that matched).
struct ErrorStats {
  double norm_err = 0.0;
  double elem_err = 0.0;
};

// Compares `actual` with `expected` (both laid out as `d`, contiguous) under `tol`.
// Returns "" when they match, else a message with the error measures and the first
// mismatches (NaN/Inf positions must agree exactly). `stats` receives the measured errors.
std::string compare_outputs(const TensorDesc& d, std::span<const std::byte> expected,
                            std::span<const std::byte> actual, const Tolerance& tol,
                            ErrorStats* stats = nullptr);

// "" when `a` and `b` are bit-identical, else where they first differ.
std::string bitwise_difference(const TensorDesc& d, std::span<const std::byte> a,
                               std::span<const std::byte> b);

// The position of flat element `flat` of `d`: "[1,0,3]".
std::string index_string(const TensorDesc& d, int64_t flat);

}  // namespace longrun::conformance
