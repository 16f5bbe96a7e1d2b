"""Every family's goldens through Python: the outputs equal longrun-run's (the C++ path) bit
for bit, and the PyTorch oracle's within the tolerance of tests/models/golden_models_test.cpp."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import longrun
from conftest import GOLDEN, read_safetensors

IO_FILES = sorted(GOLDEN.glob("*.io.safetensors"))
GEN_FILES = sorted(GOLDEN.glob("*.gen.safetensors"))
MAX_NORM_ERR = 1e-5  # tests/support/golden_error.h
MAX_ABS_ERR = 1e-4


def test_every_family_has_goldens():
    families = {p.name.split(".")[0] for p in IO_FILES}
    assert len(IO_FILES) >= 30 and len(families) >= 20, families


@pytest.mark.parametrize("io_path", IO_FILES, ids=lambda p: p.name[: -len(".io.safetensors")])
def test_outputs_equal_cpp_and_oracle(io_path: Path, longrun_run: Path, tmp_path: Path):
    tensors, meta = read_safetensors(io_path)
    inputs = {k[len("input/"):]: v for k, v in tensors.items() if k.startswith("input/")}
    expected = {k[len("expected/"):]: v for k, v in tensors.items() if k.startswith("expected/")}
    model = longrun.Model(GOLDEN / meta["longrun.model"], debug_outputs=True)
    got = model.session(threads=1).run(inputs)
    assert set(got) == set(expected)

    ref_path = tmp_path / "ref.safetensors"
    subprocess.run([str(longrun_run), "--model", str(GOLDEN / meta["longrun.model"]), "--input", str(io_path),
                    "--debug-outputs", "--threads", "1", "--output", str(ref_path)],
                   check=True, capture_output=True)
    ref, _ = read_safetensors(ref_path)
    for name, want in expected.items():
        a = got[name]
        assert a.shape == want.shape and a.dtype == np.float32, name
        assert a.tobytes() == ref[name].tobytes(), f"{name}: differs from longrun-run"
        d = a.astype(np.float64) - want
        norm = np.sqrt((d * d).sum() / max((want.astype(np.float64) ** 2).sum(), 1e-300))
        assert norm <= MAX_NORM_ERR and np.abs(d).max() <= MAX_ABS_ERR, (name, norm, np.abs(d).max())


@pytest.mark.parametrize("gen_path", GEN_FILES, ids=lambda p: p.name[: -len(".gen.safetensors")])
def test_generation_equals_cpp_and_oracle(gen_path: Path, longrun_run: Path):
    tensors, meta = read_safetensors(gen_path)
    opt = json.loads(meta["longrun.generate"])
    model_path = GOLDEN / meta["longrun.model"]
    ids = tensors["input/input_ids"]
    mask = tensors.get("input/attention_mask")
    session = longrun.Model(model_path).session(threads=1)
    k = opt["num_beams"]
    r = session.generate(ids, mask, max_new_tokens=opt["max_new_tokens"], num_beams=k,
                         min_length=opt["min_length"], no_repeat_ngram_size=opt["no_repeat_ngram_size"],
                         length_penalty=opt["length_penalty"], num_return_sequences=k)
    seqs, scores = tensors["expected/sequences"], tensors["expected/scores"]
    for b in range(seqs.shape[0]):
        for j in range(k):
            assert r.sequences[b][j] == [int(t) for t in seqs[b, j] if t >= 0]
            assert abs(r.scores[b][j] - float(scores[b, j])) <= 1e-4

    # longrun-run --generate on the same inputs (it prints every hypothesis and its score).
    cmd = [str(longrun_run), "--model", str(model_path), "--input", str(gen_path), "--threads", "1", "--generate",
           "--max-new-tokens", str(opt["max_new_tokens"]), "--beam", str(k), "--num-return", str(k),
           "--min-length", str(opt["min_length"]), "--no-repeat-ngram", str(opt["no_repeat_ngram_size"]),
           "--length-penalty", repr(float(opt["length_penalty"]))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = re.findall(r"^sequence (\d+)\.(\d+) score (\S+): (.*)$", out, re.M)
    assert len(lines) == ids.shape[0] * k
    for b, j, score, toks in lines:
        assert r.sequences[int(b)][int(j)] == [int(t) for t in toks.split()]
        assert f"{r.scores[int(b)][int(j)]:.6f}" == score
