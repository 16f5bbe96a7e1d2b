#!/usr/bin/env python3
"""The GPU ceilings and peers the cuda backend is measured against, with PyTorch on the
same device: device-to-device copy bandwidth (bytes read + written per second) and
torch.nn.functional.scaled_dot_product_attention at B = 1, H = 8, hd = 64 in f32 and bf16.
Times are CUDA-event medians after warm-up. One JSON object per line on stdout (or --json)."""
import argparse
import json
import statistics
import sys

import torch


def event_ms(fn, warmup=3, repeat=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default="4096,8192,16384,32768", help="attention sequence lengths")
    ap.add_argument("--json", default="-")
    args = ap.parse_args()
    out = sys.stdout if args.json == "-" else open(args.json, "w")
    dev = torch.device("cuda")
    rows = []
    src = torch.randn(256 << 20, device=dev)  # 1 GiB of f32
    dst = torch.empty_like(src)
    ms = event_ms(lambda: dst.copy_(src))
    rows.append({"op": "d2d_copy", "shape": "1 GiB", "median_ms": ms, "gbps": 2 * src.numel() * 4 / ms / 1e6})
    del src, dst
    for n in [int(x) for x in args.n.split(",")]:
        for dtype in (torch.float32, torch.bfloat16):
            q, k, v = (torch.randn(1, 8, n, 64, device=dev, dtype=dtype) for _ in range(3))
            ms = event_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.125))
            flops = 4 * 8 * n * n * 64
            rows.append({"op": "sdpa", "shape": "B1 H8 N%d hd64" % n, "dtype": str(dtype).split(".")[1],
                         "median_ms": ms, "gflops": flops / ms / 1e6})
    for r in rows:
        r["torch"] = torch.__version__
        r["device"] = torch.cuda.get_device_name()
        out.write(json.dumps(r) + "\n")
        print("%-9s %-18s %-9s %9.3f ms  %s" % (r["op"], r["shape"], r.get("dtype", ""), r["median_ms"],
              "%.0f GB/s" % r["gbps"] if "gbps" in r else "%.0f GFLOP/s" % r["gflops"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
