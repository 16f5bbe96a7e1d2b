// The pickle VM's internal state, shared by the opcode loop (pickle.cpp) and the
// interpretation of allowlisted globals (pickle_globals.cpp). Not part of the public API.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "pickle.h"

namespace longrun::convert {

class PickleMachine {
 public:
  PickleMachine(std::span<const std::byte> data, const PickleOptions& options, const std::string& label,
                PickleDoc* doc)
      : data_(data), options_(options), label_(label), doc_(doc) {}

  Status run();

  // ---- pickle_globals.cpp ----
  // GLOBAL / STACK_GLOBAL: an allowlisted global, a tolerated one (lenient), or an error.
  Result<PNode*> resolve_global(const std::string& module, const std::string& name);
  Result<PNode*> reduce(PNode* callable, PNode* args);
  Result<PNode*> newobj(PNode* cls, PNode* args);
  Status build(PNode* obj, PNode* state);
  Result<PNode*> persistent_load(PNode* pid);

  // An error at the current opcode: "<label>: pickle byte <offset> (<opcode>): <what>".
  Status error(const std::string& what) const;
  PNode* make(PKind kind) { return doc_->make(kind); }
  Status check_nodes() const;

 private:
  friend struct PickleOps;
  Result<PNode*> rebuild_tensor(const std::string& fn, PNode* args);
  Status set_item(PNode* dict, PNode* key, PNode* value);

  std::span<const std::byte> data_;
  const PickleOptions& options_;
  const std::string& label_;
  PickleDoc* doc_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<PNode*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PNode*> memo_;
};

}  // namespace longrun::convert
