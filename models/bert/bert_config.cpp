// Strict parsing of the bert / roberta / fourier-bert / fourier-roberta configs (HF
// config.json names; bert.h lists them).
#include "bert/bert_config.h"

#include <string>

#include "bert/bert.h"
#include "common/config.h"

namespace longrun::models {
namespace {

constexpr int64_t kMaxDim = int64_t(1) << 20;
constexpr int64_t kMaxPad = int64_t(1) << 24;  // pad + positions stay exact in f32

// Keys HF config.json files carry that do not change the inference forward pass.
constexpr const char* kIgnoredKeys[] = {"architectures",
                                        "model_type",
                                        "transformers_version",
                                        "torch_dtype",
                                        "initializer_range",
                                        "hidden_dropout_prob",
                                        "attention_probs_dropout_prob",
                                        "classifier_dropout",
                                        "gradient_checkpointing",
                                        "use_cache",
                                        "bos_token_id",
                                        "eos_token_id",
                                        "sep_token_id",
                                        "cls_token_id",
                                        "id2label",
                                        "label2id",
                                        "num_labels",
                                        "problem_type",
                                        "output_past",
                                        "tokenizer_class",
                                        "chunk_size_feed_forward",
                                        "output_hidden_states",
                                        "output_attentions",
                                        "return_dict",
                                        "finetuning_task",
                                        "_name_or_path"};

Result<Activation> activation_of(ConfigReader& r, const std::string& name) {
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::gelu_tanh;
  if (name == "relu") return Activation::relu;
  return r.error(
      "hidden_act",
      "expected \"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\" or \"relu\", found \"" + name + "\"");
}

Status require_false(ConfigReader& r, const char* key) {
  LR_ASSIGN_OR_RETURN(const bool v, r.boolean_or(key, false));
  if (v) return unsupported(r.error(key, "only false (an encoder) is implemented, found true").message());
  return Status();
}

Result<std::unique_ptr<Architecture>> parse(std::string_view json, const std::string& arch, bool roberta,
                                            bool fourier) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(json, arch + " config"));
  BertConfig c;
  c.arch = arch;
  c.roberta = roberta;
  c.fourier = fourier;
  LR_ASSIGN_OR_RETURN(c.vocab_size, r.integer("vocab_size", 1, int64_t(1) << 31));
  LR_ASSIGN_OR_RETURN(c.hidden_size, r.integer("hidden_size", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.num_layers, r.integer("num_hidden_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(c.num_heads, r.integer("num_attention_heads", 1, 4096));
  if (c.hidden_size % c.num_heads != 0)
    return r.error("num_attention_heads", "must divide hidden_size " + std::to_string(c.hidden_size) +
                                              ", found " + std::to_string(c.num_heads));
  LR_ASSIGN_OR_RETURN(c.intermediate_size, r.integer("intermediate_size", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.hidden_act, r.string_or("hidden_act", "gelu"));
  LR_ASSIGN_OR_RETURN(c.act, activation_of(r, c.hidden_act));
  LR_ASSIGN_OR_RETURN(c.pad_token_id, r.integer_or("pad_token_id", roberta ? 1 : 0, 0, kMaxPad));
  // roberta: the first real token uses row pad + 1, so the table needs pad + 2 rows at least.
  LR_ASSIGN_OR_RETURN(c.max_positions, r.integer_or("max_position_embeddings", 512,
                                                    roberta ? c.pad_token_id + 2 : 1, int64_t(1) << 24));
  LR_ASSIGN_OR_RETURN(c.type_vocab_size, r.integer_or("type_vocab_size", roberta ? 1 : 2, 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.layer_norm_eps, r.number_or("layer_norm_eps", 1e-12, 0.0, 1.0));
  LR_ASSIGN_OR_RETURN(const std::string pos_type, r.string_or("position_embedding_type", "absolute"));
  if (pos_type != "absolute")
    return unsupported(
        r.error("position_embedding_type", "only \"absolute\" is implemented, found \"" + pos_type + "\"")
            .message());
  LR_RETURN_IF_ERROR(require_false(r, "is_decoder"));
  LR_RETURN_IF_ERROR(require_false(r, "add_cross_attention"));
  LR_ASSIGN_OR_RETURN(c.add_pooling_layer, r.boolean_or("add_pooling_layer", true));
  LR_ASSIGN_OR_RETURN(c.mlm_head, r.boolean_or("mlm_head", false));
  if (fourier) {
    LR_RETURN_IF_ERROR(
        r.filter_layers("filter_layers", "filter_ratio", c.num_layers, &c.filter_layers, &c.filter_ratio));
  }
  for (const char* k : kIgnoredKeys) r.ignore(k);
  LR_RETURN_IF_ERROR(r.finish());
  return make_bert_architecture(std::move(c));
}

}  // namespace

Result<std::unique_ptr<Architecture>> parse_bert_config(std::string_view json) {
  return parse(json, "bert", false, false);
}
Result<std::unique_ptr<Architecture>> parse_roberta_config(std::string_view json) {
  return parse(json, "roberta", true, false);
}
Result<std::unique_ptr<Architecture>> parse_fourier_bert_config(std::string_view json) {
  return parse(json, "fourier-bert", false, true);
}
Result<std::unique_ptr<Architecture>> parse_fourier_roberta_config(std::string_view json) {
  return parse(json, "fourier-roberta", true, true);
}

}  // namespace longrun::models
