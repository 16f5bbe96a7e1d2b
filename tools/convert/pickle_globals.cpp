// How the pickle parser interprets the allowlisted globals (docs/checkpoints.md#allowlisted-globals). Nothing
// is imported or called: REDUCE on an allowlisted callable builds the inert value the real function would
// have returned (an empty dict, a TensorRef, a Namespace record); anything else is refused, or kept opaque in
// lenient mode.
#include <array>

#include "pickle.h"
#include "pickle_machine.h"

namespace longrun::convert {
namespace {

// Never accepted, not even as opaque nodes (exec gadgets; cf. torch's blocklist).
bool blocklisted(const std::string& module) {
  static constexpr std::array<std::string_view, 18> kBlocked = {
      "os",          "posix", "nt",     "sys",       "subprocess", "builtins",
      "__builtin__", "runpy", "shutil", "importlib", "pickle",     "socket",
      "ctypes",      "code",  "pty",    "operator",  "webbrowser", "_pickle"};
  const std::string_view root = std::string_view(module).substr(0, module.find('.'));
  for (std::string_view b : kBlocked)
    if (root == b) return true;
  return module == "torch.jit" || module.starts_with("torch.jit.") || module == "torch.package" ||
         module.starts_with("torch.package.") || module == "torch.hub" || module == "torch.serialization";
}

constexpr std::array<std::string_view, 5> kRebuildFunctions = {"_rebuild_tensor", "_rebuild_tensor_v2",
                                                               "_rebuild_tensor_v3", "_rebuild_parameter",
                                                               "_rebuild_parameter_with_state"};

bool is_rebuild_function(std::string_view name) {
  for (std::string_view f : kRebuildFunctions)
    if (name == f) return true;
  return false;
}

bool allowlisted(const std::string& module, const std::string& name) {
  if (module == "collections" && name == "OrderedDict") return true;
  if (module == "torch._utils" && is_rebuild_function(name)) return true;
  if (module == "torch._tensor" && name == "_rebuild_from_type_v2") return true;
  if (module == "torch") {
    if (name == "Tensor" || name == "Size" || name == "UntypedStorage") return true;
    if (dtype_of_storage_class(name) || dtype_of_torch_dtype(name)) return true;
  }
  if (module == "torch.nn.parameter" && name == "Parameter") return true;
  if (module == "argparse" && name == "Namespace") return true;
  return false;
}

bool is_global(const PNode* v, std::string_view module, std::string_view name) {
  return v->kind == PKind::global && v->text == module && v->name == name;
}

bool empty_state(const PNode* v) {
  return v->kind == PKind::none || (v->kind == PKind::dict && v->entries.empty()) ||
         (v->kind == PKind::tuple && v->items.empty());
}

Status int_tuple(const PickleMachine& m, const PNode* v, const char* what, int max_rank,
                 std::vector<int64_t>* out) {
  if (v->kind != PKind::tuple && v->kind != PKind::list)
    return m.error(std::string(what) + " is " + describe(v) + ", expected a tuple of ints");
  if (int(v->items.size()) > max_rank)
    return m.error(std::string(what) + " has rank " + std::to_string(v->items.size()) + ", at most " +
                   std::to_string(max_rank) + " supported");
  out->clear();
  for (const PNode* i : v->items) {
    if (i->kind != PKind::integer || i->integer < 0)
      return m.error(std::string(what) + " holds " + describe(i) + ", expected non-negative ints");
    out->push_back(i->integer);
  }
  return {};
}

}  // namespace

Result<PNode*> PickleMachine::resolve_global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  if (blocklisted(module))
    return error("refused global '" + full + "' (a blocklisted module: code execution)");
  PNode* g = make(PKind::global);
  g->text = module;
  g->name = name;
  if (allowlisted(module, name)) return g;
  if (!options_.lenient)
    return error("refused global '" + full +
                 "': not on the checkpoint allowlist (tensors, storages, OrderedDict, argparse.Namespace)");
  g->boolean = true;  // tolerated: calls and instances become opaque nodes
  doc_->opaque_globals_.push_back(full);
  return g;
}

