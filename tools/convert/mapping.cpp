#include "mapping.h"

namespace longrun::convert {
namespace {

// MODELS.md §1.2: the official LUMIA-Group/FourierTransformer LRA code saves
// torch.save({"model_state_dict": model.module.state_dict()}), so names carry no "module."
// prefix but sit under "model_state_dict"; other DataParallel saves keep "module.".
// Parameter names are the native ones (the family table uses the official module names).
const SourceLayout kFourierLra{
    "fourier-lra-official",
    "fourier-lra",
    "LUMIA-Group/FourierTransformer LRA/code checkpoints (model_state_dict wrapper, optional module. prefix)",
    {"model_state_dict.", "module."},
    {{"optimizer_state_dict.", "optimizer state (training only)"},
     {"lr_scheduler_state_dict.", "scheduler state (training only)"},
     {"optimizer.", "optimizer state (training only)"}},
    {}};

const SourceLayout* const kLayouts[] = {&kFourierLra};

}  // namespace

std::span<const SourceLayout> source_layouts() {
  static const std::vector<SourceLayout> all = [] {
    std::vector<SourceLayout> v;
    for (const SourceLayout* l : kLayouts) v.push_back(*l);
    return v;
  }();
  return all;
}

std::vector<const SourceLayout*> layouts_for_arch(std::string_view arch) {
  std::vector<const SourceLayout*> out;
  for (const SourceLayout& l : source_layouts())
    if (l.arch == arch) out.push_back(&l);
  return out;
}

const SourceLayout* find_layout(std::string_view name) {
  for (const SourceLayout& l : source_layouts())
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace longrun::convert
