"""``python -m longrun.serve MODEL``: serves a longrun model file on a Ray cluster over HTTP.

Connects to the cluster named by ``--address`` (or ``RAY_ADDRESS``, or a running local one;
without any, Ray starts a local cluster), deploys :func:`longrun.serve.app`, prints one line
with the URL once every replica is up, and serves until interrupted (SIGINT or SIGTERM), then
deletes the application. With ``--detach`` it returns at once and the application keeps
running on the cluster (``serve shutdown`` or ``serve.delete(NAME)`` stops it).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m longrun.serve",
        description="Serve a longrun model file on Ray Serve: POST /run, /embed, /generate; GET /, /health.")
    p.add_argument("model", help="native longrun model file (longrun-convert output); the same path on every node")
    p.add_argument("--replicas", type=int, default=1, help="replicas of the deployment (default 1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port of Serve's proxy (default 8000)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address the proxy binds (default 127.0.0.1; 0.0.0.0 to accept other machines)")
    p.add_argument("--address", default=None,
                   help="Ray cluster address, e.g. 10.0.0.1:6379 or auto (default: RAY_ADDRESS, else a local cluster)")
    p.add_argument("--threads", type=int, default=1, help="longrun threads per replica (default 1)")
    p.add_argument("--num-cpus", type=float, default=None, help="Ray CPUs each replica reserves (default: --threads)")
    p.add_argument("--max-batch-size", type=int, default=16, help="requests batched into one run (default 16)")
    p.add_argument("--batch-wait-ms", type=float, default=5.0, help="how long a batch waits to fill (default 5)")
    p.add_argument("--max-ongoing-requests", type=int, default=None,
                   help="requests a replica accepts at once (default max(32, 2 x batch size))")
    p.add_argument("--max-replicas-per-node", type=int, default=None, help="spread replicas over nodes")
    p.add_argument("--max-body-mib", type=int, default=64, help="largest request body in MiB (default 64)")
    p.add_argument("--proxy-location", choices=("EveryNode", "HeadOnly"), default="EveryNode",
                   help="where Serve runs HTTP proxies (default EveryNode)")
    p.add_argument("--name", default="longrun", help="Serve application name (default longrun)")
    p.add_argument("--route-prefix", default="/", help="URL prefix of the API (default /)")
    p.add_argument("--detach", action="store_true", help="deploy and return; the application keeps running")
    return p


def main(argv: "list[str] | None" = None) -> int:
    args = _parser().parse_args(argv)
    for flag, value, lo in (("--replicas", args.replicas, 1), ("--threads", args.threads, 0),
                            ("--max-batch-size", args.max_batch_size, 1), ("--max-body-mib", args.max_body_mib, 1),
                            ("--port", args.port, 1)):
        if value < lo or (flag == "--port" and value > 65535):
            print(f"longrun.serve: {flag}: {value} is out of range", file=sys.stderr)
            return 2

    import longrun

    try:  # a bad file fails here, with longrun's message, before any replica starts
        with longrun.Model(args.model) as m:
            arch = m.arch
    except longrun.Error as e:
        print(f"longrun.serve: {e}", file=sys.stderr)
        return 2
    try:
        import ray
        from ray import serve

        import longrun.serve as ls
    except ImportError as e:
        print(f"longrun.serve: {e}", file=sys.stderr)
        return 2

    ray.init(address=args.address, logging_level="WARNING")
    serve.start(http_options={"host": args.host, "port": args.port}, proxy_location=args.proxy_location)
    application = ls.app(args.model, replicas=args.replicas, threads=args.threads, num_cpus=args.num_cpus,
                         max_batch_size=args.max_batch_size, batch_wait_ms=args.batch_wait_ms,
                         max_ongoing_requests=args.max_ongoing_requests,
                         max_replicas_per_node=args.max_replicas_per_node,
                         limits=ls.Limits(max_body_bytes=args.max_body_mib << 20))
    serve.run(application, name=args.name, route_prefix=args.route_prefix)
    prefix = args.route_prefix.rstrip("/")
    print(f"longrun.serve: {args.model} ({arch}) at http://{args.host}:{args.port}{prefix}/ "
          f"with {args.replicas} replica(s)", flush=True)
    if args.detach:
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    print("longrun.serve: stopping", flush=True)
    try:
        serve.delete(args.name)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
