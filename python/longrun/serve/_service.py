"""The HTTP JSON API of longrun.serve, without Ray: request parsing, batched execution and
responses. The Ray deployment (``_deployment.py``) hands every request to a :class:`Service`;
tests drive a Service directly.

Every request body is untrusted: sizes, ranks, element counts, dtypes and option values are
checked before anything is allocated, and a bad request is answered with a JSON error naming
the field, what was expected and what was found; it never reaches the model.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

import longrun

#: dtype names the API accepts and returns, and their numpy little-endian types.
DTYPES: Dict[str, np.dtype] = {
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint8": np.dtype("u1"),
}
_POOLINGS = ("mean", "cls", "max")
_ENCODINGS = ("list", "base64")
MAX_RANK = 8


class RequestError(Exception):
    """A request the API refuses before it reaches the model: HTTP ``status`` and a message."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequest") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True)
class Limits:
    """What one request may carry. The body limit is checked before the body is read."""

    max_body_bytes: int = 64 << 20
    max_elements: int = 1 << 26  # per array
    max_texts: int = 1024
    max_new_tokens: int = 4096


@dataclass
class RunRequest:
    inputs: Dict[str, np.ndarray]
    outputs: Optional[List[str]]
    encoding: str

    def group_key(self) -> Tuple:
        """Requests with equal keys are stacked along the batch axis into one run."""
        return tuple((n, a.dtype.str, a.shape[1:]) for n, a in sorted(self.inputs.items()))


@dataclass
class EmbedRequest:
    texts: List[str]
    pooling: str = "mean"
    normalize: bool = True
    max_length: Optional[int] = None
    encoding: str = "list"

    def group_key(self) -> Tuple:
        return (self.pooling, self.normalize, self.max_length)


@dataclass
class GenerateRequest:
    input_ids: List[np.ndarray] = field(default_factory=list)  # one [1, N] or [B, N] array per call
    attention_mask: Optional[np.ndarray] = None
    options: Dict[str, Any] = field(default_factory=dict)
    texts: bool = False


# ---- JSON values -> checked Python values ---------------------------------------------------