Result<PNode*> PickleMachine::rebuild_tensor(const std::string& fn, PNode* args) {
  const auto& a = args->items;
  if (fn == "_rebuild_parameter" || fn == "_rebuild_parameter_with_state") {
    const size_t want = fn == "_rebuild_parameter" ? 3 : 4;
    if (a.size() != want)
      return error(fn + " takes " + std::to_string(want) + " arguments, found " + std::to_string(a.size()));
    if (a[0]->kind != PKind::tensor) return error(fn + " data is " + describe(a[0]) + ", expected a tensor");
    if (!empty_state(a[2])) return error(fn + " with backward hooks is not supported");
    if (want == 4 && !empty_state(a[3])) return error(fn + " with Python attributes is not supported");
    return a[0];
  }
  size_t lo = 4, hi = 4;
  if (fn == "_rebuild_tensor_v2") lo = 6, hi = 7;
  if (fn == "_rebuild_tensor_v3") lo = 7, hi = 8;
  if (a.size() < lo || a.size() > hi)
    return error(fn + " takes " + std::to_string(lo) + (hi != lo ? "-" + std::to_string(hi) : "") +
                 " arguments, found " + std::to_string(a.size()));
  if (a[0]->kind != PKind::storage) return error(fn + " storage argument is " + describe(a[0]));
  if (a[1]->kind != PKind::integer || a[1]->integer < 0)
    return error(fn + " storage_offset is " + describe(a[1]) + ", expected a non-negative int");
  PNode* t = make(PKind::tensor);
  t->tensor.storage = a[0];
  t->tensor.dtype = a[0]->storage.dtype;
  t->tensor.offset = a[1]->integer;
  LR_RETURN_IF_ERROR(int_tuple(*this, a[2], "tensor size", options_.limits.max_rank, &t->tensor.sizes));
  LR_RETURN_IF_ERROR(int_tuple(*this, a[3], "tensor stride", options_.limits.max_rank, &t->tensor.strides));
  if (t->tensor.sizes.size() != t->tensor.strides.size())
    return error(fn + ": size has rank " + std::to_string(t->tensor.sizes.size()) + " but stride has rank " +
                 std::to_string(t->tensor.strides.size()));
  if (lo >= 6) {
    if (a[4]->kind != PKind::boolean) return error(fn + " requires_grad is " + describe(a[4]));
    if (!empty_state(a[5])) return error(fn + " with backward hooks is not supported");
  }
  if (fn == "_rebuild_tensor_v3") {
    const PNode* d = a[6];
    if (d->kind != PKind::global || d->text != "torch" || !dtype_of_torch_dtype(d->name))
      return error(fn + " dtype is " + describe(d) + ", expected a torch dtype");
    t->tensor.dtype = *dtype_of_torch_dtype(d->name);
  }
  return t;
}

Result<PNode*> PickleMachine::reduce(PNode* callable, PNode* args) {
  if (callable->kind != PKind::global)
    return error("REDUCE on " + describe(callable) + ", which is not callable");
  if (args->kind != PKind::tuple)
    return error("REDUCE arguments are " + describe(args) + ", expected a tuple");
  const std::string full = callable->text + "." + callable->name;
  if (callable->boolean) {  // tolerated (lenient): the result carries nothing
    PNode* o = make(PKind::opaque);
    o->text = full + "(...)";
    return o;
  }
  const auto& a = args->items;
  if (is_global(callable, "collections", "OrderedDict")) {
    PNode* d = make(PKind::dict);
    if (a.empty()) return d;
    if (a.size() == 1 && a[0]->kind == PKind::list) {
      for (PNode* pair : a[0]->items) {
        if (pair->kind != PKind::tuple || pair->items.size() != 2)
          return error("OrderedDict item is " + describe(pair) + ", expected a (key, value) tuple");
        LR_RETURN_IF_ERROR(set_item(d, pair->items[0], pair->items[1]));
      }
      return d;
    }
    return error("OrderedDict called with " + describe(args));
  }
  if (callable->text == "torch._utils" && is_rebuild_function(callable->name))
    return rebuild_tensor(callable->name, args);
  if (is_global(callable, "torch._tensor", "_rebuild_from_type_v2")) {
    if (a.size() != 4) return error(full + " takes 4 arguments, found " + std::to_string(a.size()));
    const PNode* new_type = a[1];
    if (!is_global(new_type, "torch", "Tensor") && !is_global(new_type, "torch.nn.parameter", "Parameter"))
      return error(full + " to type " + describe(new_type) +
                   " (only torch.Tensor and Parameter are supported)");
    if (!empty_state(a[3])) return error(full + " with Python attributes is not supported");
    if (a[2]->kind != PKind::tuple) return error(full + " arguments are " + describe(a[2]));
    // Only the rebuild functions themselves (no nesting, so no recursion on crafted input).
    if (a[0]->kind != PKind::global || a[0]->text != "torch._utils" || !is_rebuild_function(a[0]->name))
      return error(full + " with function " + describe(a[0]) + " (only torch._utils rebuild functions)");
    return rebuild_tensor(a[0]->name, a[2]);
  }
  if (is_global(callable, "torch", "Size")) {
    if (a.size() != 1 || (a[0]->kind != PKind::tuple && a[0]->kind != PKind::list))
      return error("torch.Size called with " + describe(args));
    PNode* t = make(PKind::tuple);
    t->items = a[0]->items;
    return t;
  }
  if (is_global(callable, "argparse", "Namespace")) return newobj(callable, args);
  return error("REDUCE on '" + full + "', which is not a callable the importer interprets");
}

