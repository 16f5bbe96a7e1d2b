"""longrun: a C++ inference runtime for long-sequence transformers, from Python.

    import longrun
    model = longrun.Model("minilm.safetensors")
    session = model.session(threads=2)
    outputs = session.run({"input_ids": ids})        # dict of numpy arrays in and out
    vectors = session.embed(["A man is eating food."])

Every failure raises a subclass of :class:`longrun.Error` carrying longrun's own message
(which names the file, tensor or input, and says what was expected and what was found).
See docs/python.md.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _longrun

__all__ = [
    "Error", "InvalidArgumentError", "OutOfRangeError", "NotFoundError", "UnsupportedError",
    "FormatError", "IoError", "SizeOverflowError", "OutOfMemoryError", "CancelledError",
    "InternalError", "ClosedError",
    "Model", "Session", "Tokenizer", "InputSpec", "Generation",
    "convert", "architectures", "version", "system_info",
]


class Error(Exception):
    """Base class of every error longrun raises; ``code`` is longrun's status code name."""

    code = "unknown"


class InvalidArgumentError(Error, ValueError):
    """A malformed argument: shape, dtype, input name, option value."""

    code = "invalid_argument"


class OutOfRangeError(Error, ValueError):
    """An index or size outside what is allowed (e.g. a token id >= the vocabulary size)."""

    code = "out_of_range"


class NotFoundError(Error, LookupError):
    """A named thing (file, tensor, backend) does not exist."""

    code = "not_found"


class UnsupportedError(Error):
    """A valid request this build, backend or device cannot do."""

    code = "unsupported"


class FormatError(Error, ValueError):
    """A file's bytes are not what its format promises."""

    code = "format_error"


class IoError(Error, OSError):
    """The operating system refused (open, read, mmap, rename)."""

    code = "io_error"


class SizeOverflowError(Error, ValueError):
    """Size arithmetic would overflow."""

    code = "overflow"


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed or the session's memory limit was hit (the session stays usable)."""

    code = "out_of_memory"


class CancelledError(Error):
    """A run was cancelled."""

    code = "cancelled"


class InternalError(Error):
    """A bug in longrun: please report it."""

    code = "internal"


class ClosedError(Error, ValueError):
    """The model or session was closed."""

    code = "closed"


_longrun._set_error_classes({c.code: c for c in (
    InvalidArgumentError, OutOfRangeError, NotFoundError, UnsupportedError, FormatError, IoError,
    SizeOverflowError, OutOfMemoryError, CancelledError, InternalError, ClosedError)})

_PRECISIONS = ("f32", "bf16", "int8")
# (kind, itemsize) of float32, float16, int32, int64, uint8 (any spelling, e.g. "q" or "l").
_DTYPES = {("f", 4), ("f", 2), ("i", 4), ("i", 8), ("u", 1)}


def version() -> str:
    """longrun's version string."""
    return _longrun.version()


def system_info() -> str:
    """Version, build options, CPU ISA levels, threads, backends and CUDA devices (text)."""
    return _longrun.system_info()


def architectures() -> List[str]:
    """The model architectures this build knows (``"bert"``, ``"fourier-lra"``, ...)."""
    return list(_longrun.architectures())


class InputSpec:
    """One input a model accepts: name, whether required, accepted dtypes, description."""

    __slots__ = ("name", "required", "dtypes", "description")

    def __init__(self, name: str, required: bool, dtypes: Sequence[str], description: str) -> None:
        self.name = name
        self.required = required
        self.dtypes = tuple(dtypes)
        self.description = description

    def __repr__(self) -> str:
        opt = "" if self.required else ", optional"
        return f"InputSpec({self.name!r}, {'/'.join(self.dtypes)}{opt}: {self.description})"


