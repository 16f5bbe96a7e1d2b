"""Shared fixtures of the Python package tests (python/README.md)."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "models"

_NP = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "I64": np.int64, "U8": np.uint8}


def read_safetensors(path: Path) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """Every tensor of a safetensors file (copied) and its __metadata__."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=_NP[e["dtype"]]).reshape(e["shape"]).copy()
    return out, meta


def require_serve() -> None:
    """Skips the calling test module when Ray Serve is not installed, unless
    LONGRUN_REQUIRE_SERVE=1 (tools/dev/python_test.sh installs it and sets that), where a
    missing Ray fails instead."""
    try:
        import ray.serve  # noqa: F401
    except ImportError as e:
        if os.environ.get("LONGRUN_REQUIRE_SERVE") == "1":
            raise
        pytest.skip(f"Ray Serve is not installed ({e}); pip install 'longrun[serve]'", allow_module_level=True)


@pytest.fixture(scope="session")
def longrun_run() -> Path:
    """The longrun-run binary that gives the C++ reference results (LONGRUN_RUN, else build/ci)."""
    p = os.environ.get("LONGRUN_RUN") or str(ROOT / "build" / "ci" / "tools" / "longrun-run")
    if not Path(p).is_file():
        pytest.skip(f"no longrun-run at {p} (set LONGRUN_RUN; tools/dev/test.sh does)")
    return Path(p)


@pytest.fixture(scope="session")
def hf_bert_dir(tmp_path_factory) -> Path:
    """tests/golden/checkpoints/hf_bert with a 100-token WordPiece vocab.txt (the fixture of
    tools/convert/tokenizer_test.sh): an HF directory that converts with its tokenizer."""
    d = tmp_path_factory.mktemp("hf_bert")
    src = ROOT / "tests" / "golden" / "checkpoints" / "hf_bert"
    for f in ("config.json", "model.safetensors"):
        shutil.copy(src / f, d / f)
    vocab = (ROOT / "tests" / "golden" / "tokenizer" / "bert" / "vocab.txt").read_text(encoding="utf-8").split("\n")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + vocab[1996:2086] + [",", ".", "!", "?", "house"]
    assert len(tokens) == 100
    (d / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return d


@pytest.fixture(scope="session")
def text_model_path(hf_bert_dir, tmp_path_factory) -> Path:
    """The fixture converted through longrun.convert (a bert file with its tokenizer)."""
    import longrun

    out = tmp_path_factory.mktemp("converted") / "bert.safetensors"
    longrun.convert(hf_bert_dir, out)
    return out
