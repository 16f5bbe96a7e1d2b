#include "model_presets.h"

namespace longrun::bench {
namespace {

// The LRA Text encoder (MODELS.md §1.5: D 512, FFN 2048, 8 heads of 64, 6 layers, vocab 512,
// inputs up to 4000 -> a 4096-row position table), with and without the DCT filter.
#define LR_LRA_TEXT                                                                            \
  "\"vocab_size\":512,\"transformer_dim\":512,\"transformer_hidden_dim\":2048,\"num_head\":8," \
  "\"head_dim\":64,\"num_layers\":6,\"max_seq_len\":4096,\"num_classes\":2,\"pooling_mode\":\"CLS\","

// One row per preset; a new family adds its rows here (arch + config + baseline row).
// Baselines come first so that a variant's ratio column can use them.
constexpr ModelPreset kPresets[] = {
    {"lra-text-vanilla", "fourier-lra", "{" LR_LRA_TEXT "\"filter_layers\":[]}", "", "512,1024,2048,4096",
     "LRA Text softmax encoder (fourier-lra without filter layers): D 512, 6 layers"},
    {"lra-text-fourier-r0.2", "fourier-lra", "{" LR_LRA_TEXT "\"filter_layers\":[0],\"filter_ratio\":0.2}",
     "lra-text-vanilla", "512,1024,2048,4096",
     "the same with the DCT filter at layer 0, r = 0.2 (the released LRA setting)"},
    // A softmax encoder of Fastformer's official width, depth and FFN (D 256, 16 heads of 16,
    // 2 layers, FFN 256): what Fastformer's additive attention replaces.
    {"softmax-d256-l2", "fourier-lra",
     "{\"vocab_size\":30522,\"transformer_dim\":256,\"transformer_hidden_dim\":256,\"num_head\":16,"
     "\"head_dim\":16,\"num_layers\":2,\"max_seq_len\":4096,\"num_classes\":4,\"filter_layers\":[]}",
     "", "512,1024,2048,4096", "softmax encoder (fourier-lra without filters) of Fastformer's sizes"},
    // fastformer.json (D 256, 16 heads, 2 layers, intermediate 256), positions up to 4096.
    {"fastformer-d256-l2", "fastformer",
     "{\"vocab_size\":30522,\"hidden_size\":256,\"num_attention_heads\":16,\"num_hidden_layers\":2,"
     "\"intermediate_size\":256,\"max_position_embeddings\":4096,\"num_labels\":4}",
     "softmax-d256-l2", "512,1024,2048,4096", "Fastformer, the official fastformer.json sizes"},
};

#undef LR_LRA_TEXT

}  // namespace

std::vector<ModelPreset> model_presets() { return {std::begin(kPresets), std::end(kPresets)}; }

const ModelPreset* find_preset(std::string_view name) {
  for (const ModelPreset& p : kPresets)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace longrun::bench