class Tokenizer:
    """The tokenizer a model file carries (BERT WordPiece or byte-level BPE, as Hugging Face's)."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """Token ids of ``text``; with ``add_special_tokens``, [CLS] ... [SEP] or <s> ... </s>."""
        return list(self._impl.encode(text, add_special_tokens))

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of token ids."""
        return self._impl.decode([int(i) for i in ids], skip_special_tokens)

    def encode_batch(self, texts: Sequence[str], *, add_special_tokens: bool = True,
                     max_length: Optional[int] = None, padding: str = "longest",
                     ) -> Tuple[np.ndarray, np.ndarray]:
        """Encodes ``texts`` into ``(input_ids, attention_mask)``, both int64 [B, N].

        Rows are padded at the end with the pad id (``padding="longest"``: to the longest row;
        ``"max_length"``: to ``max_length``). With ``max_length``, longer rows are truncated,
        keeping the closing special token last.
        """
        if isinstance(texts, str):
            raise InvalidArgumentError("encode_batch: texts must be a sequence of strings, not one string")
        if padding not in ("longest", "max_length"):
            raise InvalidArgumentError(f"encode_batch: padding must be 'longest' or 'max_length', found {padding!r}")
        return self._impl.encode_batch(list(texts), add_special_tokens, int(max_length or 0),
                                       padding == "max_length")

    @property
    def vocab_size(self) -> int:
        """The number of tokens."""
        return self._impl.vocab_size

    @property
    def pad_id(self) -> Optional[int]:
        """The padding token's id, if the tokenizer has one."""
        return self._impl.pad_id

    def token_to_id(self, token: str) -> Optional[int]:
        """The id of a token, or None."""
        return self._impl.token_to_id(token)

    def id_to_token(self, id: int) -> str:
        """The token of an id ("" when out of range)."""
        return self._impl.id_to_token(int(id))

    def __repr__(self) -> str:
        return f"Tokenizer({self._impl.description})"


class Generation:
    """What :meth:`Session.generate` returns: per input row, the hypotheses and their scores."""

    __slots__ = ("sequences", "scores", "steps")

    def __init__(self, sequences: List[List[List[int]]], scores: List[List[float]], steps: int) -> None:
        self.sequences = sequences  #: [B][num_return_sequences] token ids (eos included)
        self.scores = scores        #: [B][num_return_sequences] normalised log-probabilities
        self.steps = steps          #: decoder steps run

    def __repr__(self) -> str:
        return f"Generation(sequences={self.sequences!r}, scores={self.scores!r})"


