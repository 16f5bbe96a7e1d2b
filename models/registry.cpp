#include "registry.h"

#include <array>

#include "bert/bert.h"
#include "combiner/combiner.h"
#include "fastformer/fastformer.h"
#include "fourier/fourier_bart.h"
#include "fourier/fourier_lra.h"
#include "lasformer/lasformer.h"
#include "seq2seq/families.h"

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
    Family{"bart",
           "BART encoder-decoder (HF BartForConditionalGeneration names; fairseq bart.* maps 1:1), "
           "post-LN, learned positions + 2, tied LM head; generation",
           &parse_bart_config},
    Family{"transformer",
           "fairseq Transformer encoder-decoder (transformer_base/_big names), sinusoidal or learned "
           "pad-aware positions, post-/pre-LN, shared embeddings; generation",
           &parse_transformer_config},
    Family{"fourier-bart",
           "Fourier-BART: BART names with fairseq semantics, DCT filters in the encoder and the global "
           "residual (docs/models.md#fourier-bart); generation",
           &parse_fourier_bart_config},
    Family{"lasformer",
           "Lasformer: fairseq Transformer with top-k key selection shared by groups of layers "
           "(docs/models.md#lasformer), sparse attention over the selected keys",
           &parse_lasformer_config},
};

}  // namespace

std::span<const Family> families() { return kFamilies; }

const Family* find_family(std::string_view arch) {
  for (const Family& f : kFamilies)
    if (f.arch == arch) return &f;
  return nullptr;
}

}  // namespace longrun::models
