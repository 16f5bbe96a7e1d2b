#include "ops_command.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "graph_run.h"
#include "machine_check.h"
#include "peers.h"
#include "report.h"
#include "timing.h"

namespace longrun::bench {
namespace {

struct Run {
  const OpsOptions& o;
  Reporter& rep;
  int failures = 0;

  Row base_row(const BenchCase& c, const Engine& e) const {
    Row r;
    r.op = c.op;
    r.shape = c.shape;
    r.n = c.n;
    r.backend = e.backend;
    r.isa = e.isa.empty() ? "-" : e.isa;
    r.threads = e.threads;
    r.precision = std::string(precision_name(e.precision));
    r.warmup = o.warmup;
    r.repeat = o.repeat;
    r.flops = c.flops;
    r.bytes = c.bytes;
    return r;
  }

  void fail(Row r, const Status& st) {
    r.skipped = st.code() == StatusCode::unsupported;
    r.error = st.to_string();
    if (!r.skipped) ++failures;
    rep.row(r, false);
  }

  Result<Timing> measure_peer(const PeerFactory& f, const Engine& e) const {
    Result<Timing> t = [&]() -> Result<Timing> {
      LR_ASSIGN_OR_RETURN(PeerRun p, f.make(e));
      return measure(p.run, p.reset, o.warmup, o.repeat);
    }();
    if (f.external) settle_after_external_peer();
    return t;
  }

  // --paired: each peer against ours round by round (measure_paired), one peer alive at a
  // time next to ours. The other side's spinning threads would take a side's cores: ours
  // spin spin_us after a run, an external library's workers until
  // settle_after_external_peer (only where the peer runs more than one thread).
  std::vector<std::optional<PairedRatio>> pair_with_peers(const BenchCase& c, GraphRun& ours,
                                                          const Engine& peer_engine) const {
    std::vector<std::optional<PairedRatio>> out(c.peers.size());
    const auto spin_idle = [&] { std::this_thread::sleep_for(std::chrono::microseconds(o.spin_us)); };
    for (size_t i = 0; i < c.peers.size(); ++i) {
      const PeerFactory& f = c.peers[i];
      const bool settle = f.external && peer_engine.threads > 1;
      Result<PairedRatio> p = [&]() -> Result<PairedRatio> {
        LR_ASSIGN_OR_RETURN(PeerRun peer, f.make(peer_engine));
        return measure_paired([&] { return ours.run(); }, peer.run, peer.reset, o.repeat,
                              std::max(1, o.warmup),
                              o.spin_us > 0 ? std::function<void()>(spin_idle) : nullptr,
                              settle ? std::function<void()>(&settle_after_external_peer) : nullptr,
                              [&] { return ours.last_device_ms(); });
      }();
      if (p.ok())
        out[i] = *p;
      else
        std::fprintf(stderr, "longrun-bench: paired rounds with peer %s of %s %s failed: %s\n",
                     f.name.c_str(), c.op.c_str(), c.shape.c_str(), p.status().to_string().c_str());
    }
    return out;
  }

  // One case on every (threads, isa, precision) engine, with its peers at the same thread
  // count. `precisions`: those to run, f32 first; a later one's rows get the f32 run on the
  // same (threads, isa) as the extra peer longrun-f32 (ratio = f32 ms / this ms).
  void run_case(const BenchCase& c, const std::vector<PrecisionUse>& precisions) {
    for (const int threads : o.threads) {
      // External peers depend only on the thread count: measured once per count.
      std::vector<std::optional<Result<Timing>>> cached(c.peers.size());
      for (const std::string& isa : o.isas) {
        std::optional<Timing> f32_timing;
        for (const PrecisionUse& use : precisions) {
          run_engine(c, Engine{o.backend, isa, threads, o.cpus, o.spin_us, o.auto_affinity, use.precision},
                     use.shape_note, cached, f32_timing);
        }
      }
    }
  }

