"""longrun.serve on a real two-node Ray cluster on this machine: `ray start --head` and a second
`ray start --address` node (one CPU each, node address 127.0.0.1), `python -m longrun.serve`
with two replicas (one per node) behind Serve's HTTP proxy on 127.0.0.1, 1,000 concurrent
requests checked against direct runs, then one node stopped under load: the requests it drops
fail with an error response or a closed connection, later ones succeed. Everything started
here is stopped here (process groups, temp dir), pass or fail."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest

from conftest import require_serve

require_serve()
import longrun  # noqa: E402
from longrun.serve import decode_array  # noqa: E402

BIN = Path(sys.executable).parent
DEADLINE_S = 240  # the whole test; every wait below is bounded by it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    # Serve's proxy prefers replicas on its own node; spread the load so that the replica on
    # the node the test stops is busy when it stops.
    env["RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING"] = "0"
    return env


class Group:
    """A command in its own process group; stop() ends the group, whatever it spawned."""

    def __init__(self, name: str, args: List[str], log: Path) -> None:
        self.name = name
        self.log = log
        self._file = open(log, "wb")
        self.proc = subprocess.Popen(args, stdout=self._file, stderr=subprocess.STDOUT, env=_env(),
                                     start_new_session=True)

    def stop(self, grace_s: float = 5.0) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(grace_s)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:  # members that outlive the leader (raylet workers, agents)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._file.close()

    def tail(self) -> str:
        return self.log.read_bytes()[-3000:].decode(errors="replace")


def _wait_for(what: str, cond, timeout: float, groups: List[Group]) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        for g in groups:
            if g.proc.poll() is not None:
                raise AssertionError(f"{g.name} exited with {g.proc.returncode} while waiting for {what}:\n{g.tail()}")
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}:\n" +
                         "\n".join(f"--- {g.name}\n{g.tail()}" for g in groups))


class Client:
    """HTTP/1.1 keep-alive connections to 127.0.0.1, one per client thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._local = threading.local()

    def post(self, path: str, body: Dict[str, Any], timeout: float = 60) -> Tuple[int, bytes, str]:
        """(status, body, the X-Longrun-Node header: which node's replica answered)."""
        data = json.dumps(body).encode()
        for attempt in range(2):  # a keep-alive connection the proxy closed meanwhile is reopened once
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            try:
                conn.request("POST", path, data, {"Content-Type": "application/json"})
                r = conn.getresponse()
                return r.status, r.read(), r.getheader("X-Longrun-Node", "")
            except (ConnectionError, http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str) -> Tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


def _requests(model: longrun.Model, count: int, seed: int) -> List[Tuple[str, Dict[str, Any], Any]]:
    """(path, body, expected) with the expected answer from a direct session."""
    rng = np.random.default_rng(seed)
    session = model.session(threads=1)
    words = ["the", "house", "a", ",", "!", "?", "houses"]
    out = []
    for i in range(count):
        if i % 3 == 2:
            texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 12)))) for _ in range(int(rng.integers(1, 3)))]
            out.append(("/embed", {"texts": texts, "encoding": "base64"}, session.embed(texts)))
        else:
            ids = rng.integers(5, 100, size=(int(rng.integers(1, 3)), int(rng.choice([4, 9, 16]))))
            encoding = "list" if i % 5 == 0 else "base64"
            out.append(("/run", {"inputs": {"input_ids": ids.tolist()}, "outputs": ["last_hidden_state"],
                                 "encoding": encoding}, session.run({"input_ids": ids})["last_hidden_state"]))
    session.close()
    return out


def _check(path: str, status: int, raw: bytes, expected: np.ndarray) -> Optional[str]:
    """None when the response is the expected answer, else what is wrong."""
    if status != 200:
        return f"HTTP {status}: {raw[:300]!r}"
    body = json.loads(raw)
    got = decode_array(body["embeddings"]) if path == "/embed" else decode_array(body["outputs"]["last_hidden_state"])
    if got.shape != expected.shape or not np.array_equal(got, expected):
        return f"{path}: result differs from the direct run (max |diff| {np.abs(got - expected).max()})"
    return None


