"""BART encoder-decoder (arch "bart", HF BartForConditionalGeneration names), oracle in
seq2seq_oracle.py. HF semantics: positions arange + 2 whatever the padding, masks from
attention_mask, post-LN, layernorm_embedding, tied lm_head plus final_logits_bias."""

from collections import OrderedDict

import seq2seq_common as common

ARCH = "bart"


def spec(cfg):
    return dict(
        root="model.", enc_tokens="model.shared", dec_tokens="model.shared", out_proj="model.shared",
        logits_bias=True, src_vocab=cfg["vocab_size"], tgt_vocab=cfg["vocab_size"], dim=cfg["d_model"],
        enc_layers=cfg["encoder_layers"], dec_layers=cfg["decoder_layers"],
        enc_heads=cfg["encoder_attention_heads"], dec_heads=cfg["decoder_attention_heads"],
        enc_ffn=cfg["encoder_ffn_dim"], dec_ffn=cfg["decoder_ffn_dim"],
        act={"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh"}[cfg.get("activation_function", "gelu")],
        enc_pre=False, dec_pre=False, layernorm_embedding=True,
        embed_scale=cfg["d_model"] ** 0.5 if cfg.get("scale_embedding", False) else 1.0,
        positions="arange2", max_src=cfg["max_position_embeddings"], max_tgt=cfg["max_position_embeddings"],
        pad=cfg.get("pad_token_id", 1), eos=cfg.get("eos_token_id", 2), start=cfg.get("decoder_start_token_id", 2),
        fairseq_padding=False,
    )


def _cfg(**kw):
    c = dict(vocab_size=120, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=160,
             activation_function="gelu", scale_embedding=False, pad_token_id=1, eos_token_id=2,
             decoder_start_token_id=2)
    c.update(kw)
    return c


MODELS = OrderedDict(
    [
        ("bart_tiny", _cfg()),
        # D 32, scale_embedding, relu, 2 heads, 1 + 3 layers, FFN widths differ, a different start token
        ("bart_scaled", _cfg(vocab_size=97, d_model=32, encoder_layers=1, decoder_layers=3, encoder_attention_heads=2,
                             decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=48,
                             max_position_embeddings=70, activation_function="relu", scale_embedding=True,
                             decoder_start_token_id=0)),
    ]
)

# (case, model, batch, source length, real tokens per row (None: no mask), decoder length,
#  ids dtype, mask dtype)
CASES = [
    ("n1_t1", "bart_tiny", 1, 1, None, 1, "i64", None),
    ("n7_t5_pad", "bart_tiny", 2, 7, [7, 4], 5, "i64", "i64"),
    ("n150_t33_pad", "bart_tiny", 1, 150, [121], 33, "i32", "u8"),
    ("n66_t70", "bart_scaled", 2, 66, [66, 40], 70, "i64", "f32"),
]

# (case, model, batch, source length, real tokens per row, num_beams, max_new_tokens,
#  min_length, no_repeat_ngram_size, length_penalty)
GENERATION = [
    ("greedy", "bart_tiny", 2, 9, [9, 6], 1, 12, 3, 0, 1.0),
    ("beam4", "bart_tiny", 2, 9, [9, 6], 4, 12, 0, 0, 1.0),
    ("beam3_cnn", "bart_tiny", 1, 23, None, 3, 16, 5, 3, 2.0),
    ("beam2_norepeat2", "bart_scaled", 2, 11, [11, 5], 2, 10, 2, 2, 0.5),
]


def models():
    return common.family_models(MODELS, spec)


def cases(table):
    return common.family_cases(table, spec, CASES)


def generation_cases(table):
    return common.family_generation(table, spec, GENERATION)
