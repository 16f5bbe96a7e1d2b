#!/usr/bin/env python3
"""longrun against ONNX Runtime and OpenVINO on the same BERT encoders, weights, ids and
thread counts (README.md beside this file). Benchmark-only: no test or CI runs it.

    tools/bench/peers/setup.sh                        # the venv: torch, onnxruntime, openvino, longrun
    build/.cache/peers-venv/bin/python tools/bench/peers/peers_bench.py --threads 1,2 --json peers.jsonl
    ... --cases minilm-n128-b1,bert-base-n512 --threads 1 --quick     # a smoke run

Cases (the same ids for every runner: [CLS], random ids in [1000, vocab), [SEP]; no padding,
so no attention mask):
  minilm     all-MiniLM-L6-v2 (tools/dev/fetch_minilm.sh), N 128 and 512, batch 1 and 8
  bert-base  a BERT-base-sized encoder (12 layers, D 768, 12 heads, FFN 3072, vocab 30522)
             with seeded random weights, N 512, 2048, 4096, batch 1
Each family's Hugging Face directory (config.json + model.safetensors + vocab.txt) is the one
source: longrun.convert makes the native file, the PyTorch BERT of tests/oracles/bert.py
(HF module names, loaded strictly, float32) is exported with torch.onnx.export (dynamic batch
and length), and ONNX Runtime's quantize_dynamic makes the int8 model from that export. The
exports are cached under build/.cache/peers/<family>/ and remade when their source changes.

Runners per (case, threads):
  longrun-<P>   longrun.Model(native).session(threads=T, precision=P) for P in --precision;
                a precision longrun refuses (UnsupportedError) is an "unsupported" row
  ov            OpenVINO CPU at its default inference precision, INFERENCE_NUM_THREADS T
  ov-f32        the same with INFERENCE_PRECISION_HINT f32
  ort           ONNX Runtime CPU, f32, intra_op_num_threads T, inter_op 1, all graph optimisations
  ort-fused     the same on the export after onnxruntime.transformers' BERT optimizer (fused
                embedding, attention, bias-GELU and skip-LayerNorm ops: ORT's tuned BERT path)
  ort-int8      the same on the quantize_dynamic (int8 weights, int8 activations per call) model
Before timing, every runner's last_hidden_state is compared with longrun-f32's: max abs error
and ||a - b|| / ||b||, and the cosine of each batch row's sentence embedding (mean over the
tokens, L2-normalised) to longrun-f32's; an f32 runner further than 1e-4 from it is flagged,
and so is longrun at int8 with a mean embedding cosine below 0.99, or at bf16 below 0.999
(longrun's precision targets, docs/usage.md#precision; the peers' reduced precisions are
reported, not judged). Then W warm-up and
R timed calls: median, p90 and min in ms. The ratio is runner ms / longrun-f32 ms (> 1:
longrun f32 is faster).
"""

import argparse
import datetime
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "oracles"))

import numpy as np  # noqa: E402

F32_TOLERANCE = 1e-4  # normalised error above which an f32 runner's row is flagged
# The least mean cosine of longrun's sentence embeddings (mean-pooled, L2-normalised
# last_hidden_state) at a reduced precision to longrun-f32's: int8 rounds each linear layer's inputs
# and weights to 8 bits, bf16 every value to 8 significant bits; a wrong scale or layout
# leaves the embeddings far below either.
EMBEDDING_COSINE_TARGET = {"int8": 0.99, "bf16": 0.999}
EXPORT_FORMAT = 1  # bump when the export, the generator or the quantisation changes
BERT_BASE_SEED = "peers-bert-base"
# ONNX Runtime's dynamic quantisation: int8 weights with one scale per output channel (a
# per-tensor scale leaves MiniLM's hidden states twice as far from f32), activations
# quantised per call; the default QOperator format (MatMulInteger / DynamicQuantizeLinear).
QUANTIZATION = "quantize_dynamic weight_type=QInt8 per_channel=True"
FAMILIES = {
    "minilm": {"n": [128, 512], "batch": [1, 8]},
    "bert-base": {"n": [512, 2048, 4096], "batch": [1]},
}
PEER_RUNNERS = ["ov", "ov-f32", "ort", "ort-fused", "ort-int8"]
ISA_FLAGS = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
             "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Models: one Hugging Face directory per family, then the native file and the ONNX exports