def parse_json(body: bytes, limits: Limits) -> Dict[str, Any]:
    """The request body as a JSON object, or a RequestError saying why not."""
    if len(body) > limits.max_body_bytes:
        raise RequestError(f"request body of {len(body)} bytes is over the limit of {limits.max_body_bytes}", 413,
                           "PayloadTooLarge")
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(f"request body is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise RequestError(f"request body: expected a JSON object, found {_json_type(value)}")
    return value


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def _check_keys(obj: Mapping[str, Any], where: str, allowed: Sequence[str]) -> None:
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise RequestError(f"{where}: unknown field {unknown[0]!r} (expected one of {', '.join(allowed)})")


def _int_field(obj: Mapping[str, Any], name: str, default: Optional[int], lo: int, hi: int,
               where: str = "request") -> Optional[int]:
    v = obj.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise RequestError(f"{where}.{name}: expected an integer, found {_json_type(v)}")
    if not lo <= v <= hi:
        raise RequestError(f"{where}.{name}: expected {lo}..{hi}, found {v}")
    return v


def _choice(obj: Mapping[str, Any], name: str, default: str, choices: Sequence[str]) -> str:
    v = obj.get(name, default)
    if v not in choices:
        raise RequestError(f"request.{name}: expected one of {', '.join(choices)}, found {v!r}")
    return v


def _shape(where: str, value: Any, limits: Limits) -> Tuple[int, ...]:
    if not isinstance(value, list) or len(value) > MAX_RANK:
        raise RequestError(f"{where}.shape: expected an array of at most {MAX_RANK} integers, found {_json_type(value)}"
                           + (f" of {len(value)}" if isinstance(value, list) else ""))
    count = 1
    for d in value:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise RequestError(f"{where}.shape: expected non-negative integers, found {d!r}")
        count *= d
        if count > limits.max_elements:
            raise RequestError(f"{where}: shape {value} has more than {limits.max_elements} elements", 413,
                               "PayloadTooLarge")
    return tuple(value)


def _nested_list_array(where: str, value: list, limits: Limits) -> np.ndarray:
    """A nested JSON array as int64 (integers only) or float32 (any float in it)."""
    shape: List[int] = []
    probe: Any = value
    while isinstance(probe, list):
        if len(shape) == MAX_RANK:
            raise RequestError(f"{where}: nested deeper than {MAX_RANK} levels")
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    if math.prod(shape) > limits.max_elements:
        raise RequestError(f"{where}: more than {limits.max_elements} elements", 413, "PayloadTooLarge")
    flat: List[Any] = []

    def walk(v: Any, depth: int, path: str) -> None:
        if depth == len(shape):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise RequestError(f"{where}{path}: expected a number, found {_json_type(v)}")
            flat.append(v)
            return
        if not isinstance(v, list) or len(v) != shape[depth]:
            found = f"{len(v)} elements" if isinstance(v, list) else _json_type(v)
            raise RequestError(f"{where}{path}: ragged array, expected {shape[depth]} elements, found {found}")
        for i, x in enumerate(v):
            walk(x, depth + 1, f"{path}[{i}]")

    walk(value, 0, "")
    if all(isinstance(x, int) for x in flat):
        if any(not -(2**63) <= x < 2**63 for x in flat):
            raise RequestError(f"{where}: an integer does not fit int64")
        return np.asarray(flat, dtype=np.int64).reshape(shape)
    return np.asarray(flat, dtype=np.float32).reshape(shape)


def parse_array(where: str, value: Any, limits: Limits) -> np.ndarray:
    """An input array: a nested JSON array (integers: int64, else float32), or an object
    ``{"dtype": D, "shape": S, "data": [flat values]}`` or ``{"dtype", "shape", "b64"}`` with
    the little-endian bytes in base64."""
    if isinstance(value, list):
        return _nested_list_array(where, value, limits)
    if not isinstance(value, dict):
        raise RequestError(f"{where}: expected a nested array or an object with dtype, shape and data/b64, "
                           f"found {_json_type(value)}")
    _check_keys(value, where, ("dtype", "shape", "data", "b64"))
    dtype_name = value.get("dtype")
    if dtype_name not in DTYPES:
        raise RequestError(f"{where}.dtype: expected one of {', '.join(DTYPES)}, found {dtype_name!r}")
    dtype = DTYPES[dtype_name]
    shape = _shape(where, value.get("shape"), limits)
    count = math.prod(shape)
    if ("data" in value) == ("b64" in value):
        raise RequestError(f"{where}: give exactly one of data (a flat array) and b64 (base64 bytes)")
    if "b64" in value:
        text = value["b64"]
        if not isinstance(text, str):
            raise RequestError(f"{where}.b64: expected a string, found {_json_type(text)}")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as e:
            raise RequestError(f"{where}.b64: not valid base64 ({e})") from None
        if len(raw) != count * dtype.itemsize:
            raise RequestError(f"{where}.b64: shape {list(shape)} of {dtype_name} needs {count * dtype.itemsize} "
                               f"bytes, found {len(raw)}")
        return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="), copy=True)
    data = value["data"]
    if not isinstance(data, list) or len(data) != count:
        found = f"{len(data)} values" if isinstance(data, list) else _json_type(data)
        raise RequestError(f"{where}.data: shape {list(shape)} needs a flat array of {count} values, found {found}")
    for i, x in enumerate(data):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise RequestError(f"{where}.data[{i}]: expected a number, found {_json_type(x)}")
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not isinstance(x, int) or not info.min <= x <= info.max:
                raise RequestError(f"{where}.data[{i}]: expected an integer in {info.min}..{info.max} for "
                                   f"{dtype_name}, found {x!r}")
    return np.asarray(data, dtype=dtype.newbyteorder("=")).reshape(shape)


def encode_array(a: np.ndarray, encoding: str) -> Dict[str, Any]:
    """An output array as ``{"dtype", "shape", "data"}`` (flat list) or ``{..., "b64"}``."""
    name = next((n for n, d in DTYPES.items() if d == a.dtype.newbyteorder("<")), None)
    if name is None:
        raise RequestError(f"output dtype {a.dtype} has no API name", 500, "InternalError")
    out: Dict[str, Any] = {"dtype": name, "shape": list(a.shape)}
    if encoding == "base64":
        out["b64"] = base64.b64encode(np.ascontiguousarray(a, dtype=DTYPES[name]).tobytes()).decode("ascii")
    else:
        out["data"] = a.reshape(-1).tolist()
    return out


def decode_array(obj: Mapping[str, Any]) -> np.ndarray:
    """The inverse of :func:`encode_array` (for clients)."""
    dtype = DTYPES[obj["dtype"]]
    if "b64" in obj:
        return np.frombuffer(base64.b64decode(obj["b64"]), dtype=dtype).reshape(obj["shape"])
    return np.asarray(obj["data"], dtype=dtype).reshape(obj["shape"])


def error_body(exc: BaseException) -> Tuple[int, Dict[str, Any]]:
    """The HTTP status and JSON body of a failed request."""
    if isinstance(exc, RequestError):
        return exc.status, {"error": {"type": exc.kind, "message": str(exc)}}
    if isinstance(exc, longrun.Error):
        status = 500
        if isinstance(exc, longrun.OutOfMemoryError):
            status = 503
        elif not isinstance(exc, (longrun.InternalError, longrun.ClosedError)):
            status = 400
        return status, {"error": {"type": type(exc).__name__, "code": exc.code, "message": str(exc)}}
    return 500, {"error": {"type": "InternalError", "message": f"{type(exc).__name__}: {exc}"}}


# ---- the service ------------------------------------------------------------------------------


class Service:
    """One replica's model and session, and the API's three operations.

    ``run_batch`` and ``embed_batch`` take the requests a batching window collected and return
    one result per request: a response dict, or the exception that request raised (a bad
    request fails alone, never its batch neighbours). Calls must not overlap (the deployment
    runs them on one worker thread); the GIL is released while the model runs.
    """

    def __init__(self, model_path: str, threads: int = 1, limits: Limits = Limits(), *,
                 memory_limit: Optional[int] = None) -> None:
        self.model = longrun.Model(model_path)
        self.session = self.model.session(threads=threads, memory_limit=memory_limit)
        self.limits = limits
        self.tokenizer = self.model.tokenizer
        self._input_names = {spec.name for spec in self.model.inputs}

    def close(self) -> None:
        self.session.close()
        self.model.close()

    def info(self) -> Dict[str, Any]:
        return {
            "arch": self.model.arch,
            "inputs": [{"name": s.name, "required": s.required, "dtypes": list(s.dtypes),
                        "description": s.description} for s in self.model.inputs],
            "outputs": self.model.outputs,
            "tokenizer": self.tokenizer is not None,
            "longrun": longrun.version(),
        }

    # -- parsing

    def parse_run(self, body: Mapping[str, Any]) -> RunRequest:
        _check_keys(body, "request", ("inputs", "outputs", "encoding"))
        inputs = body.get("inputs")
        if not isinstance(inputs, dict) or not inputs:
            raise RequestError(f"request.inputs: expected an object of input name -> array, found {_json_type(inputs)}")
        arrays: Dict[str, np.ndarray] = {}
        for name, value in inputs.items():
            if name not in self._input_names:
                raise RequestError(f"request.inputs: {self.model.arch} has no input {name!r} "
                                   f"(inputs: {', '.join(sorted(self._input_names))})")
            arrays[name] = parse_array(f"request.inputs.{name}", value, self.limits)
        outputs = body.get("outputs")
        if outputs is not None:
            if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
                raise RequestError(f"request.outputs: expected an array of output names, found {_json_type(outputs)}")
            unknown = [o for o in outputs if o not in self.model.outputs]
            if unknown:
                raise RequestError(f"request.outputs: no output {unknown[0]!r} (outputs: {', '.join(self.model.outputs)})")
        return RunRequest(arrays, outputs, _choice(body, "encoding", "list", _ENCODINGS))

    def _parse_texts(self, texts: Any) -> List[str]:
        """request.texts: one string or a non-empty list of at most limits.max_texts strings."""
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise RequestError(f"request.texts: expected a non-empty array of strings, found {_json_type(texts)}")
        if len(texts) > self.limits.max_texts:
            raise RequestError(f"request.texts: {len(texts)} texts is over the limit of {self.limits.max_texts}", 413,
                               "PayloadTooLarge")
        return texts

    def parse_embed(self, body: Mapping[str, Any]) -> EmbedRequest:
        _check_keys(body, "request", ("texts", "pooling", "normalize", "max_length", "encoding"))
        if self.tokenizer is None:
            raise RequestError(f"/embed needs a tokenizer and {self.model.path} carries none (use /run with ids)",
                               400, "UnsupportedError")
        texts = self._parse_texts(body.get("texts"))
        normalize = body.get("normalize", True)
        if not isinstance(normalize, bool):
            raise RequestError(f"request.normalize: expected a boolean, found {_json_type(normalize)}")
        return EmbedRequest(texts, _choice(body, "pooling", "mean", _POOLINGS), normalize,
                            _int_field(body, "max_length", None, 1, 1 << 24),
                            _choice(body, "encoding", "list", _ENCODINGS))

    def parse_generate(self, body: Mapping[str, Any]) -> GenerateRequest:
        options = ("max_new_tokens", "num_beams", "min_length", "no_repeat_ngram_size", "length_penalty",
                   "num_return_sequences")
        _check_keys(body, "request", ("input_ids", "attention_mask", "texts") + options)
        req = GenerateRequest()
        if ("input_ids" in body) == ("texts" in body):
            raise RequestError("request: give exactly one of input_ids (token ids) and texts")
        if "texts" in body:
            if self.tokenizer is None:
                raise RequestError(f"request.texts: {self.model.path} carries no tokenizer (send input_ids)", 400,
                                   "UnsupportedError")
            texts = self._parse_texts(body["texts"])
            req.texts = True
            req.input_ids = [np.asarray([self.tokenizer.encode(t)], dtype=np.int64) for t in texts]
        else:
            req.input_ids = [parse_array("request.input_ids", body["input_ids"], self.limits)]
            if "attention_mask" in body:
                req.attention_mask = parse_array("request.attention_mask", body["attention_mask"], self.limits)
        o = req.options
        o["max_new_tokens"] = _int_field(body, "max_new_tokens", 20, 1, self.limits.max_new_tokens)
        o["num_beams"] = _int_field(body, "num_beams", 1, 1, 64)
        o["min_length"] = _int_field(body, "min_length", 0, 0, 1 << 20)
        o["no_repeat_ngram_size"] = _int_field(body, "no_repeat_ngram_size", 0, 0, 1 << 10)
        o["num_return_sequences"] = _int_field(body, "num_return_sequences", 1, 1, 64)
        lp = body.get("length_penalty", 1.0)
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not math.isfinite(lp):
            raise RequestError(f"request.length_penalty: expected a finite number, found {lp!r}")
        o["length_penalty"] = float(lp)
        return req

    # -- execution

    def run_batch(self, requests: Sequence[RunRequest]) -> List[Union[Dict[str, Any], BaseException]]:
        """Requests whose inputs agree in names, dtypes and every dimension but the first run
        stacked as one batch; the rows of a longrun run do not depend on their neighbours, so
        each answer equals the request's own run."""
        results: List[Union[Dict[str, Any], BaseException]] = [RuntimeError("not run")] * len(requests)
        for indices in _groups(requests):
            group = [requests[i] for i in indices]
            if len(group) > 1 and all(a.ndim >= 1 for r in group for a in r.inputs.values()):
                try:
                    stacked = {n: np.concatenate([r.inputs[n] for r in group]) for n in group[0].inputs}
                    out = self.session.run(stacked)
                except longrun.Error:
                    pass  # some request in the group is bad: run each alone so only it fails
                else:
                    row = 0
                    for i, r in zip(indices, group):
                        rows = next(iter(r.inputs.values())).shape[0]
                        results[i] = self._run_response(r, {k: v[row:row + rows] for k, v in out.items()})
                        row += rows
                    continue
            for i, r in zip(indices, group):
                try:
                    results[i] = self._run_response(r, self.session.run(r.inputs))
                except Exception as e:  # returned, raised for this request alone
                    results[i] = e
        return results

    def _run_response(self, r: RunRequest, out: Mapping[str, np.ndarray]) -> Dict[str, Any]:
        names = r.outputs if r.outputs is not None else list(out)
        return {"outputs": {n: encode_array(np.ascontiguousarray(out[n]), r.encoding) for n in names if n in out}}

    def embed_batch(self, requests: Sequence[EmbedRequest]) -> List[Union[Dict[str, Any], BaseException]]:
        """Texts of requests with the same options are embedded as one padded batch."""
        results: List[Union[Dict[str, Any], BaseException]] = [RuntimeError("not run")] * len(requests)
        for indices in _groups(requests):
            group = [requests[i] for i in indices]
            first = group[0]
            vectors: Optional[np.ndarray] = None
            if len(group) > 1:
                try:
                    vectors = self.session.embed([t for r in group for t in r.texts], first.pooling, first.normalize,
                                                 max_length=first.max_length)
                except longrun.Error:
                    vectors = None
            if vectors is not None:
                row = 0
                for i, r in zip(indices, group):
                    results[i] = _embed_response(vectors[row:row + len(r.texts)], r.encoding)
                    row += len(r.texts)
                continue
            for i, r in zip(indices, group):
                try:
                    results[i] = _embed_response(
                        self.session.embed(r.texts, r.pooling, r.normalize, max_length=r.max_length), r.encoding)
                except Exception as e:
                    results[i] = e
        return results

    def generate(self, r: GenerateRequest) -> Dict[str, Any]:
        sequences: List[Any] = []
        scores: List[Any] = []
        steps = 0
        for ids in r.input_ids:
            g = self.session.generate(ids, r.attention_mask, **r.options)
            sequences.extend(g.sequences)
            scores.extend(g.scores)
            steps = max(steps, g.steps)
        out: Dict[str, Any] = {"sequences": sequences, "scores": scores, "steps": steps}
        if self.tokenizer is not None:
            out["texts"] = [[self.tokenizer.decode(s) for s in row] for row in sequences]
        return out


def _groups(requests: Sequence[Any]) -> List[List[int]]:
    order: Dict[Tuple, List[int]] = {}
    for i, r in enumerate(requests):
        order.setdefault(r.group_key(), []).append(i)
    return list(order.values())


def _embed_response(vectors: np.ndarray, encoding: str) -> Dict[str, Any]:
    if encoding == "base64":
        return {"embeddings": encode_array(np.ascontiguousarray(vectors), "base64")}
    return {"embeddings": vectors.tolist()}
