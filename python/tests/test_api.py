"""The Python API: model metadata, tokenizer, embed, convert, every bad input (the right
error, the session still usable), closed handles, threads and a 10,000-run memory soak."""

from __future__ import annotations

import subprocess
import threading

import numpy as np
import pytest

import longrun
from conftest import GOLDEN, read_safetensors

BERT = GOLDEN / "bert_tiny.safetensors"


@pytest.fixture(scope="module")
def bert():
    return longrun.Model(BERT)


@pytest.fixture(scope="module")
def bert_inputs():
    tensors, _ = read_safetensors(GOLDEN / "bert_tiny.n7_pad.io.safetensors")
    return {k[len("input/"):]: v for k, v in tensors.items() if k.startswith("input/")}


def test_model_metadata(bert):
    assert bert.arch == "bert"
    assert bert.config["vocab_size"] == 100
    names = [i.name for i in bert.inputs]
    assert names[0] == "input_ids" and bert.inputs[0].required and "attention_mask" in names
    assert "int64" in bert.inputs[0].dtypes or "i64" in bert.inputs[0].dtypes
    assert bert.outputs[0] == "last_hidden_state"
    assert bert.tokenizer is None
    assert "bert" in longrun.architectures()
    assert longrun.version()


def test_input_ids_alone_and_zero_copy_result_types(bert, bert_inputs):
    s = bert.session(threads=1)
    out = s.run({"input_ids": bert_inputs["input_ids"]})
    assert out["last_hidden_state"].dtype == np.float32
    assert out["last_hidden_state"].shape == (2, 7, 64)
    assert out["last_hidden_state"].flags.c_contiguous


def test_bad_inputs_raise_and_leave_the_session_usable(bert, bert_inputs):
    s = bert.session(threads=1)
    ref = s.run(bert_inputs)
    ids = bert_inputs["input_ids"]
    bad = [
        ({**bert_inputs, "input_ids": ids.astype(np.float64)}, longrun.InvalidArgumentError, "float64"),
        ({**bert_inputs, "input_ids": ids.astype(np.float32)}, longrun.InvalidArgumentError, "input_ids"),
        ({**bert_inputs, "input_ids": ids[None]}, longrun.InvalidArgumentError, "input_ids"),
        ({"attention_mask": bert_inputs["attention_mask"]}, longrun.Error, "input_ids"),
        ({**bert_inputs, "nonsense": ids}, longrun.Error, "nonsense"),
        ({**bert_inputs, "input_ids": ids + 1000}, longrun.Error, "id 10.. out of range"),
        ({**bert_inputs, "input_ids": -ids - 1}, longrun.Error, "out of range"),
        ({**bert_inputs, "input_ids": ids.tolist()}, longrun.InvalidArgumentError, "numpy array"),
        ({**bert_inputs, "input_ids": ids.astype(">i8")}, longrun.InvalidArgumentError, "byte order"),
    ]
    for inputs, error, words in bad:
        with pytest.raises(error, match=words):
            s.run(inputs)
        again = s.run(bert_inputs)
        for k in ref:
            assert again[k].tobytes() == ref[k].tobytes()
    # Out-of-range ids are longrun's out_of_range or invalid_argument, with its message.
    with pytest.raises((longrun.OutOfRangeError, longrun.InvalidArgumentError)):
        s.run({**bert_inputs, "input_ids": ids + 1000})


def test_non_contiguous_inputs_are_converted(bert, bert_inputs):
    s = bert.session(threads=1)
    ref = s.run(bert_inputs)
    fortran = {k: np.asfortranarray(v) for k, v in bert_inputs.items()}
    strided = {k: np.repeat(v, 2, axis=1)[:, ::2] for k, v in bert_inputs.items()}
    assert not strided["input_ids"].flags.c_contiguous
    for inputs in (fortran, strided):
        out = s.run(inputs)
        assert out["last_hidden_state"].tobytes() == ref["last_hidden_state"].tobytes()


def test_options_are_checked(bert):
    with pytest.raises(longrun.InvalidArgumentError, match="precision: expected one of f32, bf16, int8, found 'f16'"):
        bert.session(precision="f16")
    with pytest.raises(longrun.UnsupportedError, match="cuda backend: precision bf16 is not implemented"):
        bert.session(backend="cuda", precision="bf16")
    bert.session(backend="reference", precision="int8")  # the formats' scalar emulations
    bert.session(backend="reference", precision="bf16")
    with pytest.raises(longrun.Error, match="backend|nope"):
        bert.session(backend="nope")
    with pytest.raises(longrun.InvalidArgumentError, match="threads"):
        bert.session(threads=-1)
    with pytest.raises(longrun.InvalidArgumentError, match="memory_limit"):
        bert.session(memory_limit=-5)


