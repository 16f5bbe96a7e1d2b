"""longrun on Ray Serve: a deployment that serves one longrun model file over HTTP JSON.

    from ray import serve
    import longrun.serve
    serve.run(longrun.serve.app("minilm.safetensors", replicas=2, threads=1))

or from a shell: ``python -m longrun.serve MODEL --replicas 2 --port 8000``. The API
(``POST /run``, ``POST /embed``, ``POST /generate``, ``GET /``, ``GET /health``) and the
deployment's options are described in docs/python.md#serving-on-ray-serve. Needs the optional
extra ``pip install 'longrun[serve]'`` (Ray Serve).
"""

from __future__ import annotations

import os
from typing import Any, Optional

try:
    from ray import serve as _ray_serve  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "longrun.serve needs Ray Serve, which is not installed: pip install 'longrun[serve]' "
        f"(or pip install 'ray[serve]'); the import failed with: {e}") from e

from ._deployment import LongrunDeployment
from ._service import DTYPES, Limits, RequestError, Service, decode_array, encode_array

__all__ = ["app", "LongrunDeployment", "Limits", "Service", "RequestError", "encode_array", "decode_array",
           "DTYPES"]


def app(model_path: "str | os.PathLike[str]", *, replicas: int = 1, threads: int = 1,
        num_cpus: Optional[float] = None, max_batch_size: int = 16, batch_wait_ms: float = 5.0,
        max_ongoing_requests: Optional[int] = None, max_replicas_per_node: Optional[int] = None,
        limits: Optional[Limits] = None, memory_limit: Optional[int] = None) -> Any:
    """The Serve application for one model file: ``replicas`` copies of
    :class:`LongrunDeployment`, each with a longrun session of ``threads`` threads.

    ``model_path`` is made absolute and must name the same file on every node that runs a
    replica (a shared file system or the same copy on each machine). Each replica reserves
    ``num_cpus`` Ray CPUs (default: ``threads``). ``max_batch_size`` and ``batch_wait_ms`` set
    ``@serve.batch``'s window for /run and /embed; ``max_ongoing_requests`` (default
    ``max(32, 2 * max_batch_size)``) is how many requests a replica accepts at once, so that a
    window can fill; ``max_replicas_per_node`` spreads replicas over nodes; ``limits`` bounds
    each request (body bytes, elements per array, texts, new tokens); ``memory_limit`` is the
    session's plan limit in bytes.
    """
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise ValueError(f"replicas: expected a positive integer, found {replicas!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"threads: expected a non-negative integer, found {threads!r}")
    if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
        raise ValueError(f"max_batch_size: expected a positive integer, found {max_batch_size!r}")
    if not 0 <= batch_wait_ms <= 60_000:
        raise ValueError(f"batch_wait_ms: expected 0..60000, found {batch_wait_ms!r}")
    path = os.path.abspath(os.fspath(model_path))
    options: dict = {
        "num_replicas": replicas,
        "ray_actor_options": {"num_cpus": float(threads or 1) if num_cpus is None else float(num_cpus)},
        "max_ongoing_requests": max_ongoing_requests or max(32, 2 * max_batch_size),
    }
    if max_replicas_per_node is not None:
        options["max_replicas_per_node"] = max_replicas_per_node
    return LongrunDeployment.options(**options).bind(path, threads, max_batch_size, batch_wait_ms / 1000.0,
                                                     limits, memory_limit)