  // One case on one engine, then its peers. `cached`: the external peers' timings at this
  // thread count; `f32_timing`: this (threads, isa)'s f32 run, set here when `e` is f32.
  void run_engine(const BenchCase& c, const Engine& e, const std::string& shape_note,
                  std::vector<std::optional<Result<Timing>>>& cached, std::optional<Timing>& f32_timing) {
    const int threads = e.threads;
    Row r = base_row(c, e);
    r.shape += shape_note;
    Result<std::unique_ptr<GraphRun>> run = GraphRun::create(c.graph, c.inputs, e);
    if (!run.ok()) {
      fail(r, run.status());
      return;
    }
    const EngineLabel label = engine_label((*run)->backend(), e);
    r.isa = label.isa;
    r.threads = label.threads;
    Result<Timing> t = measure([&] { return (*run)->run(); }, nullptr, o.warmup, o.repeat,
                               [&] { return (*run)->last_device_ms(); });
    // Peers run with the threads the backend really used (the reference backend is serial).
    Engine peer_engine = e;
    peer_engine.threads = label.threads;
    std::vector<std::optional<PairedRatio>> paired(c.peers.size());
    if (t.ok() && o.paired) paired = pair_with_peers(c, **run, peer_engine);
    run->reset();  // frees the arena before the peers allocate theirs
    if (!t.ok()) {
      fail(r, t.status());
      return;
    }
    r.timing = *t;
    bool printed = false;
    if (e.precision == Precision::f32) {
      f32_timing = *t;
    } else if (f32_timing) {
      Row pr = r;
      pr.peer = PeerResult{"longrun-f32", *f32_timing, std::nullopt};
      rep.row(pr, false);
      printed = true;
    }
    for (size_t i = 0; i < c.peers.size(); ++i) {
      const PeerFactory& f = c.peers[i];
      const bool cache = !f.uses_engine && label.threads == threads;
      std::optional<Result<Timing>> pt;
      if (cache && cached[i]) pt = *cached[i];
      if (!pt) pt = measure_peer(f, peer_engine);
      if (cache) cached[i] = *pt;
      if (!pt->ok()) {
        std::fprintf(stderr, "longrun-bench: peer %s of %s %s failed: %s\n", f.name.c_str(), c.op.c_str(),
                     r.shape.c_str(), pt->status().to_string().c_str());
        continue;
      }
      Row pr = r;
      pr.peer = PeerResult{f.name, **pt, paired[i]};
      rep.row(pr, printed);
      printed = true;
    }
    if (!printed) rep.row(r, false);
  }
};

constexpr int kOpsMachineRounds = 21;  // about 0.1 s on a build VM

std::string title(const OpsOptions& o, const std::string& isas) {
  std::string threads;
  for (int t : o.threads) threads += (threads.empty() ? "" : ",") + std::to_string(t);
  std::string precisions;
  for (Precision p : o.precisions)
    precisions += (precisions.empty() ? "" : ",") + std::string(precision_name(p));
  std::string t = "longrun-bench ops: backend " + o.backend + (isas.empty() ? "" : ", isa " + isas) +
                  ", threads " + threads + pool_settings_text(o.cpus, o.spin_us, o.auto_affinity) +
                  (precisions == "f32" ? "" : ", precision " + precisions) + "; median of " +
                  std::to_string(o.repeat) + " runs after " + std::to_string(o.warmup) +
                  " warm-up runs; ratio = peer ms / longrun ms (> 1: longrun is faster)";
  if (precisions != "f32")
    t += "\n  a case runs at the listed precisions its op uses (f32 alone when none); peer longrun-f32 is"
         "\n  its f32 run on the same engine (ratio = f32 ms / this ms: the speedup over f32)";
  if (o.paired)
    t += "\n  paired: median (min-max) of " + std::to_string(o.repeat) +
         " round-by-round ratios, each round " + std::to_string(std::max(1, o.warmup)) +
         " untimed and one timed run of ours, then of the peer";
  if (o.backend == "cuda")
    t += "\n  cuda times: device events around the nodes (input/output copies excluded)";
  for (const std::string& p : external_peer_descriptions()) t += "\n  peer " + p;
  return t;
}

}  // namespace

int run_ops(const OpsOptions& o) {
  const std::vector<std::string> built = backend_names();
  if (std::find(built.begin(), built.end(), o.backend) == built.end()) {
    std::string list;
    for (const std::string& b : built) list += (list.empty() ? "" : ", ") + b;
    std::fprintf(stderr, "longrun-bench: --backend %s: not built into this longrun (built: %s)\n",
                 o.backend.c_str(), list.c_str());
    return 2;
  }
  // Every engine must be creatable before anything runs: a bad --isa or --cpus is a usage error.
  std::string isas;  // as the backend resolves them ("" = best)
  for (const std::string& isa : o.isas) {
    Result<std::unique_ptr<Backend>> b = make_backend(Engine{o.backend, isa, 1});
    std::string flag = isa.empty() ? "--backend " + o.backend : "--isa " + isa;
    if (b.ok() && !o.cpus.empty()) {
      b = make_backend(Engine{o.backend, isa, 1, o.cpus});
      flag = "--cpus";
    }
    if (!b.ok()) {
      std::fprintf(stderr, "longrun-bench: %s: %s\n", flag.c_str(), b.status().to_string().c_str());
      return 2;
    }
    const EngineLabel label = engine_label(**b, Engine{o.backend, isa, 1});
    if (label.isa != "-") isas += (isas.empty() ? "" : ",") + label.isa;
  }

  const std::vector<CaseSpec> specs = select_cases(o.cases);
  if (specs.empty() && !o.cases.shape.empty()) {
    std::fprintf(stderr, "longrun-bench: --shape %s: no selected case's shape contains it (see --list)\n",
                 o.cases.shape.c_str());
    return 2;
  }
  if (o.list) {
    for (const CaseSpec& s : specs) {
      std::string precisions;
      for (const PrecisionUse& u : s.precisions)
        precisions += (precisions.empty() ? "" : ",") + std::string(precision_name(u.precision));
      std::printf("%-16s %-40s precision %s\n", s.op.c_str(), s.shape.c_str(), precisions.c_str());
    }
    return 0;
  }

  JsonSink json;
  if (!open_json(o.json, &json)) return 2;
  Reporter rep(json.table(), json.file, o.paired);
  // The machine's state beside the numbers (machine_check.h): under the title before the
  // cases, and after them.
  const auto machine_check = [&](const char* when) {
    const MachineCheck m = run_machine_check(kOpsMachineRounds);
    write_machine_check_json(json.file, m, when);
    return std::string("  machine (") + when + "): " + machine_check_summary(m);
  };
  rep.header(title(o, isas) + "\n" + machine_check("start"));

  Run run{o, rep};
  for (const CaseSpec& s : specs) {
    Result<BenchCase> c = s.build();
    if (!c.ok()) {
      BenchCase stub;
      stub.op = s.op;
      stub.shape = s.shape;
      stub.n = s.n;
      run.fail(run.base_row(stub, Engine{o.backend, o.isas.front(), o.threads.front()}), c.status());
      continue;
    }
    // The listed precisions the case's op uses, in its (f32-first) order; f32 alone when none.
    std::vector<PrecisionUse> uses;
    for (const PrecisionUse& u : s.precisions)
      if (std::find(o.precisions.begin(), o.precisions.end(), u.precision) != o.precisions.end())
        uses.push_back(u);
    if (uses.empty()) uses.push_back(PrecisionUse{});
    run.run_case(*c, uses);
  }
  std::fprintf(json.table(), "%s\n", machine_check("end").c_str());
  return run.failures ? 1 : 0;
}

}  // namespace longrun::bench
