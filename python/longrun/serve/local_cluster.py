"""A Ray cluster of several nodes on this machine, for tests and benchmarks of longrun.serve.

``LocalCluster`` runs ``ray start --head`` and ``ray start --address`` for each further node,
every node with ``--node-ip-address=127.0.0.1`` and its own CPU count, each command in its own
process group with ``--block``, so that :meth:`LocalCluster.stop_node` ends one node with
everything it spawned (its raylet, workers and replicas) and :meth:`LocalCluster.close` ends
them all. Ray's own services listen on ports it picks; the HTTP proxy that longrun.serve
starts binds the host it is given (127.0.0.1 by default).
"""

from __future__ import annotations

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
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This process's environment without RAY_ADDRESS, usage statistics off, plus ``extra``."""
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class Process:
    """A command in its own process group, its output in a log file."""

    def __init__(self, name: str, args: Sequence[str], log: Path, env: Dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._file = open(log, "wb")
        self.proc = subprocess.Popen(list(args), stdout=self._file, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)

    def running(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> bytes:
        return self.log.read_bytes()

    def tail(self, n: int = 3000) -> str:
        return self.output()[-n:].decode(errors="replace")

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM to the group, SIGKILL to what is left after ``grace_s``."""
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
        if not self._file.closed:
            self._file.close()


class LocalCluster:
    """``nodes`` Ray nodes on 127.0.0.1 with ``cpus_per_node`` CPUs each; a context manager."""

    def __init__(self, nodes: int = 2, cpus_per_node: int = 1, *, object_store_bytes: int = 100_000_000,
                 env: Optional[Dict[str, str]] = None, start_timeout_s: float = 90) -> None:
        self.env = ray_env(env)
        # Short: Ray puts unix sockets under it (108-byte path limit).
        self.tmp = Path(tempfile.mkdtemp(prefix="lr-ray-", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.processes: List[Process] = []
        ray = str(Path(sys.executable).parent / "ray")
        if not Path(ray).exists():
            ray = shutil.which("ray") or "ray"
        common = ["--node-ip-address=127.0.0.1", f"--num-cpus={cpus_per_node}",
                  f"--object-store-memory={object_store_bytes}", "--disable-usage-stats", "--block"]
        try:
            for i in range(nodes):
                if i == 0:
                    args = [ray, "start", "--head", f"--port={self.port}", "--include-dashboard=false",
                            f"--temp-dir={self.tmp}", f"--ray-client-server-port={free_port()}"]
                else:
                    args = [ray, "start", f"--address={self.address}"]
                args += [f"--dashboard-agent-listen-port={free_port()}"] + common
                node = Process("ray head" if i == 0 else f"ray node {i}", args, self.tmp / f"node{i}.log", self.env)
                self.processes.append(node)
                self.wait_for(f"{node.name} to start", lambda n=node: b"--block" in n.output(), start_timeout_s)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, name: str, args: Sequence[str]) -> Process:
        """A further process (e.g. ``python -m longrun.serve``), stopped first by close()."""
        p = Process(name, args, self.tmp / f"{name.replace(' ', '_').replace('/', '_')}.log", self.env)
        self.processes.append(p)
        return p

    def wait_for(self, what: str, cond: Callable[[], bool], timeout_s: float) -> None:
        """Polls ``cond`` until true; raises with the logs when a process dies or time runs out."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if cond():
                return
            for p in self.processes:
                if p.proc.poll() is not None and p.proc.returncode != 0:
                    raise RuntimeError(f"{p.name} exited with {p.proc.returncode} while waiting for {what}:\n{p.tail()}")
            time.sleep(0.25)
        raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}:\n" +
                           "\n".join(f"--- {p.name}\n{p.tail()}" for p in self.processes))

    def stop_node(self, index: int) -> None:
        """Ends node ``index`` (0 is the head) and everything it runs at once: SIGTERM, then SIGKILL."""
        self.processes[index].stop(grace_s=0)

    def close(self) -> None:
        """Stops every process (the extra ones first, with time to shut down cleanly) and
        removes the temporary directory."""
        for p in reversed(self.processes):
            p.stop(grace_s=20 if not p.name.startswith("ray") else 5)
        self.processes.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)


class HttpClient:
    """JSON requests to a longrun.serve proxy on 127.0.0.1 over HTTP/1.1 keep-alive connections,
    one per calling thread (the tests' and the benchmark's client)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._local = threading.local()

    def post(self, path: str, body: Dict[str, Any], timeout: float = 60) -> Tuple[int, bytes, str]:
        """(status, body, the X-Longrun-Node header: which node's replica answered)."""
        data = json.dumps(body).encode()
        while True:
            conn = getattr(self._local, "conn", None)
            reused = conn is not None
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            try:
                conn.request("POST", path, data, {"Content-Type": "application/json"})
                r = conn.getresponse()
                return r.status, r.read(), r.getheader("X-Longrun-Node", "")
            except (ConnectionError, http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if not reused:  # a kept-alive connection the proxy closed is retried once, fresh
                    raise

    def get(self, path: str) -> Tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()
