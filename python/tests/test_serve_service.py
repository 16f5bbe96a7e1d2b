"""longrun.serve's HTTP API without Ray: request parsing and its errors, batched execution equal
to direct runs, /embed and /generate (python/longrun/serve/_service.py)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from conftest import GOLDEN, require_serve

require_serve()
from longrun.serve._service import (Limits, RequestError, Service, decode_array, encode_array,  # noqa: E402
                                    error_body, parse_array, parse_json)

BERT = GOLDEN / "bert_tiny.safetensors"
BART = GOLDEN / "bart_tiny.safetensors"


@pytest.fixture(scope="module")
def service():
    s = Service(str(BERT), 1)
    yield s
    s.close()


def _request_error(fn, *args):
    with pytest.raises(RequestError) as e:
        fn(*args)
    return e.value


@pytest.mark.parametrize("body,status,words", [
    (b"{", 400, "not valid JSON"),
    (b"[1]", 400, "expected a JSON object, found an array"),
    (b'{"inputs": {}}', 400, "request.inputs: expected an object"),
    (b'{"inputs": {"ids": [[1]]}}', 400, "bert has no input 'ids'"),
    (b'{"inputs": {"input_ids": [[1, 2], [3]]}}', 400, "input_ids[1]: ragged array, expected 2 elements, found 1"),
    (b'{"inputs": {"input_ids": [[1, "a"]]}}', 400, "input_ids[0][1]: expected a number, found a string"),
    (b'{"inputs": {"input_ids": [[true]]}}', 400, "expected a number, found a boolean"),
    (b'{"inputs": {"input_ids": [[99999999999999999999]]}}', 400, "does not fit int64"),
    (b'{"inputs": {"input_ids": {"dtype": "int8", "shape": [1], "data": [1]}}}', 400,
     "dtype: expected one of float32, float16, int32, int64, uint8, found 'int8'"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [2, 2], "data": [1]}}}', 400,
     "shape [2, 2] needs a flat array of 4 values, found 1"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [-1], "data": []}}}', 400, "non-negative"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [1, 1], "data": [2.5]}}}', 400,
     "expected an integer in -2147483648..2147483647 for int32, found 2.5"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [1], "b64": "AAA"}}}', 400, "not valid base64"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [2], "b64": "AAAAAA=="}}}', 400,
     "needs 8 bytes, found 4"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [1], "data": [1], "b64": ""}}}', 400, "exactly one"),
    (b'{"inputs": {"input_ids": {"dtype": "int32", "shape": [65536, 65536], "data": []}}}', 413, "elements"),
    (b'{"inputs": {"input_ids": [[1]]}, "encoding": "hex"}', 400, "request.encoding: expected one of list, base64"),
    (b'{"inputs": {"input_ids": [[1]]}, "outputs": ["nope"]}', 400, "no output 'nope'"),
    (b'{"inputs": {"input_ids": [[1]]}, "extra": 1}', 400, "unknown field 'extra'"),
])
def test_bad_run_requests_name_the_field(service, body, status, words):
    e = _request_error(lambda: service.parse_run(parse_json(body, service.limits)))
    assert e.status == status and words in str(e)


def test_body_limit_and_nesting_limit():
    limits = Limits(max_body_bytes=16, max_elements=4)
    assert _request_error(parse_json, b'{"a": "0123456789abcdef"}', limits).status == 413
    assert _request_error(parse_array, "x", [[1, 2, 3], [4, 5, 6]], limits).status == 413
    assert "deeper than 8" in str(_request_error(parse_array, "x", [[[[[[[[[1]]]]]]]]], Limits()))


def test_arrays_round_trip_bit_for_bit():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    a[0, 0, :3] = [np.float32(1e-45), -0.0, np.float32(3.4e38)]
    for encoding in ("list", "base64"):
        wire = json.loads(json.dumps(encode_array(a, encoding)))
        b = decode_array(wire)
        assert b.dtype == np.float32 and np.array_equal(a.view(np.uint32), b.view(np.uint32))
        c = parse_array("x", wire, Limits())
        assert np.array_equal(a.view(np.uint32), c.view(np.uint32))
    ids = parse_array("x", [[1, 2], [3, 4]], Limits())
    assert ids.dtype == np.int64 and ids.tolist() == [[1, 2], [3, 4]]
    assert parse_array("x", [0.5, 1], Limits()).dtype == np.float32
    raw = base64.b64encode(np.array([7, 8], dtype="<i4").tobytes()).decode()
    assert parse_array("x", {"dtype": "int32", "shape": [2], "b64": raw}, Limits()).tolist() == [7, 8]


def test_run_batch_equals_direct_runs_and_isolates_bad_requests(service):
    rng = np.random.default_rng(0)
    bodies = []
    for n in (5, 5, 9, 5, 9, 1):
        rows = int(rng.integers(1, 3))
        bodies.append({"inputs": {"input_ids": rng.integers(0, 100, size=(rows, n)).tolist()}, "encoding": "base64"})
    bodies.insert(2, {"inputs": {"input_ids": [[1, 2, 3, 4, 100]]}})  # id out of range, stacks with the n=5 group
    bodies.append({"inputs": {"input_ids": [[1, 2]], "attention_mask": [[1, 0]]}, "outputs": ["pooled"]})
    requests = [service.parse_run(b) for b in bodies]
    results = service.run_batch(requests)
    for body, req, res in zip(bodies, requests, results):
        if body["inputs"]["input_ids"] == [[1, 2, 3, 4, 100]]:
            status, err = error_body(res)
            assert status == 400 and err["error"]["type"] == "OutOfRangeError" and "id 100" in err["error"]["message"]
            continue
        direct = service.session.run(req.inputs)
        names = body.get("outputs") or list(direct)
        assert sorted(res["outputs"]) == sorted(names)
        for name in names:
            got = decode_array(res["outputs"][name])
            assert np.array_equal(got, direct[name]), name


def test_embed_and_generate():
    s = Service(str(BART), 1)
    try:
        req = s.parse_generate({"input_ids": [[0, 5, 6, 7, 2]], "max_new_tokens": 4, "num_beams": 2})
        got = s.generate(req)
        direct = s.session.generate(np.array([[0, 5, 6, 7, 2]], dtype=np.int64), max_new_tokens=4, num_beams=2)
        assert got["sequences"] == direct.sequences and got["scores"] == direct.scores
        for bad, words in (({}, "exactly one of input_ids"), ({"input_ids": [[1]], "num_beams": 0}, "num_beams"),
                           ({"input_ids": [[1]], "length_penalty": "x"}, "length_penalty"),
                           ({"texts": ["a"]}, "carries no tokenizer")):
            assert words in str(_request_error(s.parse_generate, bad))
    finally:
        s.close()


def test_embed_batch_equals_direct_embed(text_model_path):
    s = Service(str(text_model_path), 1)
    try:
        texts = [["the house"], ["a house, the house!", "the"], ["house house house house house"], ["the house"]]
        requests = [s.parse_embed({"texts": t}) for t in texts]
        requests.append(s.parse_embed({"texts": "the", "pooling": "cls", "normalize": False, "encoding": "base64"}))
        results = s.embed_batch(requests)
        for req, res in zip(requests, results):
            direct = s.session.embed(req.texts, req.pooling, req.normalize)
            got = res["embeddings"]
            got = decode_array(got) if isinstance(got, dict) else np.asarray(got, dtype=np.float32)
            assert np.array_equal(got, direct)
        for bad, words in (({"texts": []}, "non-empty array"), ({"texts": ["a"], "pooling": "sum"}, "pooling"),
                           ({"texts": ["a"], "normalize": 1}, "normalize: expected a boolean"),
                           ({"texts": ["a"] * 2000}, "over the limit")):
            assert words in str(_request_error(s.parse_embed, bad))
    finally:
        s.close()


def test_cli_refuses_a_bad_file_and_bad_options_before_starting_ray(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    for args, words in (([str(tmp_path / "missing.safetensors")], "no such file"), ([str(bad)], "bad.safetensors"),
                        ([str(BERT), "--replicas", "0"], "--replicas: 0 is out of range"),
                        ([str(BERT), "--port", "70000"], "--port: 70000 is out of range")):
        r = subprocess.run([sys.executable, "-m", "longrun.serve"] + args, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and words in r.stderr, (args, r.returncode, r.stderr)