Result<PNode*> PickleMachine::newobj(PNode* cls, PNode* args) {
  if (cls->kind != PKind::global) return error("NEWOBJ on " + describe(cls));
  if (cls->boolean) {
    PNode* o = make(PKind::opaque);
    o->text = cls->text + "." + cls->name + " object";
    return o;
  }
  if (!is_global(cls, "argparse", "Namespace"))
    return error("NEWOBJ of '" + cls->text + "." + cls->name + "' (only argparse.Namespace is interpreted)");
  if (args->kind != PKind::tuple || !args->items.empty())
    return error("argparse.Namespace with positional arguments");
  return make(PKind::record);
}

Status PickleMachine::build(PNode* obj, PNode* state) {
  switch (obj->kind) {
    case PKind::opaque: return {};
    case PKind::dict:  // OrderedDict.__dict__ (state_dict's _metadata): parsed, not needed
      if (state->kind == PKind::dict || state->kind == PKind::none) return {};
      return error("BUILD of a dict with state " + describe(state));
    case PKind::record:
      if (state->kind != PKind::dict) return error("BUILD of a Namespace with state " + describe(state));
      for (auto& [k, v] : state->entries) LR_RETURN_IF_ERROR(set_item(obj, k, v));
      return {};
    case PKind::tensor:
      if (empty_state(state)) return {};
      return error("BUILD of a tensor with Python attributes is not supported");
    default: return error("BUILD on " + describe(obj) + " is not allowed");
  }
}

Result<PNode*> PickleMachine::persistent_load(PNode* pid) {
  if (pid->kind != PKind::tuple || pid->items.empty() || pid->items[0]->kind != PKind::string)
    return error("persistent id " + describe(pid) + " is not a ('storage', ...) tuple");
  const auto& a = pid->items;
  if (a[0]->text == "module")
    return error("persistent id refers to a pickled module class (source code): refused");
  if (a[0]->text != "storage")
    return error("persistent id of type '" + a[0]->text + "' (only 'storage' is supported)");
  if (a.size() != 5 && a.size() != 6)
    return error("storage persistent id has " + std::to_string(a.size()) + " fields, expected 5 or 6");
  const PNode* cls = a[1];
  if (cls->kind != PKind::global || cls->text != "torch" || cls->boolean)
    return error("storage class is " + describe(cls) + ", expected a torch storage class");
  PNode* s = make(PKind::storage);
  if (cls->name == "UntypedStorage") {
    s->storage.dtype = SourceDType::u8;
  } else if (auto d = dtype_of_storage_class(cls->name)) {
    s->storage.dtype = *d;
  } else {
    return error("storage class 'torch." + cls->name + "' is not supported");
  }
  if (a[2]->kind != PKind::string || a[3]->kind != PKind::string)
    return error("storage key and location must be strings, found " + describe(a[2]) + ", " + describe(a[3]));
  if (a[4]->kind != PKind::integer || a[4]->integer < 0)
    return error("storage size is " + describe(a[4]) + ", expected a non-negative int");
  if (a.size() == 6 && a[5]->kind != PKind::none)
    return error("storage views (legacy view_metadata) are not supported");
  if (a[3]->text == "meta") return error("storage on device 'meta' holds no data");
  s->storage.key = a[2]->text;
  s->storage.location = a[3]->text;
  s->storage.numel = a[4]->integer;
  doc_->storages_.push_back(s);
  return s;
}

}  // namespace longrun::convert
