// What a cuda kernel sees, and the per-op kernel table's row type. Host code (compiled by
// nvcc, runs on the CPU): it reads attributes and descs, picks a launch configuration and
// enqueues work on the backend's one stream. Every view it gets is contiguous device memory
// (the planner only makes contiguous values; reshape is a view of its contiguous input).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "axis_lines.h"
#include "cuda/cublas_library.h"
#include "cuda/cuda_check.h"
#include "longrun/graph.h"
#include "longrun/ops/attrs.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun::cuda {

// Written by a kernel that finds bad data (an id outside the table, a value a cast cannot
// hold): the first writer wins (atomicCAS on `code`). Device memory, zero when no error.
struct DeviceError {
  int code;         // 0: none; else a kernel-defined reason (DeviceErrorCode)
  int arg;          // kernel-defined (e.g. which input)
  long long index;  // flat element index of the offending element
  double value;     // the offending value
};
enum DeviceErrorCode : int { kNoError = 0, kOutOfRange = 1, kNaN = 2 };

// The backend's device state shared by every kernel of one backend instance. Kernels run
// one at a time, in node order, on `stream`.
class Context {
 public:
  int device = 0;
  cudaStream_t stream = nullptr;
  const CublasLibrary* blas = nullptr;  // cuBLAS, loaded with the first context
  cublasHandle_t cublas = nullptr;
  cudaDeviceProp props{};
  // Recorded around the nodes of a run when RunHooks::device_ms asks for the device time.
  cudaEvent_t nodes_start = nullptr, nodes_end = nullptr;

  // Device scratch valid until the next kernel asks for scratch: at least `bytes`, 256-byte
  // aligned. Grows (after synchronising the stream) and never shrinks; counted in
  // scratch_bytes(). Kernels that need it call it each run (a prepare step may call it once
  // to size it ahead).
  Result<void*> scratch(int64_t bytes);
  int64_t scratch_bytes() const { return scratch_bytes_; }

  // The error record (device memory). reset_error() enqueues its clearing; take_error()
  // waits for the stream and returns what the kernels since the reset wrote.
  DeviceError* device_error() const { return error_; }
  Status reset_error();
  Result<DeviceError> take_error();

  Status init(int device_index);
  ~Context();
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  void* scratch_ = nullptr;
  int64_t scratch_bytes_ = 0;
  DeviceError* error_ = nullptr;
  DeviceError* host_error_ = nullptr;  // pinned
};

struct KernelArgs {
  const OpAttrs* attrs = nullptr;
  std::span<const TensorView> inputs;   // device pointers
  std::span<const TensorView> outputs;  // device pointers
  Context* ctx = nullptr;
  // The kernel's prepare result for this node (null without a prepare step).
  const void* prepared = nullptr;

  template <typename A>
  const A& attr() const {
    return std::get<A>(*attrs);
  }
};
using KernelFn = Status (*)(const KernelArgs&);
// Runs once per node when a graph is prepared (a weight's device copy widened to f32, a
// transform matrix). Weights' host bytes are graph.value(id).weight_data. What it returns
// lives as long as the prepared graph. *device_bytes: device memory it allocated (reported).
using PrepareFn = Result<std::shared_ptr<void>> (*)(const Graph& graph, const Node& node, Context& ctx,
                                                    int64_t* device_bytes);
// Whether the kernel handles this node (dtypes, attrs); sets *why when not.
using SupportsFn = bool (*)(const Graph& graph, const Node& node, std::string* why);

struct Kernel {
  KernelFn run = nullptr;
  PrepareFn prepare = nullptr;
  SupportsFn supports = nullptr;  // null: every node of the op
};

// unsupported() naming `op` and the first input or output view that is not contiguous (the
// executor never makes one; kernels check rather than assume).
Status check_contiguous(const KernelArgs& args, const char* op);

// Calls fn(T{}) with T the unsigned integer type of `size` bytes (1, 2, 4, 8): kernels that
// move elements without looking at them copy any dtype bit for bit this way.
template <typename Fn>
Status for_element_size(size_t size, Fn&& fn) {
  switch (size) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(static_cast<unsigned long long>(0));
    default: return internal_error("element size " + std::to_string(size) + " has no copy kernel");
  }
}

// "[1,0,3]": the multi-index of element `flat` of a row-major tensor (how data errors name
// an element, as the reference kernels do).
std::string flat_index_string(const TensorDesc& d, int64_t flat);

// The table row of every op (kernel_table.cu); an empty Kernel: not implemented.
const Kernel& kernel_for(OpKind kind);

// One row per op, defined next to its kernels (elementwise.cu, layout.cu, ...).
#define LR_OP(name, Attrs) Kernel make_kernel_##name();
#include "longrun/ops/op_list.inc"

// A device buffer owned by a shared_ptr (cudaFree on release).
Result<std::shared_ptr<void>> device_alloc(int64_t bytes, const std::string& what);

}  // namespace longrun::cuda
