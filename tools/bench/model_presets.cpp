#include "model_presets.h"

namespace longrun::bench {
namespace {

// The LRA Text encoder (docs/models.md#fourier-transformer-reference-settings: D 512, FFN 2048, 8 heads of
// 64, 6 layers, vocab 512, inputs up to 4000 -> a 4096-row position table), with and without the DCT filter.
#define LR_LRA_TEXT                                                                            \
  "\"vocab_size\":512,\"transformer_dim\":512,\"transformer_hidden_dim\":2048,\"num_head\":8," \
  "\"head_dim\":64,\"num_layers\":6,\"max_seq_len\":4096,\"num_classes\":2,\"pooling_mode\":\"CLS\","

#define LR_LRA_TEXT_8K                                                                         \
  "\"vocab_size\":512,\"transformer_dim\":512,\"transformer_hidden_dim\":2048,\"num_head\":8," \
  "\"head_dim\":64,\"num_layers\":6,\"max_seq_len\":8192,\"num_classes\":2,\"pooling_mode\":\"CLS\","

// fairseq transformer_base sizes (docs/models.md#lasformer: Lasformer's base model).
#define LR_TRANSFORMER_BASE                                                                                \
  "\"src_vocab_size\":8192,\"tgt_vocab_size\":8192,\"share_all_embeddings\":true,"                         \
  "\"encoder_embed_dim\":512,\"encoder_ffn_embed_dim\":2048,\"decoder_ffn_embed_dim\":2048,"               \
  "\"encoder_layers\":6,\"decoder_layers\":6,\"encoder_attention_heads\":8,\"decoder_attention_heads\":8," \
  "\"max_source_positions\":8192,\"max_target_positions\":8192"

// The Combiner LM at the same sizes (qkv_dim = D), the TF LM segment s = 128
// (docs/models.md#combiner-reference-settings).
#define LR_COMBINER                                                                                       \
  "\"vocab_size\":512,\"emb_dim\":512,\"num_heads\":8,\"qkv_dim\":512,\"mlp_dim\":2048,\"num_layers\":6," \
  "\"max_len\":8192,\"max_seg_len\":128,\"causal\":false,"

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
    // --- The D 512 model benchmarks: 8 heads of 64, FFN 2048, 6 layers (6 + 6 for the
    // encoder-decoders), f32, B 1.
    // Fastformer at the LRA Text width and depth, against lra-text-vanilla (the pre-LN softmax
    // encoder of the same D, heads, FFN, layers and vocabulary).
    {"fastformer-d512-l6", "fastformer",
     "{\"vocab_size\":512,\"hidden_size\":512,\"num_attention_heads\":8,\"num_hidden_layers\":6,"
     "\"intermediate_size\":2048,\"max_position_embeddings\":4096,\"num_labels\":2}",
     "lra-text-vanilla", "512,1024,2048,4096", "Fastformer, D 512, 8 heads, FFN 2048, 6 layers"},
    // fairseq transformer_base (post-LN, ReLU, sinusoidal positions) with one shared 8192-entry
    // table (keeps the [N, V] logits at 128 MiB for N = 4096). Encoder-decoders get
    // decoder_input_ids as long as the source (models_command.cpp): every attention -- encoder
    // self, causal decoder self, cross -- runs at length N.
    {"transformer-d512-l6", "transformer", "{" LR_TRANSFORMER_BASE "}", "", "512,1024,2048,4096",
     "fairseq Transformer-base, full attention, 6 + 6 layers, decoder length = N"},
    {"lasformer-d512-l6", "lasformer",
     "{" LR_TRANSFORMER_BASE
     ",\"selection_group_size\":3,\"selection_dim\":64,\"selection_ratio\":0.05,\"selection_min_keys\":10}",
     "transformer-d512-l6", "512,1024,2048,4096",
     "the same with top-k selection: k = 5 % of the keys, ds 64, groups of 3 layers"},
    // Combiner (bidirectional TF forms, s = 128 as the TF LM config) against the dense softmax
    // encoder of the same sizes with an 8192-row position table.
    {"softmax-d512-l6-8k", "fourier-lra", "{" LR_LRA_TEXT_8K "\"filter_layers\":[]}", "",
     "1024,2048,4096,8192", "the LRA Text softmax encoder with max_seq_len 8192 (Combiner's baseline)"},
    {"combiner-fixed-d512-l6", "combiner", "{" LR_COMBINER "\"attention\":\"fixed\"}", "softmax-d512-l6-8k",
     "1024,2048,4096,8192", "Combiner-Fixed LM, bidirectional, s = 128, D 512, 6 layers"},
    {"combiner-axial-d512-l6", "combiner", "{" LR_COMBINER "\"attention\":\"axial\"}", "softmax-d512-l6-8k",
     "1024,2048,4096,8192", "Combiner-Axial LM, bidirectional, s = 128, D 512, 6 layers"},
    // Attention only (attention_blocks.h): the attention of one layer on the same q, k, v
    // [1, 8, N, 64] -- the Combiner forms as the model builds them against the fused dense op.
    {"attn-dense", "attention", "{\"form\":\"dense\"}", "", "1024,2048,4096,8192",
     "attention only: the fused dense attention op, 8 heads of 64"},
    {"attn-combiner-fixed", "attention", "{\"form\":\"fixed\",\"segment\":128}", "attn-dense",
     "1024,2048,4096,8192", "attention only: Combiner-Fixed (bidirectional), s = 128, same q, k, v"},
    {"attn-combiner-axial", "attention", "{\"form\":\"axial\",\"segment\":128}", "attn-dense",
     "1024,2048,4096,8192", "attention only: Combiner-Axial (bidirectional, with its row summary), s = 128"},
    {"attn-combiner-axial-wsum", "attention", "{\"form\":\"axial\",\"segment\":128,\"row_summary\":\"wsum\"}",
     "attn-dense", "1024,2048,4096,8192",
     "attention only: Combiner-Axial with TF's row_summary 'wsum' (keys summarised by the row attention)"},
    {"attn-combiner-axial-none", "attention", "{\"form\":\"axial\",\"segment\":128,\"row_summary\":\"none\"}",
     "attn-dense", "1024,2048,4096,8192",
     "attention only: Combiner-Axial with TF's row_summary 'none' (K~ = k)"},
};

// The scaling sweep (`--scale`): the D 512 families and their baselines, every length
// field "@N@" -- replaced by the run's N, so each length gets a position table of its own size
// and the weights do not grow with the longest N of the sweep. With max_seq_len = N the LRA
// softmax encoder is also the Combiner's baseline.
#define LR_LRA_TEXT_AT_N                                                                       \
  "\"vocab_size\":512,\"transformer_dim\":512,\"transformer_hidden_dim\":2048,\"num_head\":8," \
  "\"head_dim\":64,\"num_layers\":6,\"max_seq_len\":@N@,\"num_classes\":2,\"pooling_mode\":\"CLS\","
#define LR_TRANSFORMER_AT_N                                                                                \
  "\"src_vocab_size\":8192,\"tgt_vocab_size\":8192,\"share_all_embeddings\":true,"                         \
  "\"encoder_embed_dim\":512,\"encoder_ffn_embed_dim\":2048,\"decoder_ffn_embed_dim\":2048,"               \
  "\"encoder_layers\":6,\"decoder_layers\":6,\"encoder_attention_heads\":8,\"decoder_attention_heads\":8," \
  "\"max_source_positions\":@N@,\"max_target_positions\":@N@"
#define LR_COMBINER_AT_N                                                                                  \
  "\"vocab_size\":512,\"emb_dim\":512,\"num_heads\":8,\"qkv_dim\":512,\"mlp_dim\":2048,\"num_layers\":6," \
  "\"max_len\":@N@,\"max_seg_len\":128,\"causal\":false,"
#define LR_COMBINER_CAUSAL_AT_N                                                                           \
  "\"vocab_size\":512,\"emb_dim\":512,\"num_heads\":8,\"qkv_dim\":512,\"mlp_dim\":2048,\"num_layers\":6," \
  "\"max_len\":@N@,\"max_seg_len\":128,\"causal\":true,"
constexpr const char* kScaleNs = "4096,8192,16384,32768,65536";
constexpr ModelPreset kScalePresets[] = {
    {"lra-text-vanilla", "fourier-lra", "{" LR_LRA_TEXT_AT_N "\"filter_layers\":[]}", "", kScaleNs,
     "LRA Text softmax encoder, D 512, 6 layers (the encoders' baseline)"},
    {"lra-text-fourier-r0.2", "fourier-lra",
     "{" LR_LRA_TEXT_AT_N "\"filter_layers\":[0],\"filter_ratio\":0.2}", "lra-text-vanilla", kScaleNs,
     "the same with the DCT filter at layer 0, r = 0.2"},
    {"fastformer-d512-l6", "fastformer",
     "{\"vocab_size\":512,\"hidden_size\":512,\"num_attention_heads\":8,\"num_hidden_layers\":6,"
     "\"intermediate_size\":2048,\"max_position_embeddings\":@N@,\"num_labels\":2}",
     "lra-text-vanilla", kScaleNs, "Fastformer, D 512, 8 heads, FFN 2048, 6 layers"},
    {"combiner-fixed-d512-l6", "combiner", "{" LR_COMBINER_AT_N "\"attention\":\"fixed\"}",
     "lra-text-vanilla", kScaleNs, "Combiner-Fixed LM, bidirectional, s = 128, D 512, 6 layers"},
    {"combiner-axial-d512-l6", "combiner", "{" LR_COMBINER_AT_N "\"attention\":\"axial\"}",
     "lra-text-vanilla", kScaleNs, "Combiner-Axial LM, bidirectional, s = 128, D 512, 6 layers"},
    // The causal LM forms (the bench has no causal dense encoder to compare them with).
    {"combiner-fixed-causal-d512-l6", "combiner", "{" LR_COMBINER_CAUSAL_AT_N "\"attention\":\"fixed\"}", "",
     kScaleNs, "Combiner-Fixed LM, causal, s = 128, D 512, 6 layers"},
    {"combiner-axial-causal-d512-l6", "combiner", "{" LR_COMBINER_CAUSAL_AT_N "\"attention\":\"axial\"}", "",
     kScaleNs, "Combiner-Axial LM, causal, s = 128, D 512, 6 layers"},
    {"transformer-d512-l6", "transformer", "{" LR_TRANSFORMER_AT_N "}", "", kScaleNs,
     "fairseq Transformer-base, 6 + 6 layers, decoder length = N (Lasformer's baseline)"},
    {"lasformer-d512-l6", "lasformer",
     "{" LR_TRANSFORMER_AT_N
     ",\"selection_group_size\":3,\"selection_dim\":64,\"selection_ratio\":0.05,\"selection_min_keys\":10}",
     "transformer-d512-l6", kScaleNs, "the same with top-k selection: k = 5 % of the keys"},
};

#undef LR_LRA_TEXT_AT_N
#undef LR_TRANSFORMER_AT_N
#undef LR_COMBINER_AT_N
#undef LR_COMBINER_CAUSAL_AT_N
#undef LR_LRA_TEXT
#undef LR_LRA_TEXT_8K
#undef LR_TRANSFORMER_BASE
#undef LR_COMBINER

}  // namespace

std::vector<ModelPreset> model_presets() { return {std::begin(kPresets), std::end(kPresets)}; }

std::vector<ModelPreset> scale_presets() { return {std::begin(kScalePresets), std::end(kScalePresets)}; }

std::string config_at_length(std::string_view config, int64_t n) {
  std::string out(config);
  const std::string mark = "@N@", value = std::to_string(n);
  for (size_t at = out.find(mark); at != std::string::npos; at = out.find(mark, at + value.size()))
    out.replace(at, mark.size(), value);
  return out;
}

const ModelPreset* find_preset(std::string_view name) {
  for (const ModelPreset& p : kPresets)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace longrun::bench
