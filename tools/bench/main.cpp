// longrun-bench: measures longrun's ops side by side with peers, and whole models side by side
// with their baselines, in the same run. This file is the command line; ops_command.cpp runs
// the op benchmarks, models_command.cpp the model benchmarks, pool_command.cpp the thread
// pool's wake-up after idle time.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "longrun/ops/attrs.h"
#include "longrun/thread_pool.h"
#include "machine_check.h"
#include "models_command.h"
#include "op_cases.h"
#include "ops_command.h"
#include "pool_command.h"
#include "provenance.h"
#include "tokenizer_command.h"

namespace {

using longrun::bench::OpsOptions;

void usage(std::FILE* f) {
  std::fputs(
      "usage: longrun-bench ops [options]\n"
      "\n"
      "Runs each op on model-shaped inputs (width 512, 8 heads of 64, sequence length N) and\n"
      "prints one table row per (case, threads, isa, precision): median wall time of the\n"
      "backend's run (graph build, planning and prepare are not timed), GFLOP/s where the flop\n"
      "count is meaningful (the case's counts, the same at every precision), GB/s (bytes read\n"
      "+ written once each over the median time), and each peer measured in the same run with\n"
      "the same thread count (ratio = peer ms / longrun ms, > 1: longrun is faster).\n"
      "\n"
      "options (lists are comma-separated):\n"
      "  --backend NAME     cpu (default), reference or cuda\n"
      "  --isa LIST         cpu only: scalar, avx2, avx512 (default: the best this machine has)\n"
      "  --threads LIST     thread counts, e.g. 1,2 (default 1; 0 = all hardware threads)\n"
      "  --cpus LIST        cpu only: pin our pool's threads to these CPUs (the calling thread\n"
      "                     takes the first); the peers' threads are not pinned\n"
      "  --spin-us S        cpu only: our pool's workers busy-wait S us (0 .. 1000000) after\n"
      "                     each parallel section instead of sleeping (SessionOptions::spin_us;\n"
      "                     default 0); the peers keep their own policies\n"
      "  --no-auto-affinity cpu only: without --cpus, never pin our pool's threads (by default a\n"
      "                     pool of as many threads as allowed CPUs pins each call's caller to its\n"
      "                     CPU and the workers to the others: SessionOptions::auto_affinity)\n"
      "  --precision LIST   session precisions f32, bf16, int8 (default f32): SessionOptions::\n"
      "                     precision (docs/usage.md#precision), run in that order. A case runs\n"
      "                     once per listed precision its op uses (below: matmul's x*W^T cases\n"
      "                     take bf16 and int8, sparse_attention's f32-K/V cases bf16, their shape\n"
      "                     then ending in kv f32->bf16; every other case f32 only), and at f32\n"
      "                     alone when it uses none of them. With f32 listed, a bf16 or int8 row\n"
      "                     has the extra peer longrun-f32, the same case's f32 run on the same\n"
      "                     engine, so its ratio is the speedup over f32. A precision the backend\n"
      "                     or ISA does not implement (cuda, --isa scalar) gives skipped rows with\n"
      "                     its message\n"
      "  --op LIST          ops to run (default: all listed below)\n"
      "  --n LIST           sequence lengths N, overriding every op's defaults\n"
      "  --shape TEXT       only the cases whose shape (as printed) contains TEXT, e.g. ^T\n"
      "  --sparse-keys K    sparse_attention draws each query's keys from the first K key\n"
      "                     rows (k <= K <= N) instead of all N: rows that stay in cache, a\n"
      "                     ceiling for the random case (its shape then ends in keys<K)\n"
      "  --repeat R         timed runs per measurement, median reported (default 7, min 5)\n"
      "  --warmup W         untimed runs first (default 2)\n"
      "  --json FILE|-      also write one JSON object per line (- = stdout; the table then\n"
      "                     goes to stderr). Fields: op, shape, n, backend, isa, threads, warmup,\n"
      "                     repeat, precision, median_ms, min_ms, max_ms, flops, gflops, bytes,\n"
      "                     gbps, and with a peer: peer, peer_median_ms, ratio (one line per peer);\n"
      "                     a failed case has error instead of timings, an unsupported one skipped;\n"
      "                     every line ends with the provenance (below)\n"
      "  --paired           also pair ours with each peer round by round: R rounds (R = --repeat)\n"
      "                     of W untimed runs and one timed run of ours, then the same of the\n"
      "                     peer (W = --warmup, at least 1); the table's last column and the JSON\n"
      "                     fields paired_ratio, _min, _max and paired_rounds give those R\n"
      "                     ratios' median, min and max. A slowdown longer than a round falls on\n"
      "                     both sides of its ratio. Adds 2 R (W + 1) runs per peer, and 250 ms\n"
      "                     after each run of a multi-threaded external peer (its threads idle)\n"
      "  --quick            each op's smallest default N (the --quick N below), repeat 5,\n"
      "                     warmup 1 (explicit --n/--repeat/--warmup still win)\n"
      "  --list             print the selected cases and exit\n"
      "  -h, --help         this text\n"
      "\n"
      "ops and their cases:\n",
      f);
  for (const std::string& line : longrun::bench::describe_cases()) std::fprintf(f, "  %s\n", line.c_str());
  std::fputs(
      "\n"
      "Peers openblas, onednn and fftw exist only when longrun-bench was built with them\n"
      "(CMake LONGRUN_BENCH_PEERS=AUTO|ON|OFF); the table's header lists those compiled in.\n"
      "Exit status: 0, 1 when a case failed, 2 on a usage error.\n"
      "Before and after the cases, ops runs the machine check of `longrun-bench machine` (21\n"
      "rounds) and prints its medians under the title and at the end; with --json each probe is\n"
      "also a JSON line {probe, when: start|end, isa, rounds, unit, min, median, max, threads}.\n"
      "Provenance, the last fields of every JSON line: commit (git describe of the source tree\n"
      "at build time, \"unknown\" outside git), cpu (model name), cpu_isa (the best ISA the cpu\n"
      "backend runs here), compiler, build_type, date (UTC start of the run, ISO 8601).\n"
      "Whole models: longrun-bench models --help. Thread-pool wake-up: longrun-bench pool --help.\n"
      "Machine state: longrun-bench machine --help. Tokenizer throughput: longrun-bench tokenizer --help.\n",
      f);
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "longrun-bench: %s (see longrun-bench ops|models|pool|machine|tokenizer --help)\n",
               message.c_str());
  std::exit(2);
}

