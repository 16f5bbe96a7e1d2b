#include "fairseq.h"

#include <nlohmann/json.hpp>

#include "readers.h"

namespace longrun::convert {
namespace {

// Hyper-parameters to JSON: scalars, strings, lists/tuples, dicts/records with string keys;
// anything else (opaque objects, tensors) becomes its description string.
nlohmann::json to_json(const PNode* v, int depth) {
  if (depth > kMaxDepth) return "<too deep>";
  switch (v->kind) {
    case PKind::none: return nullptr;
    case PKind::boolean: return v->boolean;
    case PKind::integer: return v->integer;
    case PKind::floating: return v->floating;
    case PKind::string: return v->text;
    case PKind::list:
    case PKind::tuple: {
      nlohmann::json a = nlohmann::json::array();
      for (const PNode* i : v->items) a.push_back(to_json(i, depth + 1));
      return a;
    }
    case PKind::dict:
    case PKind::record: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [k, child] : v->entries)
        if (k->kind == PKind::string) o[k->text] = to_json(child, depth + 1);
      return o;
    }
    default: return describe(v);
  }
}

bool ends_with(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

// Pickled strings need not be UTF-8 (protocol-2 str, bytes): bytes that are not become U+FFFD
// instead of nlohmann's type_error, which the CLI does not catch.
std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Result<std::vector<SourceTensor>> split_in_proj(const SourceTensor& fused) {
  const bool weight = ends_with(fused.name, "in_proj_weight");
  if (!weight && !ends_with(fused.name, "in_proj_bias"))
    return invalid_argument("'" + fused.name + "' is not a fused in_proj tensor");
  if (fused.sizes.size() != (weight ? 2u : 1u) || fused.sizes[0] % 3 != 0)
    return format_error("'" + fused.name + "': expected " + (weight ? "[3D, D]" : "[3D]") +
                        " with the first dim divisible by 3");
  const std::string prefix = fused.name.substr(0, fused.name.size() - (weight ? 14 : 12));
  const int64_t rows = fused.sizes[0] / 3;
  std::vector<SourceTensor> out;
  for (int i = 0; i < 3; ++i) {
    SourceTensor t = fused;
    t.name = prefix + "qkv"[i] + "_proj." + (weight ? "weight" : "bias");
    t.sizes[0] = rows;
    t.offset = fused.offset + i * rows * fused.strides[0];  // within the validated view
    LR_RETURN_IF_ERROR(check_view(t, "tensor '" + t.name + "'"));
    out.push_back(std::move(t));
  }
  return out;
}

Result<FairseqCheckpoint> fairseq_from(SourceCheckpoint src, const std::string& label) {
  const PNode* root = src.pickle_root;
  if (!root || root->kind != PKind::dict || !dict_get(root, "model"))
    return format_error(label + ": not a fairseq checkpoint (no top-level \"model\" state dict)");
  FairseqCheckpoint f;
  const PNode* args = dict_get(root, "args");
  const PNode* cfg = dict_get(root, "cfg");
  if (args && args->kind == PKind::record) {
    f.hyperparameters_json = dump_json(to_json(args, 0));
    f.hyperparameters_from = "args";
  } else if (const PNode* model_cfg = dict_get(cfg, "model");
             model_cfg && (model_cfg->kind == PKind::dict || model_cfg->kind == PKind::record)) {
    f.hyperparameters_json = dump_json(to_json(model_cfg, 0));
    f.hyperparameters_from = "cfg.model";
  } else {
    return format_error(label +
                        ": fairseq checkpoint without hyper-parameters (no args Namespace, no cfg.model "
                        "dict)");
  }
  SourceCheckpoint& out = f.source;
  out.format = "fairseq/" + src.format;
  out.files = src.files;
  out.notes = src.notes;
  out.owners = src.owners;
  out.pickle_root = root;
  for (SourceTensor& t : src.tensors) {
    if (!t.name.starts_with("model.")) {
      f.dropped.push_back(t.name + ": not part of the model (training state)");
      continue;
    }
    t.name = t.name.substr(6);
    if (ends_with(t.name, "embed_positions._float_tensor") || ends_with(t.name, "embed_positions.weights")) {
      f.dropped.push_back(t.name + ": sinusoidal position buffer (recomputed)");
      continue;
    }
    // encoder.version, decoder.version, and in RoBERTa encoder.sentence_encoder.version
    if (t.name == "version" || ends_with(t.name, ".version")) {
      f.dropped.push_back(t.name + ": fairseq version marker");
      continue;
    }
    if (ends_with(t.name, "in_proj_weight") || ends_with(t.name, "in_proj_bias")) {
      LR_ASSIGN_OR_RETURN(auto parts, split_in_proj(t));
      for (SourceTensor& p : parts) {
        f.upgraded.push_back(t.name + " -> " + p.name);
        out.tensors.push_back(std::move(p));
      }
      continue;
    }
    for (const auto& [from, to] :
         {std::pair<std::string_view, std::string_view>{".layer_norms.0.", ".self_attn_layer_norm."},
          {".layer_norms.1.", ".final_layer_norm."}}) {
      const size_t at = t.name.find(from);
      if (at == std::string::npos) continue;
      const std::string old = t.name;
      t.name.replace(at, from.size(), to);
      f.upgraded.push_back(old + " -> " + t.name);
    }
    out.tensors.push_back(std::move(t));
  }
  return f;
}

Result<FairseqCheckpoint> read_fairseq(const std::string& path, const ReadOptions& options) {
  ReadOptions o = options;
  o.opaque_outside_model = true;  // args / cfg / extra_state may pickle any training object
  SourceCheckpoint src;
  LR_RETURN_IF_ERROR(read_checkpoint_file(path, o, &src));
  return fairseq_from(std::move(src), path);
}

}  // namespace longrun::convert
