"""fairseq Transformer encoder-decoder (arch "transformer", fairseq names), oracle in
seq2seq_oracle.py. fairseq semantics: embed scale sqrt(D), make_positions (pad-aware)
sinusoidal or learned positions, masks from ids == pad, encoder pad rows zeroed."""

from collections import OrderedDict

import seq2seq_common as common

ARCH = "transformer"


def spec(cfg):
    share_all = cfg.get("share_all_embeddings", False)
    dec_tokens = "encoder.embed_tokens" if share_all else "decoder.embed_tokens"
    shared_out = share_all or cfg.get("share_decoder_input_output_embed", False)
    d = cfg["encoder_embed_dim"]
    return dict(
        root="", enc_tokens="encoder.embed_tokens", dec_tokens=dec_tokens,
        out_proj=dec_tokens if shared_out else "decoder.output_projection", logits_bias=False,
        src_vocab=cfg["src_vocab_size"], tgt_vocab=cfg["tgt_vocab_size"], dim=d,
        enc_layers=cfg["encoder_layers"], dec_layers=cfg["decoder_layers"],
        enc_heads=cfg["encoder_attention_heads"], dec_heads=cfg["decoder_attention_heads"],
        enc_ffn=cfg["encoder_ffn_embed_dim"], dec_ffn=cfg["decoder_ffn_embed_dim"],
        act={"relu": "relu", "gelu": "gelu", "gelu_accurate": "gelu_tanh"}[cfg.get("activation_fn", "relu")],
        enc_pre=cfg.get("encoder_normalize_before", False), dec_pre=cfg.get("decoder_normalize_before", False),
        layernorm_embedding=cfg.get("layernorm_embedding", False),
        embed_scale=1.0 if cfg.get("no_scale_embedding", False) else d**0.5,
        positions="learned" if cfg.get("encoder_learned_pos", False) else "sinusoidal",
        max_src=cfg.get("max_source_positions", 1024), max_tgt=cfg.get("max_target_positions", 1024),
        pad=cfg.get("pad", 1), eos=cfg.get("eos", 2), start=cfg.get("eos", 2), fairseq_padding=True,
    )


def _cfg(**kw):
    c = dict(src_vocab_size=100, tgt_vocab_size=90, encoder_embed_dim=64, encoder_ffn_embed_dim=128,
             decoder_ffn_embed_dim=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, share_decoder_input_output_embed=True, max_source_positions=256,
             max_target_positions=64)
    c.update(kw)
    return c


MODELS = OrderedDict(
    [
        # transformer_base shape, small: post-LN, sinusoidal, ReLU, decoder in/out tied
        ("transformer_base_tiny", _cfg()),
        # pre-LN with final norms, learned positions, share_all_embeddings, GELU, layernorm_embedding,
        # D 32, 1 + 2 layers, 8 heads of 4, pad 0, eos 3
        ("transformer_preln_shared", _cfg(src_vocab_size=80, tgt_vocab_size=80, encoder_layers=1,
                                          encoder_embed_dim=32, encoder_ffn_embed_dim=64, decoder_ffn_embed_dim=64,
                                          encoder_attention_heads=8, decoder_attention_heads=8,
                                          encoder_normalize_before=True, decoder_normalize_before=True,
                                          encoder_learned_pos=True, decoder_learned_pos=True,
                                          share_all_embeddings=True, activation_fn="gelu",
                                          layernorm_embedding=True, max_source_positions=100,
                                          max_target_positions=40, pad=0, eos=3)),
    ]
)

CASES = [
    ("n1_t1", "transformer_base_tiny", 1, 1, None, 1, "i64", None),
    ("n7_t6_leftpad", "transformer_base_tiny", 2, 7, [7, -3], 6, "i64", None),  # -3: left-padded by 3
    ("n201_t40", "transformer_base_tiny", 1, 201, None, 40, "i32", None),
    ("n13_t9_pad", "transformer_preln_shared", 2, 13, [13, 8], 9, "i64", None),
    ("n100_t40", "transformer_preln_shared", 1, 100, None, 40, "i64", None),
]

GENERATION = [
    ("greedy", "transformer_base_tiny", 2, 10, [10, 7], 1, 14, 3, 0, 1.0),
    ("beam5", "transformer_base_tiny", 2, 10, [10, -4], 5, 14, 3, 0, 1.0),
    ("beam3_norepeat3", "transformer_preln_shared", 1, 16, None, 3, 20, 4, 3, 2.0),
]


def models():
    return common.family_models(MODELS, spec)


def cases(table):
    return common.family_cases(table, spec, CASES)


def generation_cases(table):
    return common.family_generation(table, spec, GENERATION)