def bert_base_config(max_positions):
    return {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": 30522, "hidden_size": 768,
            "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
            "max_position_embeddings": max_positions, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
            "pad_token_id": 0, "position_embedding_type": "absolute"}


def oracle_config(hf, with_pooler):
    keys = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id")
    cfg = {k: hf[k] for k in keys}
    cfg.update(add_pooling_layer=with_pooler, mlm_head=False)
    return cfg


def write_safetensors(path, tensors):
    """float32 tensors, sorted names, streamed (the BERT-base file is 440 MB)."""
    header, offset = {}, 0
    for name in sorted(tensors):
        nbytes = tensors[name].size * 4
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name in sorted(tensors):
            f.write(np.ascontiguousarray(tensors[name], dtype="<f4").tobytes())


def bert_vocab(size):
    """A WordPiece vocabulary in BERT's layout: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102,
    [MASK] 103, then characters, their ## forms and made-up words up to `size` entries."""
    words = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    words += chars + ["##" + c for c in chars]
    i = 0
    while len(words) < size:
        words.append("w%d" % i)
        i += 1
    return words[:size]


def stamp_of(path):
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def cached(path, key, make):
    """Runs make(tmp_path) unless `path` exists with the same key (path + '.key'), then renames."""
    key_path = path + ".key"
    text = json.dumps(key, sort_keys=True)
    if os.path.exists(path) and os.path.exists(key_path):
        with open(key_path) as f:
            if f.read() == text:
                return path
    tmp = path + ".tmp"
    for stale in (tmp, path):
        if os.path.isdir(stale):
            shutil.rmtree(stale)
    make(tmp)
    os.replace(tmp, path)
    with open(key_path, "w") as f:
        f.write(text)
    return path


def make_bert_base_dir(cache, max_positions):
    import bert  # tests/oracles: the parameter table and the synthetic weights of its goldens

    hf = bert_base_config(max_positions)

    def make(tmp):
        os.makedirs(tmp)
        log("peers: generating the bert-base weights (seed %r, %d positions)" % (BERT_BASE_SEED, max_positions))
        weights = bert.random_weights("bert", oracle_config(hf, False), BERT_BASE_SEED)
        write_safetensors(os.path.join(tmp, "model.safetensors"), weights)
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(hf, f, indent=2, sort_keys=True)
        with open(os.path.join(tmp, "vocab.txt"), "w") as f:
            f.write("\n".join(bert_vocab(hf["vocab_size"])) + "\n")
        with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)

    key = {"format": EXPORT_FORMAT, "seed": BERT_BASE_SEED, "config": hf}
    return cached(os.path.join(cache, "hf"), key, make)


