#include "registry.h"

#include <array>

#include "combiner/combiner.h"
#include "fourier/fourier_lra.h"

namespace longrun::models {
namespace {

// One row per family. Add a family: its folder, its parse function, one row here.
constexpr std::array kFamilies = {
    Family{"fourier-lra",
           "Fourier Transformer, LRA encoder classifier (DCT filter layers; filter_layers = [] is the "
           "vanilla softmax baseline)",
           &parse_fourier_lra_config},
    Family{"combiner",
           "Combiner LM (JAX model; attention fixed / logsparse / axial / mixture, causal JAX forms or "
           "bidirectional TF forms)",
           &parse_combiner_config},
};

}  // namespace

std::span<const Family> families() { return kFamilies; }

const Family* find_family(std::string_view arch) {
  for (const Family& f : kFamilies)
    if (f.arch == arch) return &f;
  return nullptr;
}

}  // namespace longrun::models
