"""Fourier-BART (arch "fourier-bart", docs/models.md#fourier-bart), oracle in seq2seq_oracle.py: BART
names (HF), fairseq semantics (make_positions, padding from ids == pad, pad rows zeroed),
the spectral filter before the listed encoder layers (all tokens, M = ceil(T r)), no key mask
from the first filter on and for cross-attention, and the global residual (pre-filter inputs
plus the last pre-LN sum, nearest-upsampled to the input length) before the last encoder LN.
The official fp16 rounding of the filter output (docs/models.md#fourier-bart) is not reproduced."""

from collections import OrderedDict

import seq2seq_bart
import seq2seq_common as common

ARCH = "fourier-bart"


def spec(cfg):
    sp = seq2seq_bart.spec(cfg)
    sp.update(positions="learned", fairseq_padding=True, filter_layers=list(cfg["dct_layers"]),
              filter_ratio=cfg.get("dct_percentage", 0.0))
    return sp


def _cfg(**kw):
    c = dict(vocab_size=80, d_model=32, encoder_layers=3, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=130,
             dct_layers=[1, 2], dct_percentage=0.5)
    c.update(kw)
    return c


MODELS = OrderedDict(
    [
        # filters before layers 1 and 2 (the second sees the first's length; three global terms)
        ("fourier_bart_l12_r05", _cfg()),
        # one filter before the last encoder layer (the released CNN/DM scripts: layer 2), r = 0.3
        ("fourier_bart_l2_r03", _cfg(encoder_layers=3, decoder_layers=1, dct_layers=[2], dct_percentage=0.3,
                                     vocab_size=60, max_position_embeddings=40)),
    ]
)

CASES = [
    ("n1_t1", "fourier_bart_l12_r05", 1, 1, None, 1, "i64", None),
    ("n9_t4_pad", "fourier_bart_l12_r05", 2, 9, [9, 6], 4, "i64", None),
    ("n33_t7_leftpad", "fourier_bart_l12_r05", 2, 33, [33, -5], 7, "i32", None),
    ("n128_t20", "fourier_bart_l12_r05", 1, 128, None, 20, "i64", None),
    ("n37_t11_pad", "fourier_bart_l2_r03", 2, 37, [37, 20], 11, "i64", None),
]

GENERATION = [
    ("beam3_cnn", "fourier_bart_l12_r05", 2, 13, [13, 9], 3, 12, 3, 3, 2.0),
    ("greedy", "fourier_bart_l2_r03", 1, 15, None, 1, 10, 2, 0, 1.0),
]


def models():
    return common.family_models(MODELS, spec)


def cases(table):
    return common.family_cases(table, spec, CASES)


def generation_cases(table):
    return common.family_generation(table, spec, GENERATION)