std::vector<std::string> split(std::string_view flag, std::string_view s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string_view part = s.substr(start, comma == std::string_view::npos ? s.npos : comma - start);
    if (part.empty()) usage_error(std::string(flag) + ": empty item in '" + std::string(s) + "'");
    parts.emplace_back(part);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

int64_t integer(std::string_view flag, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
    usage_error(std::string(flag) + ": '" + s + "' is not an integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  return v;
}

// A --json value: a file name, or - for stdout.
std::string json_path(const std::string& v) {
  if (v.empty()) usage_error("--json: empty file name (use - for stdout)");
  return v;
}

// A --threads value: 0 means all hardware threads, resolved here so that peers get the same
// number.
int thread_count(std::string_view flag, const std::string& s) {
  const int n = int(integer(flag, s, 0, 1024));
  return n > 0 ? n : std::max(1, int(std::thread::hardware_concurrency()));
}

// The pool flags of ops, models and pool (--cpus, --spin-us, --no-auto-affinity) into their
// options; false when `a` is none of them.
template <class Value>
bool pool_flag(const std::string& a, Value& value, std::vector<int>& cpus, int& spin_us,
               bool& auto_affinity) {
  if (a == "--cpus") {
    for (const std::string& c : split(a, value())) cpus.push_back(int(integer(a, c, 0, 1 << 16)));
  } else if (a == "--spin-us") {
    spin_us = int(integer(a, value(), 0, longrun::kMaxSpinUs));
  } else if (a == "--no-auto-affinity") {
    auto_affinity = false;
  } else {
    return false;
  }
  return true;
}

// An --isa name: scalar, avx2 or avx512 (a usage error otherwise).
const std::string& isa_name(const std::string& isa) {
  if (isa != "scalar" && isa != "avx2" && isa != "avx512")
    usage_error("--isa: unknown ISA '" + isa + "' (scalar, avx2 or avx512)");
  return isa;
}

// --backend and --threads of ops and models; false when `a` is neither.
template <class Value>
bool engine_flag(const std::string& a, Value& value, std::string& backend, std::vector<int>& threads) {
  if (a == "--backend") {
    backend = value();
    if (backend != "cpu" && backend != "reference" && backend != "cuda")
      usage_error("--backend: unknown backend '" + backend + "' (cpu, reference or cuda)");
  } else if (a == "--threads") {
    threads.clear();
    for (const std::string& t : split(a, value())) threads.push_back(thread_count(a, t));
  } else {
    return false;
  }
  return true;
}

// Walks the arguments after the command: -h / --help prints `usage` to stdout and exits 0;
// every other argument goes to on(flag, value), where value() takes the next argument as the
// flag's value (a usage error when there is none).
template <class On>
void for_each_flag(int argc, char** argv, void (*usage)(std::FILE*), On on) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    }
    on(a, value);
  }
}

