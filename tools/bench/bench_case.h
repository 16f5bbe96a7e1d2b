// The vocabulary of longrun-bench: host buffers, the engine a case runs on, peers and the
// benchmark case itself (a graph with bound inputs plus its work counts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "longrun/graph.h"
#include "longrun/precision.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun::bench {

// 64-byte aligned host bytes. Shared, so graph weights and peers can keep them alive.
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes);  // throws std::bad_alloc
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  std::byte* data() const { return data_; }
  float* f32() const { return reinterpret_cast<float*>(data_); }
  size_t size() const { return size_; }

 private:
  size_t size_;
  std::byte* data_;
};
using BufferPtr = std::shared_ptr<HostBuffer>;

// A buffer of `count` floats, uniform in [lo, hi) from a fixed seed (runs are repeatable).
BufferPtr random_f32(int64_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Where longrun runs: backend name, forced cpu ISA ("" = best), thread count and precision.
struct Engine {
  std::string backend;
  std::string isa;
  int threads = 1;
  std::vector<int> cpus;                 // cpu only: pin the pool's threads (BackendOptions::affinity)
  int spin_us = 0;                       // cpu only: BackendOptions::spin_us
  bool auto_affinity = true;             // cpu only: BackendOptions::auto_affinity
  Precision precision = Precision::f32;  // BackendOptions::precision
};

// One measurable peer: `reset` (untimed, may be empty) runs before every timed `run`.
struct PeerRun {
  std::string name;
  std::function<void()> reset;
  std::function<Status()> run;
  std::shared_ptr<void> state;  // plans, scratch and outputs the closures use
};

// Makes a peer for an engine. External peers (other libraries) depend only on the thread
// count; `uses_engine` peers run longrun itself (dense attention as the sparse baseline).
struct PeerFactory {
  std::string name;
  bool uses_engine = false;
  bool external = false;  // another library with its own (possibly spinning) threads
  std::function<Result<PeerRun>(const Engine&)> make;
};

// A case ready to run: the graph, its inputs in Graph::inputs() order, work counts.
struct BenchCase {
  std::string op;     // the op_list.inc name
  std::string shape;  // human-readable problem size
  int64_t n = 0;      // the sequence length the case was made for
  Graph graph;
  std::vector<TensorView> inputs;
  std::vector<BufferPtr> owners;  // memory behind inputs and weights
  double flops = 0;               // 0: GFLOP/s is not meaningful for this op
  double bytes = 0;               // bytes read + written (inputs, weights, outputs), once each
  std::vector<PeerFactory> peers;
};

// A session precision a case's op uses, and the text its rows add to the shape at that
// precision ("" for none; e.g. " kv f32->bf16" where the session rounds f32 K and V).
struct PrecisionUse {
  Precision precision = Precision::f32;
  std::string shape_note;
};

// A case before its (possibly GiB-sized) inputs exist: built on demand, one at a time.
struct CaseSpec {
  std::string op;
  std::string shape;
  int64_t n = 0;
  std::function<Result<BenchCase>()> build;
  // The precisions at which the op runs differently (f32 first): ops --precision runs the
  // case once per listed one; at any other precision it would repeat the f32 run.
  std::vector<PrecisionUse> precisions = {PrecisionUse{}};
};

}  // namespace longrun::bench
