// A pickle *parser* (docs/checkpoints.md#pickle-reader): an opcode VM that builds an inert value tree.
// Nothing is ever imported or called. GLOBAL/STACK_GLOBAL names are checked against a fixed
// allowlist and the few that matter for checkpoints (OrderedDict, the torch tensor rebuild
// functions, storage classes, argparse.Namespace) are interpreted by this parser; any other
// name is refused with a message naming it, or, in lenient mode, kept as an opaque node that
// carries nothing (so no tensor can be reached through it). A fixed blocklist (os, sys,
// subprocess, builtins, runpy, torch.jit, ...) is refused even in lenient mode.
//
// Values live in an arena owned by PickleDoc (raw pointers between nodes), so cycles built
// through the memo cannot leak and deep nesting cannot overflow the stack on destruction.
// Every traversal of the tree must be depth-bounded (kMaxDepth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "longrun/status.h"
#include "source_dtype.h"

namespace longrun::convert {

enum class PKind : uint8_t {
  none,
  boolean,
  integer,
  bigint,  // LONG1/LONG4 wider than 64 bits: raw little-endian bytes in `text` (legacy magic)
  floating,
  string,
  bytes,
  tuple,
  list,
  dict,     // dict / OrderedDict; keys kept in insertion order
  global,   // an allowlisted or (lenient) tolerated GLOBAL: module in `text`, name in `name`
  storage,  // a torch storage persistent id
  tensor,   // a rebuilt tensor (TensorRef)
  record,   // argparse.Namespace: string fields in `entries`
  opaque,   // lenient mode: an object of a tolerated class; `text` describes it
};

struct PNode;

struct StorageRef {
  SourceDType dtype = SourceDType::f32;
  std::string key;       // "0", "1", ... (zip) or the root key (legacy)
  std::string location;  // "cpu", "cuda:0", ... (ignored)
  int64_t numel = 0;     // elements of the storage
};

struct TensorRef {
  const PNode* storage = nullptr;  // kind storage
  SourceDType dtype = SourceDType::f32;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct PNode {
  PKind kind = PKind::none;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  std::string text;           // string, bytes, bigint bytes, global module, opaque description
  std::string name;           // global name
  std::vector<PNode*> items;  // tuple, list
  std::vector<std::pair<PNode*, PNode*>> entries;  // dict, record
  std::unordered_map<std::string, size_t> index;   // dict/record: key identity -> entries slot
  StorageRef storage;
  TensorRef tensor;
};

struct PickleLimits {
  uint64_t max_input_bytes = uint64_t(1) << 30;  // 1 GiB
  uint64_t max_ops = 50'000'000;
  uint64_t max_nodes = 20'000'000;
  uint64_t max_stack = 1'000'000;
  uint64_t max_memo = 10'000'000;
  int max_rank = 8;
};

inline constexpr int kMaxDepth = 256;

struct PickleOptions {
  bool lenient = false;  // tolerate unknown (non-blocklisted) globals as opaque nodes
  PickleLimits limits;
};

class PickleDoc {
 public:
  const PNode* root() const { return root_; }
  // Bytes consumed up to and including STOP (a legacy stream continues after it).
  size_t consumed() const { return consumed_; }
  // Globals seen that were kept opaque (lenient mode), "module.name" each, for reports.
  const std::vector<std::string>& opaque_globals() const { return opaque_globals_; }
  // Every storage persistent id, in pickle order (the legacy format needs the unreferenced ones).
  const std::vector<const PNode*>& storages() const { return storages_; }

  PNode* make(PKind kind);

 private:
  friend class PickleMachine;
  std::vector<std::unique_ptr<PNode>> arena_;
  const PNode* root_ = nullptr;
  size_t consumed_ = 0;
  std::vector<std::string> opaque_globals_;
  std::vector<const PNode*> storages_;
};

// Parses one pickle from the start of `data` (it may continue past STOP). `label` names the
// input in errors, which also give the byte offset of the failing opcode.
Result<std::unique_ptr<PickleDoc>> parse_pickle(std::span<const std::byte> data, const PickleOptions& options,
                                                const std::string& label);

// Dict lookup by string key (nullptr when absent or not a dict).
const PNode* dict_get(const PNode* dict, std::string_view key);
// "OrderedDict", "list[3]", "tensor f32[2, 3]", ... for messages and --inspect.
std::string describe(const PNode* node);

// The first value under `node` that only lenient mode admits, described for a message
// ("global 'enum.Color'", "object 'fairseq.x.Cfg object'", "dict key tuple[2]"), or "" when
// there is none: what a strict parse of that subtree would have refused. Depth-bounded
// (kMaxDepth, deeper is reported too); each node is visited once, so memo cycles end.
std::string find_lenient_value(const PNode* node);

}  // namespace longrun::convert