OpsOptions parse_ops(int argc, char** argv) {
  OpsOptions o;
  bool repeat_set = false, warmup_set = false, quick = false;
  for_each_flag(argc, argv, &usage, [&](const std::string& a, auto& value) {
    if (engine_flag(a, value, o.backend, o.threads) ||
        pool_flag(a, value, o.cpus, o.spin_us, o.auto_affinity))
      return;
    if (a == "--isa") {
      o.isas = split(a, value());
      for (const std::string& isa : o.isas) isa_name(isa);
    } else if (a == "--op") {
      const std::vector<std::string> known = longrun::bench::bench_ops();
      for (const std::string& op : split(a, value())) {
        bool in_op_list = false;
        for (int k = 0; k < longrun::kNumOps; ++k) in_op_list |= longrun::op_name(longrun::OpKind(k)) == op;
        if (!in_op_list) usage_error("--op: unknown op '" + op + "'");
        if (std::find(known.begin(), known.end(), op) == known.end()) {
          std::string list;
          for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
          usage_error("--op: no bench case for '" + op + "' (ops: " + list + ")");
        }
        o.cases.ops.push_back(op);
      }
    } else if (a == "--precision") {
      std::vector<longrun::Precision> listed;
      for (const std::string& v : split(a, value())) {
        const auto p = longrun::parse_precision(v);
        if (!p) usage_error("--precision: unknown precision '" + v + "' (f32, bf16 or int8)");
        listed.push_back(*p);
      }
      o.precisions.clear();  // in f32, bf16, int8 order: f32 runs first, the others' peer
      for (const longrun::Precision p :
           {longrun::Precision::f32, longrun::Precision::bf16, longrun::Precision::int8})
        if (std::find(listed.begin(), listed.end(), p) != listed.end()) o.precisions.push_back(p);
    } else if (a == "--n") {
      for (const std::string& n : split(a, value())) o.cases.ns.push_back(integer(a, n, 1, 1 << 20));
    } else if (a == "--shape") {
      o.cases.shape = value();
      if (o.cases.shape.empty()) usage_error("--shape: empty text");
    } else if (a == "--sparse-keys") {
      o.cases.sparse_keys = integer(a, value(), 1, 1 << 20);
    } else if (a == "--repeat") {
      o.repeat = int(integer(a, value(), 5, 100000));
      repeat_set = true;
    } else if (a == "--warmup") {
      o.warmup = int(integer(a, value(), 0, 100000));
      warmup_set = true;
    } else if (a == "--json") {
      o.json = json_path(value());
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--paired") {
      o.paired = true;
    } else if (a == "--list") {
      o.list = true;
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  });
  if (o.backend != "cpu" && !(o.isas.size() == 1 && o.isas[0].empty()))
    usage_error("--isa: applies only to --backend cpu");
  if (o.backend != "cpu" && !o.cpus.empty()) usage_error("--cpus: applies only to --backend cpu");
  if (o.backend != "cpu" && o.spin_us != 0) usage_error("--spin-us: applies only to --backend cpu");
  if (quick) {
    o.cases.quick = true;
    if (!repeat_set) o.repeat = 5;
    if (!warmup_set) o.warmup = 1;
  }
  return o;
}

void models_usage(std::FILE* f) {
  std::fputs(
      "usage: longrun-bench models [options]\n"
      "\n"
      "Runs whole-model inference (input_ids [B, N]; encoder-decoders also decoder_input_ids\n"
      "[B, N]) of the registered families with random weights made from each family's parameter\n"
      "table (deterministic seed; no checkpoint), and prints one row per (model, N, threads):\n"
      "median wall time of the backend's run (graph build, planning, prepare untimed), tokens/s =\n"
      "B*N / median, the planned arena against the planner's lower bound (peak live bytes), the\n"
      "process's peak resident memory during the runs against weights + arena + inputs/outputs\n"
      "+ 64 MiB, and the model's baseline preset measured in the same run at the same N and\n"
      "threads (ratio = baseline ms / model ms, > 1: the model is faster). Arch \"attention\"\n"
      "(attn-* presets) times one layer's attention alone on given q, k, v. A host-memory case\n"
      "whose planned arena, outputs, workspaces and weight copies exceed MemAvailable less 256 MiB\n"
      "is skipped with that reason before anything is allocated.\n"
      "\n"
      "options (lists are comma-separated):\n"
      "  --backend NAME     cpu (default), reference or cuda\n"
      "  --isa ISA          cpu only: scalar, avx2 or avx512 (default: the best this machine has)\n"
      "  --threads LIST     thread counts (default 1; 0 = all hardware threads)\n"
      "  --cpus LIST        cpu only: pin the pool's threads to these CPUs (BackendOptions::affinity)\n"
      "  --spin-us S        cpu only: the pool's workers busy-wait S us (0 .. 1000000) after each\n"
      "                     parallel section instead of sleeping (SessionOptions::spin_us)\n"
      "  --no-auto-affinity cpu only: without --cpus, never pin the pool's threads\n"
      "                     (SessionOptions::auto_affinity)\n"
      "  --precision P      f32 (default), bf16 or int8: the number format of every run, the\n"
      "                     baselines' included (SessionOptions::precision, docs/usage.md#precision;\n"
      "                     int8: the cpu backend's linear layers on the int8 GEMM, AVX2 and up).\n"
      "                     A precision the backend or ISA does not implement is a usage error\n"
      "                     with the backend's message. Not with --pytorch (its peer runs f32)\n"
      "  --preset LIST      presets to run (default: all below); a preset's baseline runs too\n"
      "  --arch A --config JSON\n"
      "                     benchmark any registered arch with this longrun.config instead\n"
      "  --n LIST           sequence lengths, overriding the presets' (--arch default: 512,1024)\n"
      "  --batch B          batch size (default 1)\n"
      "  --repeat R         timed runs, median reported (default 5, min 5; --scale: 3, min 1)\n"
      "  --warmup W         untimed runs first (default 1)\n"
      "  --seed S           weight and id seed (default 1)\n"
      "  --json FILE|-      also write one JSON object per line (- = stdout; the table then goes to\n"
      "                     stderr). Fields: model, arch, shape, n, batch, backend, isa, threads,\n"
      "                     warmup, repeat, precision, median_ms, min_ms, max_ms, tokens_per_s, "
      "arena_bytes,\n"
      "                     peak_live_bytes, weight_bytes, io_bytes, workspace_bytes,\n"
      "                     weight_copy_bytes, arena_ratio, arena_ok, peak_rss_bytes,\n"
      "                     memory_bound_bytes, memory_ok, sweep (--scale), and with a baseline:\n"
      "                     peer, peer_median_ms, ratio; a failed case has error instead of timings;\n"
      "                     then the provenance: commit, cpu, cpu_isa, compiler, build_type, date\n"
      "  --plot FILE.svg    write a self-contained SVG line plot of median ms vs N, one line per\n"
      "                     model (SVG only; a name ending in .png is a usage error)\n"
      "  --show-output      print the first values of every output after each model's row\n"
      "  --pytorch          after longrun's rows, time eager PyTorch on the --save-models files\n"
      "                     (tools/bench/pytorch_models.py: same weights, ids, N, threads; python\n"
      "                     $LONGRUN_PYTHON or /usr/bin/python3): one more row per model, N and\n"
      "                     threads with peer pytorch-cpu, ratio = PyTorch ms / longrun ms\n"
      "  --save-models DIR  also write each model file (native safetensors) to DIR, e.g. for\n"
      "                     tools/bench/pytorch_models.py (same weights in eager PyTorch)\n"
      "  --scale            the scaling sweep: each D 512 family and its baseline at N = 4096,\n"
      "                     8192, 16384, 32768, 65536 (every length field of the config = N; --n\n"
      "                     overrides the lengths, --preset picks among --scale --list); above\n"
      "                     N = 8192 the runs halve per doubling of N (at least 1) with no\n"
      "                     warm-up; progress lines on stderr; rows carry \"sweep\":\"scale\"\n"
      "  --max-n N          with --scale: only lengths up to N\n"
      "  --no-baseline      with --preset: run the presets named without their baselines (no\n"
      "                     ratio), e.g. one family of --scale at N = 65536\n"
      "  --quick            N = 128,256 (unless --n): a smoke run, not a measurement\n"
      "  --list             print the selected models and exit\n"
      "  -h, --help         this text\n"
      "\n"
      "presets:\n",
      f);
  for (const std::string& line : longrun::bench::describe_presets()) std::fprintf(f, "  %s\n", line.c_str());
  std::fputs("\nExit status: 0, 1 when a case failed, 2 on a usage error.\n", f);
}

longrun::bench::ModelsOptions parse_models(int argc, char** argv) {
  longrun::bench::ModelsOptions o;
  bool config_set = false, repeat_set = false;
  for_each_flag(argc, argv, &models_usage, [&](const std::string& a, auto& value) {
    if (engine_flag(a, value, o.backend, o.threads) ||
        pool_flag(a, value, o.cpus, o.spin_us, o.auto_affinity))
      return;
    if (a == "--isa") {
      o.isa = isa_name(value());
    } else if (a == "--precision") {
      const std::string v = value();
      const auto p = longrun::parse_precision(v);
      if (!p) usage_error("--precision: unknown precision '" + v + "' (f32, bf16 or int8)");
      o.precision = *p;
    } else if (a == "--preset") {
      o.presets = split(a, value());
    } else if (a == "--arch") {
      o.arch = value();
    } else if (a == "--config") {
      o.config = value();
      config_set = true;
    } else if (a == "--n") {
      for (const std::string& n : split(a, value())) o.ns.push_back(integer(a, n, 1, 1 << 24));
    } else if (a == "--batch") {
      o.batch = integer(a, value(), 1, 1 << 16);
    } else if (a == "--repeat") {
      o.repeat = int(integer(a, value(), 1, 100000));  // at least 5 without --scale (below)
      repeat_set = true;
    } else if (a == "--warmup") {
      o.warmup = int(integer(a, value(), 0, 100000));
    } else if (a == "--seed") {
      o.seed = uint32_t(integer(a, value(), 0, 0xFFFFFFFFll));
    } else if (a == "--scale") {
      o.scale = true;
    } else if (a == "--max-n") {
      o.max_n = integer(a, value(), 1, 1 << 24);
    } else if (a == "--no-baseline") {
      o.no_baseline = true;
    } else if (a == "--json") {
      o.json = json_path(value());
    } else if (a == "--plot") {
      o.plot = value();
      if (o.plot.empty()) usage_error("--plot: empty file name");
      if (o.plot.size() >= 4 && o.plot.compare(o.plot.size() - 4, 4, ".png") == 0)
        usage_error("--plot: writes SVG only; name the file FILE.svg");
    } else if (a == "--save-models") {
      o.save_models = value();
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--show-output") {
      o.show_output = true;
    } else if (a == "--pytorch") {
      o.pytorch = true;
    } else if (a == "--list") {
      o.list = true;
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  });
  if (!o.isa.empty() && o.backend != "cpu") usage_error("--isa: applies only to --backend cpu");
  if (!o.cpus.empty() && o.backend != "cpu") usage_error("--cpus: applies only to --backend cpu");
  if (o.spin_us != 0 && o.backend != "cpu") usage_error("--spin-us: applies only to --backend cpu");
  if (o.arch.empty() != !config_set) usage_error("--arch and --config go together");
  if (o.scale && !o.arch.empty()) usage_error("--scale: not with --arch (the sweep runs its presets)");
  if (o.scale && o.quick) usage_error("--scale: not with --quick (--max-n or --n for short lengths)");
  if (o.max_n > 0 && !o.scale) usage_error("--max-n: only with --scale");
  if (o.no_baseline && o.presets.empty()) usage_error("--no-baseline: only with --preset");
  if (o.scale && o.pytorch) usage_error("--pytorch: not with --scale (one model file per length)");
  if (!o.scale && o.repeat < 5) usage_error("--repeat: at least 5 (1 with --scale)");
  if (o.scale && !repeat_set) o.repeat = 3;
  if (!o.arch.empty() && !o.presets.empty()) usage_error("--preset: not with --arch (one or the other)");
  if (o.pytorch && o.precision != longrun::Precision::f32)
    usage_error("--pytorch: only at --precision f32 (the PyTorch peer runs f32)");
  if (o.pytorch && o.save_models.empty())
    usage_error("--pytorch needs --save-models DIR (the files it times)");
  return o;
}

void pool_usage(std::FILE* f) {
  std::fputs(
      "usage: longrun-bench pool [options]\n"
      "\n"
      "Measures how soon the thread pool's workers take part in a parallel_for after the pool\n"
      "has been idle: for each idle gap, R calls each preceded by a sleep of the gap, each call\n"
      "a parallel_for over 4 x threads chunks that busy-wait C us. Prints per gap the median\n"
      "wall time of a call against the ideal (all threads from the start), the median number\n"
      "of threads that ran a chunk, and the p50 / p90 join latency (when the last thread\n"
      "started its first chunk; calls where a thread never ran one count as missed), and in how\n"
      "many calls another thread ran a chunk on a CPU the calling thread ran one on (stacked:\n"
      "they shared that CPU). A short op that follows idle time runs at this pool's speed only\n"
      "once every thread has joined, each on its own CPU.\n"
      "\n"
      "options (lists are comma-separated):\n"
      "  --threads T        pool threads (default 2; 0 = all hardware threads, or as many as\n"
      "                     --cpus lists)\n"
      "  --cpus LIST        pin the pool's threads to these CPUs (the calling thread takes the\n"
      "                     first; oneTBB pins a worker while it is in the pool's arena)\n"
      "  --gaps LIST        idle gaps in microseconds (default 0,100,1000,5000)\n"
      "  --rounds R         calls per gap (default 101, min 5)\n"
      "  --chunk-us C       busy time per chunk in microseconds (default 50)\n"
      "  --spin-us S        keep the workers spinning S us after each call (ThreadPoolOptions::\n"
      "                     spin_us; default 0: oneTBB lets them sleep)\n"
      "  --no-auto-affinity without --cpus, never pin (by default a pool of as many threads as\n"
      "                     allowed CPUs pins each call's caller to its CPU and the workers to the\n"
      "                     others: ThreadPoolOptions::auto_affinity)\n"
      "  --baseline         also, per gap, R wake-ups of one plain thread blocked on a condition\n"
      "                     variable after the same sleep, the caller busy for the ideal time:\n"
      "                     p50 / p90 wake latency and how many woke on the caller's CPU (the\n"
      "                     floor for any pool's sleeping worker on this machine)\n"
      "  --json FILE|-      also write one JSON object per gap (- = stdout; the table then goes\n"
      "                     to stderr). Fields: gap_us, threads, chunks, chunk_us, rounds,\n"
      "                     median_ms, ideal_ms, threads_used, join_p50_us, join_p90_us (null\n"
      "                     when every call missed), missed, stacked; with --baseline also\n"
      "                     cv_wake_p50_us, cv_wake_p90_us, cv_stacked; then the provenance:\n"
      "                     commit, cpu, cpu_isa, compiler, build_type, date\n"
      "  -h, --help         this text\n"
      "\n"
      "Exit status: 0, 2 on a usage error.\n",
      f);
}

longrun::bench::PoolOptions parse_pool(int argc, char** argv) {
  longrun::bench::PoolOptions o;
  for_each_flag(argc, argv, &pool_usage, [&](const std::string& a, auto& value) {
    if (pool_flag(a, value, o.cpus, o.spin_us, o.auto_affinity)) return;
    if (a == "--threads") {
      o.threads = int(integer(a, value(), 0, 1024));  // 0: resolved by make_thread_pool
    } else if (a == "--gaps") {
      o.gaps_us.clear();
      for (const std::string& g : split(a, value())) o.gaps_us.push_back(integer(a, g, 0, 10000000));
    } else if (a == "--rounds") {
      o.rounds = int(integer(a, value(), 5, 100000));
    } else if (a == "--chunk-us") {
      o.chunk_us = int(integer(a, value(), 1, 1000000));
    } else if (a == "--baseline") {
      o.baseline = true;
    } else if (a == "--json") {
      o.json = json_path(value());
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  });
  return o;
}

void machine_usage(std::FILE* f) {
  std::fputs(
      "usage: longrun-bench machine [options]\n"
      "\n"
      "Says how much of this core a benchmark run would get, by five short probes timed in R\n"
      "rounds (all five per round): clock (a dependent FMA chain, 4 cycles per FMA, in GHz), fma\n"
      "(12 independent vector FMA chains at the best ISA, flops per cycle of that clock),\n"
      "row_gather (sparse attention's weighted sum of 64-float rows picked at random from 16 KiB\n"
      "in L1, cycles per row), memcpy (8 MiB, GB/s read + write) and store_copy (the same copy\n"
      "by ordinary vector stores, which read each line before writing it, as an op's kernel\n"
      "does). Prints min / median / max of each. The bounds on a core with two 512-bit FMA\n"
      "pipes are fma 64 and row_gather 2; a shared or descheduled core stays far from them or\n"
      "shows a wide spread.\n"
      "\n"
      "options:\n"
      "  --rounds R         rounds (default 101, min 5)\n"
      "  --json FILE|-      also write one JSON object per probe (- = stdout; the table then goes\n"
      "                     to stderr). Fields: probe, when (\"machine\"), isa, rounds, unit, min,\n"
      "                     median, max, threads (1); then the provenance: commit, cpu, cpu_isa,\n"
      "                     compiler, build_type, date\n"
      "  -h, --help         this text\n"
      "\n"
      "Without AVX2 and FMA there are no probe kernels: it says so and exits 0.\n"
      "Exit status: 0, 2 on a usage error.\n",
      f);
}

longrun::bench::MachineOptions parse_machine(int argc, char** argv) {
  longrun::bench::MachineOptions o;
  for_each_flag(argc, argv, &machine_usage, [&](const std::string& a, auto& value) {
    if (a == "--rounds") {
      o.rounds = int(integer(a, value(), 5, 100000));
    } else if (a == "--json") {
      o.json = json_path(value());
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  });
  return o;
}

void tokenizer_usage(std::FILE* f) {
  std::fputs(
      "usage: longrun-bench tokenizer [options]\n"
      "\n"
      "Measures Tokenizer::encode on one thread: each tokenizer encodes the whole text as one\n"
      "string (UTF-8 decoding, normalisation, pre-tokenisation and the model, special tokens\n"
      "added), W untimed then R timed runs, and prints the median time, MB/s of text (MB = 10^6\n"
      "bytes) and tokens/s.\n"
      "\n"
      "options (lists are comma-separated):\n"
      "  --tokenizer LIST   Hugging Face tokenizer directories or tokenizer.json files (default:\n"
      "                     tests/golden/tokenizer/bert, BERT uncased WordPiece with 30522\n"
      "                     tokens, and tests/golden/tokenizer/bpe, a small byte-level BPE, of the\n"
      "                     source tree this was built from)\n"
      "  --text FILE        UTF-8 text to encode (default: tests/golden/tokenizer/bpe_corpus.txt,\n"
      "                     English prose), repeated whole and cut to --mib\n"
      "  --mib M            size of the encoded text in MiB (default 4; 0.001 .. 1024)\n"
      "  --repeat R         timed runs, median reported (default 5)\n"
      "  --warmup W         untimed runs first (default 1)\n"
      "  --json FILE|-      also write one JSON object per tokenizer (- = stdout; the table then\n"
      "                     goes to stderr). Fields: tokenizer, model (wordpiece|byte_level_bpe),\n"
      "                     description, text, bytes, threads (1), warmup, repeat, tokens,\n"
      "                     median_ms, min_ms, max_ms, mb_per_s, tokens_per_s (a failure: error\n"
      "                     instead of the timings); then the provenance: commit, cpu, cpu_isa,\n"
      "                     compiler, build_type, date\n"
      "  -h, --help         this text\n"
      "\n"
      "Exit status: 0, 1 when a tokenizer or the text cannot be read or encoded, 2 on a usage error.\n",
      f);
}

longrun::bench::TokenizerOptions parse_tokenizer(int argc, char** argv) {
  longrun::bench::TokenizerOptions o;
  for_each_flag(argc, argv, &tokenizer_usage, [&](const std::string& a, auto& value) {
    if (a == "--tokenizer") {
      o.tokenizers = split(a, value());
    } else if (a == "--text") {
      o.text = value();
      if (o.text.empty()) usage_error("--text: empty file name");
    } else if (a == "--mib") {
      const std::string v = value();
      char* end = nullptr;
      o.mib = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.mib >= 0.001 && o.mib <= 1024))
        usage_error("--mib: '" + v + "' is not a number in [0.001, 1024]");
    } else if (a == "--repeat") {
      o.repeat = int(integer(a, value(), 1, 100000));
    } else if (a == "--warmup") {
      o.warmup = int(integer(a, value(), 0, 100000));
    } else if (a == "--json") {
      o.json = json_path(value());
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  });
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  longrun::bench::provenance();  // the run's start time and machine facts, for every JSON line
  if (cmd == "models") return longrun::bench::run_models(parse_models(argc, argv));
  if (cmd == "pool") return longrun::bench::run_pool(parse_pool(argc, argv));
  if (cmd == "machine") return longrun::bench::run_machine(parse_machine(argc, argv));
  if (cmd == "tokenizer") return longrun::bench::run_tokenizer(parse_tokenizer(argc, argv));
  if (cmd != "ops") usage_error("unknown command '" + cmd + "' (ops, models, pool, machine or tokenizer)");
  return longrun::bench::run_ops(parse_ops(argc, argv));
}
