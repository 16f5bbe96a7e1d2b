#include "registry.h"

#include <array>

#include "bert/bert.h"
#include "combiner/combiner.h"
#include "fastformer/fastformer.h"
#include "fourier/fourier_lra.h"

namespace longrun::models {
namespace {

// One row per family. Add a family: its folder, its parse function, one row here.
constexpr std::array kFamilies = {
    Family{"fourier-lra",
           "Fourier Transformer, LRA encoder classifier (DCT filter layers; filter_layers = [] is the "
           "vanilla softmax baseline)",
           &parse_fourier_lra_config},
    Family{"bert", "BERT encoder (HF BertModel; optional pooler and masked-LM head)", &parse_bert_config},
    Family{"roberta", "RoBERTa encoder (HF RobertaModel: padding-aware positions; optional lm_head)",
           &parse_roberta_config},
    Family{"fourier-bert", "BERT encoder with Fourier Transformer DCT filters before chosen layers",
           &parse_fourier_bert_config},
    Family{"fourier-roberta", "RoBERTa encoder with Fourier Transformer DCT filters before chosen layers",
           &parse_fourier_roberta_config},
    Family{"fastformer",
           "Fastformer text classifier (additive attention, query = value sharing, BERT post-LN "
           "sublayers, attention pooler; share_layers for layer-wise sharing)",
           &parse_fastformer_config},
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