@pytest.fixture(scope="module")
def cluster(text_model_path):
    if shutil.which("ray", path=str(BIN)) is None:
        pytest.fail(f"no ray command in {BIN} although ray imports")
    # Short: Ray puts unix sockets under it (108-byte path limit).
    tmp = Path(tempfile.mkdtemp(prefix="lr-ray-", dir="/tmp"))
    gcs, http_port = _free_port(), _free_port()
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000",
              "--disable-usage-stats", "--block"]
    groups: List[Group] = []
    started = time.monotonic()
    try:
        head = Group("ray head", [str(BIN / "ray"), "start", "--head", f"--port={gcs}", "--include-dashboard=false",
                                  f"--temp-dir={tmp}", f"--dashboard-agent-listen-port={_free_port()}",
                                  f"--ray-client-server-port={_free_port()}"] + common, tmp / "head.log")
        groups.append(head)
        _wait_for("the head node", lambda: b"--block" in head.log.read_bytes(), 90, groups)
        worker = Group("ray worker node", [str(BIN / "ray"), "start", f"--address=127.0.0.1:{gcs}",
                                           f"--dashboard-agent-listen-port={_free_port()}"] + common,
                       tmp / "worker.log")
        groups.append(worker)
        _wait_for("the worker node", lambda: b"--block" in worker.log.read_bytes(), 90, groups)
        serve = Group("python -m longrun.serve",
                      [sys.executable, "-m", "longrun.serve", str(text_model_path), f"--address=127.0.0.1:{gcs}",
                       "--replicas=2", "--threads=1", "--num-cpus=1", "--max-replicas-per-node=1",
                       "--proxy-location=HeadOnly", "--host=127.0.0.1", f"--port={http_port}",
                       "--max-batch-size=8", "--batch-wait-ms=2"], tmp / "serve.log")
        groups.append(serve)
        _wait_for("the deployment", lambda: b"with 2 replica(s)" in serve.log.read_bytes(), 150, groups)
        yield {"port": http_port, "head": head, "worker": worker, "serve": serve, "groups": groups,
               "started": started}
    finally:
        if groups and groups[-1].name.startswith("python"):
            groups[-1].stop(grace_s=20)  # SIGTERM: deletes the application, disconnects
        for g in reversed(groups):
            g.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_two_nodes_1000_requests_then_a_node_stops(cluster, text_model_path):
    client = Client(cluster["port"])
    status, raw = client.get("/")
    assert status == 200 and json.loads(raw)["arch"] == "bert", raw
    status, raw, _ = client.post("/run", {"inputs": {"input_ids": [[1, 2, 300]]}})
    err = json.loads(raw)["error"]
    assert status == 400 and err["type"] == "OutOfRangeError" and "id 300 out of range" in err["message"], raw

    model = longrun.Model(text_model_path)
    work = _requests(model, 1000, seed=1)
    with concurrent.futures.ThreadPoolExecutor(32) as pool:  # at most 32 requests in flight
        outcomes = list(pool.map(lambda w: (w, client.post(w[0], w[1])), work))
    wrong = [(w[0], _check(w[0], s, raw, w[2])) for w, (s, raw, _) in outcomes]
    wrong = [x for x in wrong if x[1] is not None]
    assert not wrong, f"{len(wrong)} of 1000 responses are wrong, first: {wrong[:3]}"
    nodes = {node for _, (_, _, node) in outcomes}
    assert len(nodes) == 2, f"expected answers from the replicas on both nodes, found nodes {nodes}"

    # Under load, stop the worker node (its raylet, its replica, everything in its group).
    load = _requests(model, 400, seed=2)
    results: List[Tuple[str, Optional[str]]] = []
    lock = threading.Lock()
    done = threading.Event()

    def one(w):
        try:
            s, raw, node = client.post(w[0], w[1], timeout=90)
            r = (w[0], _check(w[0], s, raw, w[2]), s, raw, node)
        except (ConnectionError, http.client.HTTPException, OSError) as e:
            r = (w[0], f"connection: {type(e).__name__}: {e}", None, b"", "")
        with lock:
            results.append(r)
            if len(results) == 60:
                done.set()
        return r

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        futures = [pool.submit(one, w) for w in load]
        assert done.wait(120), "the load did not get going"
        cluster["worker"].stop()
        concurrent.futures.wait(futures, timeout=DEADLINE_S)
    failed = [r for r in results if r[1] is not None]
    for path, why, status, raw, _ in failed:
        # A request the stopped replica held fails with an error response (5xx and a body that
        # says why) or a dropped connection; never a wrong answer.
        assert why.startswith("connection") or (status is not None and status >= 500 and raw.strip()), why
    assert len(results) == len(load)
    assert len(failed) < len(load) // 2, f"{len(failed)} of {len(load)} failed: {failed[:3]}"


    # Later requests succeed on the surviving replica.
    later = _requests(model, 100, seed=3)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda w: (w, client.post(w[0], w[1])), later))
    wrong = [_check(w[0], s, raw, w[2]) for w, (s, raw, _) in outcomes]
    assert all(x is None for x in wrong), [x for x in wrong if x][:3]
    survivors = {node for _, (_, _, node) in outcomes}
    assert len(survivors) == 1 and survivors < nodes, f"after the stop, answers came from {survivors}"
    stopped_node = (nodes - survivors).pop()
    served_by_stopped = sum(1 for r in results if r[4] == stopped_node)
    assert served_by_stopped > 0, "the stopped node's replica answered nothing of the load: it was not under load"
    model.close()
    print(f"two-node serve test: {served_by_stopped} of {len(load)} requests answered by the stopped node's "
          f"replica before it stopped, {len(failed)} failed; "
          f"{time.monotonic() - cluster['started']:.0f} s since the cluster started")
