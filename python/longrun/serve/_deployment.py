"""The Ray Serve deployment of longrun.serve (docs/python.md#serving-on-ray-serve).

Each replica loads the model file into a :class:`~longrun.serve._service.Service` and answers
``POST /run``, ``POST /embed``, ``POST /generate``, ``GET /`` (model info) and ``GET /health``.
``/run`` and ``/embed`` go through ``@serve.batch``: the requests that arrive within the batch
window are executed together on the replica's one worker thread, so the asyncio loop keeps
accepting requests while the model runs (the GIL is released inside longrun).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from typing import Any, Dict, List, Optional

import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import Response

from ._service import (EmbedRequest, Limits, RequestError, RunRequest, Service, error_body, parse_json)


def _json_response(status: int, body: Dict[str, Any], node: str) -> Response:
    return Response(json.dumps(body, separators=(",", ":"), allow_nan=True), status_code=status,
                    media_type="application/json", headers={"X-Longrun-Node": node})


@serve.deployment
class LongrunDeployment:
    """A Serve replica running one longrun model (see :func:`longrun.serve.app`)."""

    def __init__(self, model_path: str, threads: int = 1, max_batch_size: int = 16,
                 batch_wait_timeout_s: float = 0.005, limits: Optional[Limits] = None,
                 memory_limit: Optional[int] = None) -> None:
        self._limits = limits or Limits()
        self._node = ray.get_runtime_context().get_node_id()  # answers say which node served them
        self._service = Service(model_path, threads, self._limits, memory_limit=memory_limit)
        # One worker thread: runs on a session are serialised anyway, and batches stay whole.
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="longrun")
        for handler in (self._run_batched, self._embed_batched):
            handler.set_max_batch_size(max_batch_size)
            handler.set_batch_wait_timeout_s(batch_wait_timeout_s)

    async def _in_worker(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _run_batched(self, requests: List[RunRequest]) -> List[Any]:
        return await self._in_worker(self._service.run_batch, requests)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _embed_batched(self, requests: List[EmbedRequest]) -> List[Any]:
        return await self._in_worker(self._service.embed_batch, requests)

    async def _read_body(self, request: Request) -> Dict[str, Any]:
        limit = self._limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            raise RequestError(f"request body of {declared} bytes is over the limit of {limit}", 413,
                               "PayloadTooLarge")
        chunks: List[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise RequestError(f"request body is over the limit of {limit} bytes", 413, "PayloadTooLarge")
            chunks.append(chunk)
        return parse_json(b"".join(chunks), self._limits)

    async def __call__(self, request: Request) -> Response:
        path = request.url.path
        root = request.scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        path = "/" + path.strip("/")
        try:
            if request.method == "GET":
                if path == "/":
                    return _json_response(200, self._service.info(), self._node)
                if path == "/health":
                    return _json_response(200, {"status": "ok"}, self._node)
            elif request.method == "POST" and path in ("/run", "/embed", "/generate"):
                body = await self._read_body(request)
                if path == "/run":
                    result = await self._run_batched(self._service.parse_run(body))
                elif path == "/embed":
                    result = await self._embed_batched(self._service.parse_embed(body))
                else:
                    result = await self._in_worker(self._service.generate, self._service.parse_generate(body))
                if isinstance(result, BaseException):
                    raise result
                return _json_response(200, result, self._node)
            if path in ("/", "/health", "/run", "/embed", "/generate"):
                raise RequestError(f"{request.method} {path} is not allowed (GET /, GET /health, POST /run, "
                                   "POST /embed, POST /generate)", 405, "MethodNotAllowed")
            raise RequestError(f"no route {path} (GET /, GET /health, POST /run, POST /embed, POST /generate)", 404,
                               "NotFound")
        except Exception as e:  # every failure is a JSON error response, never a dead replica
            status, body = error_body(e)
            return _json_response(status, body, self._node)