def minilm_dir():
    try:
        out = subprocess.run([os.path.join(REPO, "tools", "dev", "fetch_minilm.sh")], cwd=REPO, check=True,
                             stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()
    except subprocess.CalledProcessError as e:
        raise RuntimeError("tools/dev/fetch_minilm.sh failed (exit %d): all-MiniLM-L6-v2 is not available"
                           % e.returncode) from e
    return os.path.join(REPO, out[-1])


def torch_bert(model_dir, hf):
    """tests/oracles/bert.py's BertModel in float32 with the directory's weights (strict load)."""
    import bert
    import safetensors_io
    import torch

    tensors, _ = safetensors_io.read(os.path.join(model_dir, "model.safetensors"))
    weights = {k: torch.from_numpy(t.to_numpy().astype(np.float32)) for k, t in tensors.items()
               if k != "embeddings.position_ids"}  # a buffer, not a parameter
    m = bert.Model("bert", oracle_config(hf, any(k.startswith("pooler.") for k in weights)))
    m.load_state_dict(weights, strict=True)
    return m.float().eval()


def export_onnx(model_dir, hf, out_path):
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            x = self.m.embeddings(input_ids, None)
            for layer in self.m.encoder.layer:
                x = layer(x, None)
            return x

    wrapper = LastHiddenState(torch_bert(model_dir, hf))
    dummy = torch.full((1, 16), 1000, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    log("peers: exporting %s to ONNX" % model_dir)
    with torch.no_grad(), warnings.catch_warnings():
        # The oracle's 1/sqrt(head_dim) is a Python float in the trace: a constant, as it should be.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(wrapper, (dummy,), out_path, input_names=["input_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "last_hidden_state": axes},
                          opset_version=onnx_opset(), do_constant_folding=True)


def onnx_opset():
    """17 (LayerNormalization as one op) where the installed torch exports it, else 14."""
    try:
        from torch.onnx._constants import ONNX_MAX_OPSET
    except ImportError:
        ONNX_MAX_OPSET = 14
    return 17 if ONNX_MAX_OPSET >= 17 else 14


def prepare_family(family, args, versions):
    """Returns {hf_dir, hf, native, onnx[, onnx_int8][, onnx_fused, fusion]}: the files the
    selected runners need, made or found in the cache."""
    import longrun

    cache = os.path.join(args.cache, family)
    os.makedirs(cache, exist_ok=True)
    if family == "minilm":
        model_dir = args.minilm_dir or minilm_dir()
    else:
        longest = max([4096] + [n for n in (args.n or [])])
        model_dir = make_bert_base_dir(cache, longest)
    with open(os.path.join(model_dir, "config.json")) as f:
        hf = json.load(f)
    source = stamp_of(os.path.join(model_dir, "model.safetensors"))

    native = os.path.join(cache, "model.longrun.safetensors")
    # Converted on every run (seconds): the native format follows the checkout.
    log("peers: converting %s with longrun.convert" % model_dir)
    tmp = native + ".tmp"
    longrun.convert(model_dir, tmp)
    os.replace(tmp, native)

    onnx_key = {"format": EXPORT_FORMAT, "source": source, "torch": versions["torch"], "opset": onnx_opset()}
    onnx_path = cached(os.path.join(cache, "model.onnx"), onnx_key, lambda tmp: export_onnx(model_dir, hf, tmp))

    def quantize(tmp):
        from onnxruntime.quantization import QuantType, quantize_dynamic

        log("peers: quantize_dynamic (%s) of %s" % (QUANTIZATION, onnx_path))
        quantize_dynamic(onnx_path, tmp, weight_type=QuantType.QInt8, per_channel=True)

    paths = {"hf_dir": model_dir, "hf": hf, "native": native, "onnx": onnx_path}
    derived_key = {"onnx": stamp_of(onnx_path), "onnxruntime": versions["onnxruntime"]}
    # A derived model that cannot be made fails its own runner's rows, not the family.
    if "ort-int8" in args.runners:
        try:
            paths["onnx_int8"] = cached(os.path.join(cache, "model.int8.onnx"),
                                        dict(derived_key, settings=QUANTIZATION), quantize)
        except Exception as e:
            paths["onnx_int8"] = RuntimeError("quantize_dynamic failed: %s: %s" % (type(e).__name__, e))
    if "ort-fused" in args.runners:
        fused = os.path.join(cache, "model.fused.onnx")
        if not os.path.exists(fused + ".fusion.json") and os.path.exists(fused + ".key"):
            os.remove(fused + ".key")

        def fuse(tmp):
            from onnxruntime.transformers.optimizer import optimize_model

            log("peers: onnxruntime.transformers optimize_model (bert) of %s" % onnx_path)
            m = optimize_model(onnx_path, model_type="bert", num_heads=hf["num_attention_heads"],
                               hidden_size=hf["hidden_size"])
            m.save_model_to_file(tmp)
            with open(fused + ".fusion.json", "w") as f:
                json.dump({k: v for k, v in m.get_fused_operator_statistics().items() if v}, f, sort_keys=True)

        try:
            paths["onnx_fused"] = cached(fused, dict(derived_key, settings="optimize_model bert"), fuse)
            with open(fused + ".fusion.json") as f:
                paths["fusion"] = json.load(f)
        except Exception as e:
            paths["onnx_fused"] = RuntimeError("optimize_model failed: %s: %s" % (type(e).__name__, e))
    return paths


def case_ids(hf, n, batch, seed):
    rng = np.random.default_rng([seed, n, batch])
    ids = rng.integers(1000, hf["vocab_size"], size=(batch, n), dtype=np.int64)
    ids[:, 0] = 101  # [CLS]
    ids[:, -1] = 102  # [SEP]
    return ids


# ---------------------------------------------------------------------------------------------
# Runners: each returns (call, info); call(ids) -> last_hidden_state as numpy float32


def longrun_runner(paths, threads, precision):
    import longrun

    model = longrun.Model(paths["native"])
    session = model.session(threads=threads, precision=precision)

    def call(x):
        return session.run({"input_ids": x})["last_hidden_state"]

    return call, {"precision": precision, "engine": "longrun", "backend": session.backend}


def ort_runner(path, threads, precision, extra=None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    def call(x):
        return sess.run(["last_hidden_state"], {"input_ids": x})[0]

    info = {"precision": precision, "engine": "onnxruntime", "providers": sess.get_providers()}
    info.update(extra or {})
    return call, info


def ov_runner(path, threads, force_f32, ids):
    import openvino as ov

    core = ov.Core()
    model = core.read_model(path)
    model.reshape({"input_ids": list(ids.shape)})  # static shapes: OpenVINO's fast path
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
    if force_f32:
        config["INFERENCE_PRECISION_HINT"] = "f32"
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    resolved = {}
    for prop in ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS", "ENABLE_CPU_PINNING",
                 "ENABLE_HYPER_THREADING", "SCHEDULING_CORE_TYPE"):
        try:
            resolved[prop] = str(compiled.get_property(prop))
        except Exception:  # a property this version does not have
            pass
    precision = resolved.get("INFERENCE_PRECISION_HINT", "unknown")
    precision = {"<Type: 'float32'>": "f32", "<Type: 'bfloat16'>": "bf16", "<Type: 'float16'>": "f16"}.get(
        precision, precision)

    def call(x):
        request.infer({"input_ids": x}, share_inputs=True)
        return request.get_output_tensor(0).data

    return call, {"precision": precision, "engine": "openvino", "properties": resolved}


def make_runner(name, paths, threads, ids):
    for key in ("onnx_int8", "onnx_fused"):
        if isinstance(paths.get(key), Exception) and name == {"onnx_int8": "ort-int8", "onnx_fused": "ort-fused"}[key]:
            raise paths[key]
    if name.startswith("longrun-"):
        return longrun_runner(paths, threads, name[len("longrun-"):])
    if name == "ort":
        return ort_runner(paths["onnx"], threads, "f32")
    if name == "ort-int8":
        return ort_runner(paths["onnx_int8"], threads, "int8", {"quantization": QUANTIZATION})
    if name == "ort-fused":
        return ort_runner(paths["onnx_fused"], threads, "f32", {"fused_ops": paths["fusion"]})
    if name in ("ov", "ov-f32"):
        return ov_runner(paths["onnx"], threads, name == "ov-f32", ids)
    raise ValueError(name)


def errors(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("last_hidden_state shape %s, longrun-f32 has %s" % (a.shape, b.shape))
    return float(np.max(np.abs(a - b))), float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def embedding_cosines(a, b):
    """Per batch row: the cosine of the mean-pooled, L2-normalised [N, D] rows of a and b (no
    padding in these cases, so every token counts)."""
    a = np.asarray(a, dtype=np.float64).mean(axis=1)
    b = np.asarray(b, dtype=np.float64).mean(axis=1)
    a /= np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-300)
    b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-300)
    return np.sum(a * b, axis=1)