class Model:
    """A native longrun model file (``.safetensors`` with longrun metadata), memory-mapped.

    ``Model(path)`` checks the whole file (architecture, config, every tensor's name, shape and
    dtype) and raises a :class:`longrun.Error` naming what is wrong. A model is immutable and
    may be shared by sessions on several threads. ``close()`` (or leaving a ``with`` block)
    drops this handle's reference; sessions already created keep the weights alive until
    they are closed or collected.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, debug_outputs: bool = False) -> None:
        self._impl = _longrun.Model.load(os.fspath(path), bool(debug_outputs))

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Releases this handle; later use raises :class:`ClosedError`."""
        self._impl.close()

    @property
    def closed(self) -> bool:
        """True after close()."""
        return self._impl.closed

    @property
    def arch(self) -> str:
        """The architecture, e.g. ``"bert"`` or ``"fourier-lra"``."""
        return self._impl.arch

    @property
    def path(self) -> str:
        """The file's path."""
        return self._impl.path

    @property
    def config(self) -> Dict[str, Any]:
        """The family's config with every field (defaults filled in)."""
        return json.loads(self._impl.config_json)

    @property
    def inputs(self) -> List[InputSpec]:
        """The inputs the model accepts, required ones first."""
        return [InputSpec(*t) for t in self._impl.inputs]

    @property
    def outputs(self) -> List[str]:
        """The output names, in order (e.g. ``["last_hidden_state", "logits"]``)."""
        return list(self._impl.output_names)

    @property
    def num_parameters(self) -> int:
        """Tensors in the parameter table."""
        return self._impl.num_parameters

    @property
    def tokenizer(self) -> Optional[Tokenizer]:
        """The tokenizer stored in the file, or None when it carries none."""
        t = self._impl.tokenizer
        return None if t is None else Tokenizer(t)

    def session(self, backend: str = "cpu", threads: int = 0, precision: str = "f32",
                memory_limit: Optional[int] = None, *, deterministic: bool = False) -> "Session":
        """A session that runs this model.

        ``backend``: ``"cpu"`` (default), ``"reference"`` or ``"cuda"`` (when built with it);
        ``threads``: cpu worker threads, 0 = all hardware threads; ``precision``: ``"f32"``
        (default), ``"bf16"`` (cpu backend on AVX2 and up: linear layers from bf16-rounded
        inputs and weights with f32 sums) or ``"int8"`` (cpu backend on AVX2 and up: linear
        layers on the int8 GEMM); other ops stay f32 (docs/usage.md#precision); on
        ``"reference"`` both are the formats' scalar emulations; other combinations raise
        :class:`UnsupportedError`; ``memory_limit``: bytes an input shape's plan may take (None: no
        limit; over it a run raises :class:`OutOfMemoryError` and the session stays usable);
        ``deterministic``: the same kernels and work split on every AVX2 machine.
        """
        if precision not in _PRECISIONS:
            raise InvalidArgumentError(f"precision: expected one of {', '.join(_PRECISIONS)}, found {precision!r}")
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise InvalidArgumentError(f"threads: expected an int, found {type(threads).__name__}")
        if memory_limit is not None and (isinstance(memory_limit, bool) or not isinstance(memory_limit, int)
                                         or memory_limit <= 0):
            raise InvalidArgumentError(f"memory_limit: expected a positive byte count or None, found {memory_limit!r}")
        return Session(_longrun.Session.create(self._impl, backend, threads, memory_limit or 0,
                                                     bool(deterministic), precision))

    def __repr__(self) -> str:
        if self.closed:
            return "Model(closed)"
        return f"Model({self.path!r}, arch={self.arch!r})"


