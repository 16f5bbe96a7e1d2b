"""longrun.serve on a real two-node Ray cluster on this machine (longrun.serve.local_cluster:
`ray start --head` and a second `ray start --address` node, one CPU each, node address
127.0.0.1), `python -m longrun.serve` with two replicas (one per node) behind Serve's HTTP proxy on 127.0.0.1, 1,000 concurrent
requests checked against direct runs, then one node stopped under load: the requests it drops
fail with an error response or a closed connection, later ones succeed. Everything started
here is stopped here (process groups, temp dir), pass or fail."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest

from conftest import require_serve

require_serve()
import longrun  # noqa: E402
from longrun.serve import decode_array  # noqa: E402
from longrun.serve.local_cluster import HttpClient, LocalCluster, free_port  # noqa: E402

DEADLINE_S = 240  # the load phase's bound


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
    # Serve's proxy prefers replicas on its own node; spread the load so that the replica on
    # the node the test stops is busy when it stops.
    with LocalCluster(nodes=2, cpus_per_node=1, env={"RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING": "0"}) as c:
        http_port = free_port()
        serve = c.start("longrun.serve", [
            sys.executable, "-m", "longrun.serve", str(text_model_path), f"--address={c.address}", "--replicas=2",
            "--threads=1", "--num-cpus=1", "--max-replicas-per-node=1", "--proxy-location=HeadOnly",
            "--host=127.0.0.1", f"--port={http_port}", "--max-batch-size=8", "--batch-wait-ms=2"])
        c.wait_for("the deployment", lambda: b"with 2 replica(s)" in serve.output(), 150)
        yield c, http_port


def test_two_nodes_1000_requests_then_a_node_stops(cluster, text_model_path):
    c, port = cluster
    client = HttpClient(port)
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
        c.stop_node(1)
        concurrent.futures.wait(futures, timeout=DEADLINE_S)
    failed = [r for r in results if r[1] is not None]
    for path, why, status, raw, _ in failed:
        # A request the stopped replica held fails with an error response (5xx and a body that
        # says why) or a dropped connection; never a wrong answer.
        assert why.startswith("connection") or (status is not None and status >= 500 and raw.strip()), why
    assert len(results) == len(load)
    assert len(failed) < len(load) // 2, f"{len(failed)} of {len(load)} failed: {failed[:3]}"


    # Ray notices the stopped replica within seconds (health checks); until then the proxy may
    # still route a request to it. Wait until 20 answers in a row come back, then every later
    # request must succeed on the surviving replica.
    probe = _requests(model, 20, seed=4)
    settle_deadline = time.monotonic() + 60
    while True:
        try:
            statuses = [client.post(w[0], w[1], timeout=30)[0] for w in probe]
        except (ConnectionError, http.client.HTTPException, OSError):
            statuses = [None]
        if all(st == 200 for st in statuses):
            break
        assert time.monotonic() < settle_deadline, f"the cluster did not settle after the stop: {statuses}"
        time.sleep(1)
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
          f"replica before it stopped, {len(failed)} failed" + (f", e.g. {failed[0][1][:160]}" if failed else ""))
