#!/usr/bin/env python3
"""Throughput and latency of longrun.serve against direct Session.run, in one run.

Runs with the Python of a venv that has longrun and ray[serve] (tools/dev/python_test.sh
makes build/.cache/py-venv). For the model (default: all-MiniLM-L6-v2 from
tools/dev/fetch_minilm.sh, converted once into build/.cache/serve-bench) it times, on the same
[1, N] token-id requests:
  direct      Session.run in this process, one request at a time (threads per replica);
  serve R=1   one replica on a one-node local Ray cluster, clients keeping C requests in flight;
  serve R=2   two replicas on the same cluster.
Each row: requests/s, p50 and p99 latency in ms; Serve's per-request overhead is the serve
R=1, C=1 median minus the direct median. Responses are checked against the direct results
before anything is timed. JSON lines with provenance go to --json.

    build/.cache/py-venv/bin/python tools/bench/serve_bench.py [--model FILE] [--n 128]
        [--requests 400] [--concurrency 1,16] [--replicas 1,2] [--threads 1] [--batch-wait-ms 5]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _model(arg: str) -> Path:
    if arg:
        return Path(arg)
    out = ROOT / "build" / ".cache" / "serve-bench" / "minilm.safetensors"
    if not out.exists():
        src = subprocess.run([str(ROOT / "tools" / "dev" / "fetch_minilm.sh")], check=True, capture_output=True,
                             text=True).stdout.strip()
        import longrun

        out.parent.mkdir(parents=True, exist_ok=True)
        longrun.convert(src, out)
    return out


def _percentile(xs: List[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _row(kind: str, replicas: int, concurrency: int, lat_s: List[float], wall_s: float) -> Dict[str, Any]:
    return {"runner": kind, "replicas": replicas, "concurrency": concurrency, "requests": len(lat_s),
            "throughput_rps": len(lat_s) / wall_s, "p50_ms": 1e3 * statistics.median(lat_s),
            "p99_ms": 1e3 * _percentile(lat_s, 0.99)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="", help="native model file (default: MiniLM, fetched and converted)")
    p.add_argument("--n", type=int, default=128, help="tokens per request (default 128)")
    p.add_argument("--requests", type=int, default=400, help="timed requests per row (default 400)")
    p.add_argument("--concurrency", default="1,16", help="requests in flight, comma-separated (default 1,16)")
    p.add_argument("--replicas", default="1,2", help="replica counts, comma-separated (default 1,2)")
    p.add_argument("--threads", type=int, default=1, help="longrun threads per replica and direct (default 1)")
    p.add_argument("--batch-wait-ms", type=float, default=5.0, help="the deployment's batch window (default 5)")
    p.add_argument("--json", default="", help="append JSON lines here")
    args = p.parse_args()
    try:
        concurrency = [int(x) for x in args.concurrency.split(",")]
        replicas = [int(x) for x in args.replicas.split(",")]
    except ValueError:
        p.error("--concurrency and --replicas take comma-separated integers")
    if args.n < 1 or args.requests < 1 or min(concurrency + replicas) < 1:
        p.error("--n, --requests, --concurrency and --replicas must be positive")

    import longrun
    import ray
    from longrun.serve import decode_array
    from longrun.serve.local_cluster import HttpClient, LocalCluster, free_port

    model_path = _model(args.model)
    model = longrun.Model(model_path)
    vocab = int(model.config.get("vocab_size", 100))
    rng = np.random.default_rng(0)
    ids = [rng.integers(5, vocab, size=(1, args.n)) for _ in range(64)]
    session = model.session(threads=args.threads)
    expected = [session.run({"input_ids": x})["last_hidden_state"] for x in ids]
    bodies = [{"inputs": {"input_ids": x.tolist()}, "outputs": ["last_hidden_state"], "encoding": "base64"}
              for x in ids]

    rows = []
    for _ in range(5):
        session.run({"input_ids": ids[0]})
    lat = []
    start = time.perf_counter()
    for i in range(args.requests):
        t = time.perf_counter()
        session.run({"input_ids": ids[i % len(ids)]})
        lat.append(time.perf_counter() - t)
    rows.append(_row("direct", 0, 1, lat, time.perf_counter() - start))
    session.close()

    cpus = max(replicas) * max(1, args.threads)
    with LocalCluster(nodes=1, cpus_per_node=cpus) as cluster:
        port = free_port()  # Serve's HTTP options are per cluster: every deployment below shares them
        for r in replicas:
            proc = cluster.start(f"serve-r{r}", [
                sys.executable, "-m", "longrun.serve", str(model_path), f"--address={cluster.address}",
                f"--replicas={r}", f"--threads={args.threads}", f"--num-cpus={max(1, args.threads)}",
                "--host=127.0.0.1", f"--port={port}", "--proxy-location=HeadOnly", f"--name=bench{r}",
                f"--batch-wait-ms={args.batch_wait_ms}"])
            cluster.wait_for(f"{r} replica(s)", lambda: b"replica(s)" in proc.output(), 180)
            client = HttpClient(port)
            for i, body in enumerate(bodies):  # check, then warm every replica's plan
                status, raw, _ = client.post("/run", body)
                got = decode_array(json.loads(raw)["outputs"]["last_hidden_state"]) if status == 200 else None
                if got is None or not np.array_equal(got, expected[i]):
                    print(f"serve_bench: response {i} differs from the direct run: HTTP {status} {raw[:200]!r}",
                          file=sys.stderr)
                    return 1
            for c in concurrency:
                def one(i: int) -> float:
                    t = time.perf_counter()
                    status, raw, _ = client.post("/run", bodies[i % len(bodies)])
                    if status != 200:
                        raise RuntimeError(f"HTTP {status}: {raw[:200]!r}")
                    return time.perf_counter() - t

                with concurrent.futures.ThreadPoolExecutor(c) as pool:
                    start = time.perf_counter()
                    lat = list(pool.map(one, range(args.requests)))
                    rows.append(_row("serve", r, c, lat, time.perf_counter() - start))
            proc.stop(grace_s=20)

    direct = rows[0]
    provenance = {
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
        "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
                    platform.processor()),
        "cores": os.cpu_count(), "ray": ray.__version__, "longrun": longrun.version(),
        "model": model_path.name, "arch": model.arch, "n": args.n, "threads": args.threads,
        "batch_wait_ms": args.batch_wait_ms,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    print(f"{'runner':<8} {'replicas':>8} {'in flight':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'vs direct':>9}")
    for row in rows:
        row["vs_direct_throughput"] = row["throughput_rps"] / direct["throughput_rps"]
        print(f"{row['runner']:<8} {row['replicas']:>8} {row['concurrency']:>9} {row['throughput_rps']:>8.1f} "
              f"{row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['vs_direct_throughput']:>8.2f}x")
    one = next((x for x in rows if x["runner"] == "serve" and x["replicas"] == 1 and x["concurrency"] == 1), None)
    if one:
        print(f"Serve's per-request overhead (serve R=1 C=1 p50 - direct p50): {one['p50_ms'] - direct['p50_ms']:.2f} ms")
    if args.json:
        with open(args.json, "a") as f:
            for row in rows:
                f.write(json.dumps({"bench": "serve", **row, **provenance}) + "\n")
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