def test_memory_limit_raises_out_of_memory_and_session_stays_usable(bert, bert_inputs):
    s = bert.session(threads=1, memory_limit=1024)
    with pytest.raises(longrun.OutOfMemoryError):
        s.run(bert_inputs)
    assert bert.session(threads=1).run(bert_inputs)["last_hidden_state"].shape == (2, 7, 64)


def test_closed_model_and_session(bert_inputs):
    m = longrun.Model(BERT)
    s = m.session(threads=1)
    m.close()
    assert m.closed
    with pytest.raises(longrun.ClosedError, match="model is closed"):
        m.session()
    with pytest.raises(longrun.ClosedError):
        _ = m.arch
    # The session keeps the weights alive.
    assert s.run(bert_inputs)["last_hidden_state"].shape == (2, 7, 64)
    s.close()
    with pytest.raises(longrun.ClosedError, match="session is closed"):
        s.run(bert_inputs)


def test_close_while_other_threads_run(bert_inputs):
    m = longrun.Model(BERT)
    s = m.session(threads=1)
    outcomes = []

    def work():
        try:
            for _ in range(100000):
                s.run(bert_inputs)
            outcomes.append("never closed")
        except longrun.ClosedError:
            outcomes.append("closed")

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    s.run(bert_inputs)
    s.close()
    m.close()
    for t in threads:
        t.join()
    assert outcomes == ["closed", "closed"]


def test_load_errors_carry_longrun_messages(tmp_path):
    with pytest.raises(longrun.NotFoundError, match="nope.safetensors"):
        longrun.Model(tmp_path / "nope.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(longrun.FormatError, match="bad.safetensors"):
        longrun.Model(bad)


def test_tokenizer_embed_and_convert(text_model_path, longrun_run, tmp_path):
    m = longrun.Model(text_model_path)
    tok = m.tokenizer
    assert tok is not None and tok.vocab_size == 100
    # [CLS] the man([UNK]) was in his house ! [SEP] (tools/convert/tokenizer_test.sh)
    assert tok.encode("The man was in his house!") == [2, 5, 1, 10, 8, 19, 99, 97, 3]
    assert tok.decode([2, 5, 10, 3]) == "the was"
    ids, mask = tok.encode_batch(["The man was in his house!", "the house"])
    assert ids.shape == (2, 9) and mask[1].tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert ids[1, 4:].tolist() == [tok.pad_id] * 5
    ids, mask = tok.encode_batch(["The man was in his house!"], max_length=4)
    assert ids.tolist() == [[2, 5, 1, 3]]
    ids, _ = tok.encode_batch(["the"], max_length=6, padding="max_length")
    assert ids.shape == (1, 6)

    s = m.session(threads=1)
    texts = ["The man was in his house!", "the house", "his house was the house"]
    emb = s.embed(texts)
    assert emb.shape == (3, 64) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-6)
    # Mean pooling of run() over the real tokens, in double.
    ids, mask = tok.encode_batch(texts)
    h = s.run({"input_ids": ids, "attention_mask": mask})["last_hidden_state"].astype(np.float64)
    mean = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    np.testing.assert_allclose(emb, mean, atol=1e-6)
    assert s.embed(texts[0]).shape == (64,)
    assert s.embed(texts, pooling="cls", normalize=False).shape == (3, 64)
    with pytest.raises(longrun.InvalidArgumentError, match="pooling"):
        s.embed(texts, pooling="median")

    # The same outputs as longrun-run --text (the C++ tokenizer path), bit for bit.
    ref = tmp_path / "ref.safetensors"
    subprocess.run([str(longrun_run), "--model", str(text_model_path), "--threads", "1", "--text", texts[0],
                    "--text", texts[1], "--output", str(ref)], check=True, capture_output=True)
    want, _ = read_safetensors(ref)
    ids, mask = tok.encode_batch(texts[:2])
    got = s.run({"input_ids": ids, "attention_mask": mask})
    assert got["last_hidden_state"].tobytes() == want["last_hidden_state"].tobytes()


def test_convert_options_and_errors(hf_bert_dir, tmp_path):
    out = tmp_path / "f.safetensors"
    summary = longrun.convert(hf_bert_dir, out, arch="fourier-bert",
                              set={"filter_layers": [0], "filter_ratio": 0.5}, dtype="f16", no_tokenizer=True)
    assert summary["arch"] == "fourier-bert" and not summary["tokenizer"]
    m = longrun.Model(out)
    assert m.arch == "fourier-bert" and m.config["filter_ratio"] == 0.5 and m.tokenizer is None
    with pytest.raises(longrun.InvalidArgumentError, match="dtype"):
        longrun.convert(hf_bert_dir, out, dtype="i8")
    with pytest.raises(longrun.Error, match="no_such_key"):
        longrun.convert(hf_bert_dir, out, set=["no_such_key=1"])
    with pytest.raises(longrun.Error, match="missing"):
        longrun.convert(tmp_path / "missing", out)