def _as_input(name: str, value: Any) -> np.ndarray:
    """The array to hand to longrun: C-contiguous arrays of longrun's dtypes as they are (not
    copied); other arrays of those dtypes copied to C order; anything else refused."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"input names must be strings, found {type(name).__name__}")
    if not isinstance(value, np.ndarray):
        raise InvalidArgumentError(
            f"input '{name}': expected a numpy array, found {type(value).__name__} "
            "(use numpy.asarray(..., dtype=numpy.int64) for token ids)")
    if (value.dtype.kind, value.dtype.itemsize) not in _DTYPES:
        raise InvalidArgumentError(
            f"input '{name}': dtype {value.dtype} is not one longrun takes "
            "(float32, float16, int32, int64, uint8)")
    if not value.dtype.isnative:
        raise InvalidArgumentError(f"input '{name}': byte order of dtype {value.dtype.str} is not native")
    if not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)
    return value


class Session:
    """Runs a model: plans once per input shape and reuses the plan.

    ``run`` releases the GIL; several threads may call it on one session (the calls are
    serialised, as in C++), and sessions on different threads run in parallel. A failed run
    raises and leaves the session usable.
    """

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Frees the session's plans; later use raises :class:`ClosedError`."""
        self._impl.close()

    @property
    def closed(self) -> bool:
        """True after close()."""
        return self._impl.closed

    @property
    def backend(self) -> str:
        """The backend's description (name, ISA, threads)."""
        return self._impl.backend_description()

    def run(self, inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Runs the model on named inputs and returns the named outputs (numpy arrays).

        Every required input must be given (see ``Model.inputs``); optional ones may be. Token
        ids are int64 or int32 [B, N]. C-contiguous arrays are read in place; others are
        copied to C order first.
        """
        if not isinstance(inputs, Mapping):
            raise InvalidArgumentError(f"run: expected a dict of input name -> numpy array, found {type(inputs).__name__}")
        names = list(inputs.keys())
        arrays = [_as_input(n, inputs[n]) for n in names]
        return dict(self._impl.run(names, arrays))

    def embed(self, texts: Union[str, Sequence[str]], pooling: str = "mean", normalize: bool = True,
              *, max_length: Optional[int] = None) -> np.ndarray:
        """Sentence embeddings, float32 [len(texts), hidden] (a single string: [hidden]).

        Tokenizes with the model file's tokenizer, runs the model (one padded batch when the
        model takes an attention_mask, else one text at a time), pools last_hidden_state over
        the real tokens (``"mean"``, ``"cls"`` or ``"max"``) and L2-normalises when
        ``normalize`` (sentence-transformers' Pooling + Normalize).
        """
        single = isinstance(texts, str)
        batch = [texts] if single else list(texts)
        out = self._impl.embed(batch, pooling, bool(normalize), int(max_length or 0))
        return out[0] if single else out

    def generate(self, input_ids: np.ndarray, attention_mask: Optional[np.ndarray] = None, *,
                 max_new_tokens: int = 20, num_beams: int = 1, min_length: int = 0,
                 no_repeat_ngram_size: int = 0, length_penalty: float = 1.0,
                 num_return_sequences: int = 1) -> Generation:
        """Greedy (``num_beams=1``) or beam-search generation, the options of ``longrun-run --generate``.

        Encoder-decoders (bart, transformer, fourier-bart, lasformer): ``input_ids`` [B, N] is
        the source (``attention_mask`` optional, bart only). Causal combiner LMs: the prompt,
        and the result is its continuation. Sampling is not implemented.
        """
        ids = _as_input("input_ids", input_ids)
        mask = None if attention_mask is None else _as_input("attention_mask", attention_mask)
        seqs, scores, steps = self._impl.generate(ids, mask, int(max_new_tokens), int(num_beams), int(min_length),
                                                  int(no_repeat_ngram_size), float(length_penalty),
                                                  int(num_return_sequences))
        return Generation(seqs, scores, steps)

    def __repr__(self) -> str:
        return "Session(closed)" if self.closed else f"Session({self.backend})"


def convert(src: Union[str, "os.PathLike[str]"], dst: Union[str, "os.PathLike[str]"], arch: Optional[str] = None,
            config: Optional[Mapping[str, Any]] = None, set: Optional[Union[Mapping[str, Any], Sequence[str]]] = None,
            dtype: Optional[str] = None, *, source_format: str = "auto", tokenizer: Optional[str] = None,
            no_tokenizer: bool = False, quantize: Optional[str] = None) -> Dict[str, Any]:
    """Converts a checkpoint to a native model file, as ``longrun-convert SRC -o DST``.

    ``src``: a Hugging Face directory, a PyTorch/safetensors/flax/fairseq checkpoint or a
    native file; ``arch``: the architecture (default: from the source's config); ``config``:
    a config dict replacing the source's; ``set``: overrides, ``{"filter_ratio": 0.5}`` or
    ``["filter_ratio=0.5"]``; ``dtype``: ``"f32"``, ``"f16"`` or ``"bf16"`` for every float
    weight (default: keep); ``quantize``: ``"int8"`` stores every linear-layer weight as int8
    per output channel with f32 scales (``--quantize int8``; int8 sessions use them as stored,
    f32/bf16 sessions their values q * scale). Returns a summary dict (arch, layout, mapped,
    ignored, retied, bytes, tokenizer, quantized: None or {weights, bytes_before, bytes_after}).
    """
    sets: List[str] = []
    if set is not None:
        if isinstance(set, Mapping):
            sets = [f"{k}={json.dumps(v)}" for k, v in set.items()]
        elif isinstance(set, str):
            sets = [set]
        else:
            sets = [str(s) for s in set]
    config_json = None if config is None else json.dumps(dict(config))
    return _longrun.convert(os.fspath(src), os.fspath(dst), arch or "", config_json, sets, dtype or "",
                            source_format, tokenizer or "", bool(no_tokenizer), quantize or "")
