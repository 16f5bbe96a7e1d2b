#include "common/architecture.h"

namespace longrun::models {

ModelInput attention_mask_input(std::string description) {
  return {"attention_mask", false, {DType::u8, DType::i32, DType::i64, DType::f32}, std::move(description)};
}

std::vector<ModelInput> token_model_inputs(std::string ids_description, std::string mask_description) {
  return {{"input_ids", true, {DType::i32, DType::i64}, std::move(ids_description)},
          attention_mask_input(std::move(mask_description))};
}

std::vector<std::string> filtered_layer_debug_outputs(const std::vector<bool>& filtered) {
  std::vector<std::string> out = {"debug.embeddings"};
  for (size_t i = 0; i < filtered.size(); ++i) {
    if (filtered[i]) out.push_back("debug.layer" + std::to_string(i) + ".filtered");
    out.push_back("debug.layer" + std::to_string(i) + ".output");
  }
  return out;
}

ValueId GraphContext::input(std::string_view name) const {
  auto it = inputs_.find(name);
  return it == inputs_.end() ? kNoValue : it->second;
}

ValueId GraphContext::weight(std::string_view name) {
  if (!ok()) return kNoValue;
  if (auto it = bound_.find(name); it != bound_.end()) return it->second;
  const BoundWeight* w = weights_.find(name);
  if (w == nullptr) {
    fail(internal_error("the model's graph builder asks for parameter '" + std::string(name) +
                        "', which its parameter table does not list"));
    return kNoValue;
  }
  const ValueId v = w->desc.dtype() == DType::i8
                        ? b.quantized_weight(std::string(name), w->desc, static_cast<const int8_t*>(w->data),
                                             w->scales, w->owner)
                        : b.weight(std::string(name), w->desc, w->data, w->owner);
  bound_.emplace(std::string(name), v);
  return v;
}

void GraphContext::output(ValueId v, const std::string& name) {
  if (!ok()) return;
  b.output(v, name);
  produced_.push_back(name);
}

void GraphContext::debug(ValueId v, const std::string& name) {
  if (!ok() || !options_.debug_outputs) return;
  pending_debug_.emplace_back(v, name);
}

void GraphContext::finish() {
  for (const auto& [v, name] : pending_debug_) output(v, name);
  pending_debug_.clear();
}

}  // namespace longrun::models
