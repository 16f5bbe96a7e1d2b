"""What every family oracle shares that is not model semantics: the deterministic synthetic
weights of the golden models and the padding masks of the golden cases.

Each tensor draws from its own generator seeded by crc32("<seed_name>/<tensor name>"), so a
tensor's values do not depend on the order or the presence of other tensors.
"""
import math
import zlib
from collections import OrderedDict

import numpy as np


def tensor_rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(parts).encode()))


def word_or_position_std(name):
    """Embedding tables: the word table at std 1, position/type tables at std 0.5."""
    return 1.0 if "word" in name else 0.5


def synthetic_weights(shapes, seed_name, *, is_embedding, is_norm_scale, gain=lambda name: 1.0,
                      fan_in=lambda name, shape: shape[1], embedding_std=word_or_position_std,
                      special=None):
    """Float32 weights with O(1) activations and clearly non-uniform attention (the official
    initialisations, e.g. std 0.02, would give near-constant outputs):
      special(name, shape, rng) -> array, or None to fall through to the rules below;
      embeddings N(0, embedding_std(name)); norm scales 1 + 0.1 N(0, 1); other 1-D tensors
      U(-0.1, 0.1); matrices U(-a, a) with a = gain(name) / sqrt(fan_in(name, shape)).
    `shapes` is an ordered {name: shape}; the result keeps its order."""
    out = OrderedDict()
    for name, shape in shapes.items():
        rng = tensor_rng(seed_name, name)
        w = special(name, shape, rng) if special is not None else None
        if w is not None:
            pass
        elif is_embedding(name):
            w = rng.standard_normal(shape) * embedding_std(name)
        elif is_norm_scale(name):
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        elif len(shape) == 1:
            w = rng.uniform(-0.1, 0.1, shape)
        else:
            a = gain(name) / math.sqrt(fan_in(name, shape))
            w = rng.uniform(-a, a, shape)
        out[name] = w.astype(np.float32)
    return out


def padding_mask(batch, n, mask_rows):
    """[batch, n] 0/1 float mask; row b is mask_rows[b]: an int L (the first L positions are
    real) or an explicit list of 0/1 values (left padding, holes)."""
    mask = np.zeros((batch, n))
    for b, row in enumerate(mask_rows):
        if isinstance(row, int):
            mask[b, :row] = 1
        else:
            mask[b] = row
    return mask