def check(engine, precision, rel_err, cosines):
    """"ok" / "mismatch" against the bound of the runner's precision: F32_TOLERANCE for every
    f32 runner, EMBEDDING_COSINE_TARGET for longrun's reduced precisions; None otherwise."""
    if precision == "f32":
        return "mismatch" if rel_err > F32_TOLERANCE else "ok"
    target = EMBEDDING_COSINE_TARGET.get(precision) if engine == "longrun" else None
    if target is None:
        return None
    return "mismatch" if float(np.mean(cosines)) < target else "ok"


def timed(call, ids, warmup, repeat):
    for _ in range(warmup):
        call(ids)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call(ids)
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": float(np.median(times)), "p90_ms": float(np.percentile(times, 90)),
            "min_ms": float(min(times)), "max_ms": float(max(times))}


# ---------------------------------------------------------------------------------------------
# Provenance


def provenance():
    import longrun
    import onnx
    import onnxruntime
    import openvino
    import torch

    try:
        commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], check=True,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    cpu, flags = None, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu is None:
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and flags is None:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    cpu, flags = cpu or platform.processor() or "unknown", flags or set()
    versions = {"longrun": longrun.version(), "onnxruntime": onnxruntime.__version__,
                "openvino": openvino.__version__, "onnx": onnx.__version__, "torch": torch.__version__,
                "numpy": np.__version__, "python": platform.python_version()}
    return {"commit": commit, "cpu": cpu, "isa_flags": [f for f in ISA_FLAGS if f in flags],
            "versions": versions, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cpus_online": os.cpu_count()}


# ---------------------------------------------------------------------------------------------


def int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("expected a comma-separated list of integers, found %r" % text)
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("expected positive integers, found %r" % text)
    return values


def str_list(text):
    return [v.strip() for v in text.split(",") if v.strip()]


def select_cases(args):
    all_cases = []
    for family, grid in FAMILIES.items():
        for n in args.n or grid["n"]:
            for batch in args.batch or grid["batch"]:
                all_cases.append(("%s-n%d-b%d" % (family, n, batch), family, n, batch))
    if not args.cases:
        return all_cases
    picked = []
    for token in args.cases:
        hits = [c for c in all_cases if c[0] == token or c[0].startswith(token + "-")]
        if not hits:
            raise ValueError("--cases: no case matches %r (cases: %s)" % (token, ", ".join(c[0] for c in all_cases)))
        picked += [c for c in hits if c not in picked]
    return picked


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--cases", type=str_list, help="case ids or families (minilm, bert-base, minilm-n128, "
                    "minilm-n128-b1, ...); default all")
    ap.add_argument("--n", type=int_list, help="replace every family's sequence lengths")
    ap.add_argument("--batch", type=int_list, help="replace every family's batch sizes")
    ap.add_argument("--threads", type=int_list, default=[1, 2], help="thread counts (default 1,2)")
    ap.add_argument("--precision", type=str_list, default=["f32"], help="longrun precisions (default f32)")
    ap.add_argument("--runners", type=str_list, default=PEER_RUNNERS,
                    help="peer runners (default %s)" % ",".join(PEER_RUNNERS))
    ap.add_argument("--repeat", type=int, default=7, help="timed calls (default 7)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls before them (default 2)")
    ap.add_argument("--quick", action="store_true", help="repeat 3, warm-up 1: a smoke run, not a measurement")
    ap.add_argument("--seed", type=int, default=1, help="seed of the ids (default 1)")
    ap.add_argument("--json", metavar="FILE", help="one JSON line per (case, runner, threads)")
    ap.add_argument("--cache", default=os.path.join(REPO, "build", ".cache", "peers"),
                    help="where the exports are kept (default build/.cache/peers)")
    ap.add_argument("--minilm-dir", help="all-MiniLM-L6-v2 directory (default: tools/dev/fetch_minilm.sh)")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.warmup = 3, 1
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    unknown = [r for r in args.runners if r not in PEER_RUNNERS]
    if unknown:
        ap.error("--runners: unknown %s (known: %s)" % (",".join(unknown), ",".join(PEER_RUNNERS)))
    if "f32" not in args.precision:
        args.precision = ["f32"] + args.precision  # the reference of every comparison
    try:
        cases = select_cases(args)
    except ValueError as e:
        ap.error(str(e))

    import longrun

    prov = provenance()
    log("peers: commit %s, %s [%s], %s" % (prov["commit"], prov["cpu"], " ".join(prov["isa_flags"]),
                                          ", ".join("%s %s" % kv for kv in prov["versions"].items())))
    out = open(args.json, "w") if args.json else None
    families, rows, failed = {}, [], False
    runners = ["longrun-" + p for p in args.precision] + args.runners
    for case, family, n, batch in cases:
        if family not in families:
            try:
                families[family] = prepare_family(family, args, prov["versions"])
            except Exception as e:  # the whole family is unavailable: one row says why
                families[family] = e
        paths = families[family]
        for threads in args.threads:
            base = {"case": case, "family": family, "n": n, "batch": batch, "threads": threads,
                    "warmup": args.warmup, "repeat": args.repeat}
            if isinstance(paths, Exception):
                row = dict(base, runner=None, status="error", message="%s: %s" % (type(paths).__name__, paths))
                rows.append(row)
                failed = True
                if out:
                    out.write(json.dumps(dict(row, **prov)) + "\n")
                continue
            ids = case_ids(paths["hf"], n, batch, args.seed)
            reference, reference_ms = None, None
            for name in runners:
                row = dict(base, runner=name)
                if name.startswith("longrun-"):
                    row.update(engine="longrun", precision=name[len("longrun-"):])
                log("peers: %s threads %d %s" % (case, threads, name))
                call = None
                try:
                    call, info = make_runner(name, paths, threads, ids)
                    row.update(info)
                    y = call(ids)
                    if name == "longrun-f32":
                        reference = np.array(y, dtype=np.float32, copy=True)
                    if reference is not None:
                        row["max_abs_err"], row["rel_err"] = errors(y, reference)
                        cosines = embedding_cosines(y, reference)
                        row["emb_cos_mean"], row["emb_cos_min"] = float(np.mean(cosines)), float(np.min(cosines))
                        row["check"] = check(row.get("engine"), row.get("precision"), row["rel_err"], cosines)
                    row.update(timed(call, ids, args.warmup, args.repeat))
                    row["status"] = "ok"
                    if name == "longrun-f32":
                        reference_ms = row["median_ms"]
                    if reference_ms:
                        row["ratio_vs_longrun_f32"] = row["median_ms"] / reference_ms
                except longrun.UnsupportedError as e:
                    row.update(status="unsupported", message=str(e))
                except Exception as e:
                    row.update(status="error", message="%s: %s" % (type(e).__name__, e))
                    failed = True
                call = None
                gc.collect()
                rows.append(row)
                if out:
                    out.write(json.dumps(dict(row, **prov)) + "\n")
                    out.flush()
    if out:
        out.close()

    print("peers: %s, %s; warm-up %d, repeat %d; ratio = runner ms / longrun-f32 ms (> 1: longrun f32 is faster)"
          % (prov["cpu"], prov["commit"], args.warmup, args.repeat))
    head = ("case", "thr", "runner", "prec", "median ms", "p90 ms", "ratio", "max abs err", "rel err", "emb cos",
            "note")
    table = [head]
    for r in rows:
        note = r.get("message", "") if r.get("status") != "ok" else ("MISMATCH" if r.get("check") == "mismatch" else "")
        table.append((r["case"], str(r["threads"]), r.get("runner") or "-", r.get("precision", "-"),
                      fmt(r.get("median_ms"), ".2f"), fmt(r.get("p90_ms"), ".2f"),
                      fmt(r.get("ratio_vs_longrun_f32"), ".2f"), fmt(r.get("max_abs_err"), ".2e"),
                      fmt(r.get("rel_err"), ".2e"), fmt(r.get("emb_cos_mean"), ".5f"), note[:90]))
    widths = [max(len(t[i]) for t in table) for i in range(len(head) - 1)]
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)) + "  " + t[-1])
    return 1 if failed or any(r.get("check") == "mismatch" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