def test_convert_quantize_int8(hf_bert_dir, tmp_path):
    plain, quantized = tmp_path / "plain.safetensors", tmp_path / "int8.safetensors"
    assert longrun.convert(hf_bert_dir, plain)["quantized"] is None
    summary = longrun.convert(hf_bert_dir, quantized, quantize="int8")
    q = summary["quantized"]
    assert q["weights"] > 0 and q["bytes_after"] < q["bytes_before"]
    assert q["bytes_after"] == quantized.stat().st_size
    a, b = longrun.Model(plain), longrun.Model(quantized)
    ids = np.array([[2, 7, 11, 3]], dtype=np.int64)
    # int8 sessions: the stored values are what the source's weights quantize to, bit for bit.
    ra = a.session(threads=1, precision="int8").run({"input_ids": ids})
    rb = b.session(threads=1, precision="int8").run({"input_ids": ids})
    assert ra.keys() == rb.keys()
    for k in ra:
        assert ra[k].tobytes() == rb[k].tobytes(), k
    # f32 runs the dequantized weights: close to the source, not equal.
    fa = a.session(threads=1).run({"input_ids": ids})
    fb = b.session(threads=1).run({"input_ids": ids})
    for k in fa:
        assert np.all(np.isfinite(fb[k])) and np.allclose(fa[k], fb[k], atol=0.2), k
    with pytest.raises(longrun.InvalidArgumentError, match="quantize"):
        longrun.convert(hf_bert_dir, tmp_path / "x.safetensors", quantize="int4")


def test_two_threads_run_concurrently_with_equal_results(bert, bert_inputs):
    ref = bert.session(threads=1).run(bert_inputs)["last_hidden_state"].tobytes()
    errors = []

    def work():
        try:
            s = bert.session(threads=1)
            for _ in range(200):
                if s.run(bert_inputs)["last_hidden_state"].tobytes() != ref:
                    errors.append("result differs")
                    return
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    shared = bert.session(threads=1)

    def shared_work():
        for _ in range(200):
            if shared.run(bert_inputs)["last_hidden_state"].tobytes() != ref:
                errors.append("shared session result differs")
                return

    threads = [threading.Thread(target=work) for _ in range(2)] + [threading.Thread(target=shared_work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_run_releases_the_gil(bert):
    """A Python thread keeps counting while run() computes: with the GIL held it could not."""
    s = bert.session(threads=1)
    ids = {"input_ids": (np.arange(48 * 257, dtype=np.int64).reshape(48, 257) % 97) + 1}
    s.run(ids)  # plan once
    count = [0]
    stop = threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    # A short switch interval bounds what the counter gets between the reads and the call.
    import sys
    import time

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    t = threading.Thread(target=counter)
    t.start()
    try:
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.05)
        rate = (count[0] - c0) / (time.perf_counter() - t0)  # counts per second, GIL shared
        c0, t0 = count[0], time.perf_counter()
        s.run(ids)
        during, seconds = count[0] - c0, time.perf_counter() - t0
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    assert during > 0.2 * rate * seconds, (during, rate, seconds)


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_10000_runs_with_flat_memory(bert, bert_inputs):
    s = bert.session(threads=1)
    for _ in range(1000):  # warm-up: plans, allocator pools
        s.run(bert_inputs)
    before = _rss_kib()
    for _ in range(10000):
        s.run(bert_inputs)
    growth = _rss_kib() - before
    # One run's outputs are ~10 KiB; a leak of one of them per run would be ~100 MiB.
    assert growth < 4096, f"RSS grew by {growth} KiB over 10,000 runs"


def test_int8_precision_runs_close_to_f32(bert, bert_inputs):
    """int8 (cpu, AVX2 and up): the same outputs within the models' int8 bound (tests/models:
    golden_models_test.cpp), f32 untouched by it."""
    f32 = bert.session(threads=1).run(bert_inputs)
    try:
        int8 = bert.session(threads=1, precision="int8").run(bert_inputs)
    except longrun.UnsupportedError as e:  # a CPU without AVX2
        pytest.skip(str(e))
    a, b = f32["last_hidden_state"].astype(np.float64), int8["last_hidden_state"].astype(np.float64)
    err = np.linalg.norm(a - b) / np.linalg.norm(a)
    assert 0 < err < 6e-2
    assert bert.session(threads=1).run(bert_inputs)["last_hidden_state"].tobytes() == f32["last_hidden_state"].tobytes()
