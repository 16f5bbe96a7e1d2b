#include "models_command.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "attention_blocks.h"
#include "graph_run.h"
#include "longrun/models/model.h"
#include "model_presets.h"
#include "model_report.h"
#include "process_memory.h"
#include "pytorch_peer.h"
#include "random_model.h"
#include "svg_plot.h"
#include "workload.h"

namespace longrun::bench {
namespace {

// One model to benchmark: a preset, or the ad-hoc --arch/--config model.
struct Job {
  std::string name, arch, config, baseline;
  std::vector<int64_t> ns;
};

std::vector<int64_t> parse_ns(std::string_view list) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    out.push_back(std::stoll(std::string(list.substr(start, comma - start))));
    start = comma + 1;
  }
  return out;
}

// The jobs in run order: the presets' table order, which lists baselines before the
// variants that refer to them; a selected variant pulls in its baseline.
Result<std::vector<Job>> select_jobs(const ModelsOptions& o) {
  std::vector<Job> jobs;
  const std::vector<int64_t> quick_ns = {128, 256};
  if (o.scale && !o.arch.empty())
    return invalid_argument("--scale: not with --arch (the sweep runs its presets)");
  if (!o.arch.empty()) {
    LR_RETURN_IF_ERROR((is_attention_block(o.arch) ? check_attention_config(o.config)
                                                   : model_parameters(o.arch, o.config).status())
                           .with_context("--arch/--config"));
    jobs.push_back({o.arch, o.arch, o.config, "",
                    !o.ns.empty() ? o.ns
                    : o.quick     ? quick_ns
                                  : parse_ns("512,1024")});
    return jobs;
  }
  const std::vector<ModelPreset> presets = o.scale ? scale_presets() : model_presets();
  auto find = [&](std::string_view name) -> const ModelPreset* {
    for (const ModelPreset& p : presets)
      if (p.name == name) return &p;
    return nullptr;
  };
  std::set<std::string, std::less<>> wanted;
  for (const std::string& name : o.presets) {
    const ModelPreset* p = find(name);
    if (p == nullptr)
      return invalid_argument("--preset: unknown " + std::string(o.scale ? "--scale " : "") + "preset '" +
                              name + "'");
    wanted.insert(name);
    if (!p->baseline.empty() && !o.no_baseline) wanted.insert(std::string(p->baseline));
  }
  for (const ModelPreset& p : presets) {
    if (!o.presets.empty() && !wanted.contains(p.name)) continue;
    std::vector<int64_t> ns = !o.ns.empty() ? o.ns : o.quick ? quick_ns : parse_ns(p.ns);
    if (o.max_n > 0) std::erase_if(ns, [&](int64_t n) { return n > o.max_n; });
    jobs.push_back(
        {std::string(p.name), std::string(p.arch), std::string(p.config), std::string(p.baseline), ns});
  }
  return jobs;
}

// [batch, n] i64 ids in [4, vocab - 1) (in [1, vocab - 1) for a vocabulary of 8 or less):
// never a special id -- 0 and 1 are padding in the BERT/LRA and fairseq conventions, 2 and 3
// fairseq's eos and unk -- and never the last id, which some families reserve for CLS. A
// 64-bit LCG from a fixed seed; tools/bench/pytorch_models.py draws the same ids.
BufferPtr random_ids(int64_t count, int64_t vocab, uint32_t seed) {
  auto buf = std::make_shared<HostBuffer>(size_t(count) * sizeof(int64_t));
  auto* ids = reinterpret_cast<int64_t*>(buf->data());
  const int64_t lo = vocab > 8 ? 4 : 1;
  const int64_t range = std::max<int64_t>(1, vocab - 1 - lo);
  uint64_t s = 0x243F6A8885A308D3ull + seed;
  for (int64_t i = 0; i < count; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = lo + int64_t((s >> 33) % uint64_t(range));
  }
  return buf;
}

// Seed offset of decoder_input_ids (the source ids use o.seed + N).
constexpr uint32_t kDecoderSeed = 0x9E37;

// The model's graph at [batch, n] with random ids bound. Encoder-decoders get
// decoder_input_ids [batch, n] too: the decoder runs over a target as long as the source.
Result<Workload> model_workload(const RandomModel& m, int64_t batch, int64_t n, uint32_t seed) {
  const std::vector<std::string> names = m.model->required_inputs();
  std::vector<TensorDesc> descs;
  std::map<std::string, BufferPtr, std::less<>> buffers;
  for (const std::string& name : names) {
    if (name != "input_ids" && name != "decoder_input_ids")
      return unsupported("longrun-bench models feeds input_ids and decoder_input_ids only; arch '" +
                         m.model->arch() + "' requires input '" + name + "'");
    const bool decoder = name == "decoder_input_ids";
    descs.emplace_back(DType::i64, std::vector<int64_t>{batch, n});
    buffers[name] = random_ids(batch * n, decoder ? m.decoder_vocab_size : m.vocab_size,
                               seed + uint32_t(n) + (decoder ? kDecoderSeed : 0));
  }
  Workload w;
  LR_ASSIGN_OR_RETURN(w.graph, m.model->build_graph(names, descs));
  for (const ValueId id : w.graph.inputs()) {
    const Value& v = w.graph.value(id);
    const auto it = buffers.find(v.name);
    if (it == buffers.end()) return internal_error("graph input '" + v.name + "' was not requested");
    w.inputs.push_back(TensorView{v.desc, it->second->data()});
    w.owners.push_back(it->second);
  }
  w.weight_bytes = m.model->weight_bytes();
  return w;
}

// "  -> logits f32 [1,2]: 0.1234 -0.5678 (mean |x| 0.4)": the first values of an output.
std::string output_summary(const std::string& name, const TensorView& t) {
  std::string dims;
  for (const int64_t d : t.desc.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  std::string line = "  -> " + name + " [" + dims + "]";
  if (t.desc.dtype() != DType::f32) return line;
  const auto* x = static_cast<const float*>(t.data);
  const int64_t count = t.desc.numel();
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += std::fabs(double(x[i]));
  line += ":";
  char buf[64];
  for (int64_t i = 0; i < std::min<int64_t>(count, 4); ++i) {
    std::snprintf(buf, sizeof buf, " %.4g", double(x[i]));
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "%s (mean |x| %.4g)", count > 4 ? " ..." : "",
                count ? sum / double(count) : 0.0);
  return line + buf;
}

// Host memory a measurement may take: MemAvailable less a margin for the rest of the process
// (its allocator, the table and JSON streams) and for the machine's other tenants; -1 (no
// limit) where MemAvailable is unknown and for cuda, whose arena is device memory.
constexpr int64_t kMemoryMargin = int64_t(256) << 20;
int64_t host_memory_budget(const std::string& backend) {
  if (backend == "cuda") return -1;
  const int64_t available = available_memory_bytes();
  return available < 0 ? -1 : std::max<int64_t>(0, available - kMemoryMargin);
}

// The sweep's runs at length n: `repeat` halved (rounding up) per doubling of n above
// kScaleFullRepeatN, at least 1, and no warm-up there -- a run at N = 65,536 takes seconds to
// minutes, and what a warm-up run absorbs (first-touch page faults of the arena and the
// outputs, weight packing) happens in the untimed prepare step.
std::pair<int, int> scale_runs(int warmup, int repeat, int64_t n) {
  if (n <= kScaleFullRepeatN) return {warmup, repeat};
  for (int64_t m = n; m > kScaleFullRepeatN && repeat > 1; m /= 2) repeat = (repeat + 1) / 2;
  return {0, repeat};
}

struct Runner {
  const ModelsOptions& o;
  ModelReporter& rep;
  std::string isa_label;
  int total = 0;  // measurements planned (the --scale progress lines)
  int started = 0;
  int failures = 0;
  std::map<std::tuple<std::string, int64_t, int>, Timing> done;    // (model, n, threads) -> timing
  std::map<std::tuple<std::string, int64_t, int>, ModelRow> rows;  // the same, whole rows
  std::vector<PlotSeries> series;

  ModelRow base_row(const Job& job, int64_t n, int threads) const {
    ModelRow r;
    r.model = job.name;
    r.arch = job.arch;
    r.n = n;
    r.batch = o.batch;
    r.shape = n > 0 ? "B=" + std::to_string(o.batch) + " N=" + std::to_string(n) : "-";
    r.backend = o.backend;
    r.isa = isa_label;
    r.threads = threads;
    r.precision = std::string(precision_name(o.precision));
    std::tie(r.warmup, r.repeat) =
        o.scale ? scale_runs(o.warmup, o.repeat, n) : std::pair{o.warmup, o.repeat};
    if (o.scale) r.sweep = "scale";
    return r;
  }

  void fail(ModelRow r, const Status& st) {
    // Unsupported, or more memory than the machine has: a stated skip, not a failure.
    r.skipped = st.code() == StatusCode::unsupported || st.code() == StatusCode::out_of_memory;
    r.error = st.to_string();
    if (!r.skipped) ++failures;
    rep.row(r);
  }

  PlotSeries& series_for(const std::string& label) {
    for (PlotSeries& s : series)
      if (s.label == label) return s;
    series.push_back({label, {}});
    return series.back();
  }

  // The job's model with random weights (its config at length n where it has "@N@" fields);
  // false after reporting a failed row.
  bool load(const Job& job, int64_t n, std::optional<RandomModel>* model) {
    model->reset();  // the previous length's weights go before the next are made
    const bool per_n = job.config.find("@N@") != std::string::npos;
    const std::string file = job.name + (per_n ? "-n" + std::to_string(n) : "") + ".safetensors";
    const std::string save = o.save_models.empty() ? "" : o.save_models + "/" + file;
    Result<RandomModel> m =
        random_model(job.arch, per_n ? config_at_length(job.config, n) : job.config, o.seed, save);
    if (!m.ok()) {
      fail(base_row(job, per_n ? n : 0, o.threads.front()), m.status());
      return false;
    }
    *model = std::move(*m);
    return true;
  }

  void run_job(const Job& job) {
    std::optional<RandomModel> model;
    const bool block = is_attention_block(job.arch);
    const bool per_n = job.config.find("@N@") != std::string::npos;
    if (!block && !per_n && !load(job, 0, &model)) return;
    for (const int64_t n : job.ns) {
      if (!block && per_n && !load(job, n, &model)) {
        started += int(o.threads.size());
        continue;
      }
      Result<Workload> w = model ? model_workload(*model, o.batch, n, o.seed)
                                 : attention_block(job.config, o.batch, n, o.seed + uint32_t(n));
      if (!w.ok()) {
        fail(base_row(job, n, o.threads.front()), w.status());
        continue;
      }
      for (const int threads : o.threads) run_one(job, n, threads, *w, threads == o.threads.front());
    }
  }

  void run_one(const Job& job, int64_t n, int threads, const Workload& w, bool show_output) {
    ModelRow r = base_row(job, n, threads);
    if (o.scale)
      std::fprintf(
          stderr,
          "longrun-bench models --scale: [%d/%d] %s N %lld, %d thread(s): %d run(s) after %d warm-up\n",
          ++started, total, job.name.c_str(), static_cast<long long>(n), threads, r.repeat, r.warmup);
    const Engine engine{o.backend, o.isa, threads, o.cpus, o.spin_us, o.auto_affinity, o.precision};
    Result<std::unique_ptr<GraphRun>> run =
        GraphRun::create(w.graph, w.inputs, engine, host_memory_budget(o.backend));
    if (!run.ok()) {
      fail(r, run.status());
      return;
    }
    const EngineLabel label = engine_label((*run)->backend(), engine);
    r.isa = label.isa;
    r.threads = label.threads;
    r.arena_bytes = (*run)->memory().arena_bytes;
    r.peak_live_bytes = (*run)->memory().peak_live_bytes;
    // The graph's weight values: the model weights it reads and the constants the graph owns
    // (the Combiner's [N, D] sinusoidal table: 128 MiB at N = 65,536), which are resident as
    // much as the weights are; the model's own count where the planner has none.
    r.weight_bytes = std::max(w.weight_bytes, (*run)->memory().weight_bytes_mapped);
    r.io_bytes = (*run)->memory().input_bytes + (*run)->memory().output_bytes;
    r.workspace_bytes = (*run)->memory().workspace_bytes;
    r.weight_copy_bytes = (*run)->memory().weight_bytes_copied;
    // The peak resident set of the process over the warm-up and timed runs (the model, its
    // prepared state and buffers are all resident by now).
    const bool peak_known = reset_peak_rss();
    Result<Timing> t = measure([&] { return (*run)->run(); }, nullptr, r.warmup, r.repeat,
                               [&] { return (*run)->last_device_ms(); });
    r.peak_rss_bytes = peak_known ? peak_rss_bytes() : -1;
    std::vector<std::string> summaries;
    if (t.ok() && o.show_output && show_output)
      for (size_t i = 0; i < (*run)->outputs().size(); ++i)
        summaries.push_back(
            output_summary((*run)->graph().value((*run)->graph().outputs()[i]).name, (*run)->outputs()[i]));
    run->reset();
    if (!t.ok()) {
      fail(r, t.status());
      return;
    }
    r.timing = *t;
    done[{job.name, n, threads}] = *t;
    rows[{job.name, n, threads}] = r;
    if (!job.baseline.empty()) {
      auto it = done.find({job.baseline, n, threads});
      if (it != done.end()) r.peer = PeerResult{job.baseline, it->second};
    }
    rep.row(r);
    for (const std::string& line : summaries) rep.note(line);
    const std::string label_text =
        o.threads.size() > 1 ? job.name + " (" + std::to_string(threads) + "t)" : job.name;
    series_for(label_text).points.emplace_back(double(n), t->median_ms);
  }

  // --pytorch: eager PyTorch on the job's saved file, per thread count; one row per
  // (N, threads) that both measured, the longrun row with PyTorch as its peer.
  void run_pytorch_peer(const Job& job) {
    if (is_attention_block(job.arch)) return;  // no model file
    PytorchRun py = default_pytorch_run();
    py.batch = o.batch, py.warmup = o.warmup, py.repeat = o.repeat, py.seed = o.seed;
    const std::string file = o.save_models + "/" + job.name + ".safetensors";
    for (const int threads : o.threads) {
      const std::string json =
          o.save_models + "/" + job.name + ".pytorch-" + std::to_string(threads) + "t.jsonl";
      Result<std::vector<PytorchTiming>> got = run_pytorch(py, file, job.ns, threads, json);
      if (!got.ok()) {
        fail(base_row(job, 0, threads), got.status());
        continue;
      }
      for (const PytorchTiming& pt : *got) {
        const auto it = rows.find({job.name, pt.n, threads});
        if (it == rows.end()) continue;
        ModelRow r = it->second;
        r.peer = PeerResult{pt.backend, pt.timing};
        rep.row(r);
      }
    }
  }
};

}  // namespace

std::vector<std::string> describe_presets() {
  std::vector<std::string> out;
  for (const ModelPreset& p : model_presets()) {
    std::string line = std::string(p.name) + " [" + std::string(p.arch) + "]";
    if (!p.baseline.empty()) line += " vs " + std::string(p.baseline);
    line += ", N " + std::string(p.ns) + ": " + std::string(p.summary);
    out.push_back(line);
  }
  return out;
}

int run_models(const ModelsOptions& o) {
  const std::vector<std::string> built = backend_names();
  if (std::find(built.begin(), built.end(), o.backend) == built.end()) {
    std::fprintf(stderr, "longrun-bench: --backend %s: not built into this longrun\n", o.backend.c_str());
    return 2;
  }
  Result<std::unique_ptr<Backend>> probe = make_backend(Engine{o.backend, o.isa, 1});
  if (!probe.ok()) {
    std::fprintf(stderr, "longrun-bench: %s: %s\n",
                 o.isa.empty() ? ("--backend " + o.backend).c_str() : ("--isa " + o.isa).c_str(),
                 probe.status().to_string().c_str());
    return 2;
  }
  if (o.precision != Precision::f32) {
    Engine engine{o.backend, o.isa, 1};
    engine.precision = o.precision;
    Result<std::unique_ptr<Backend>> at_precision = make_backend(engine);
    if (!at_precision.ok()) {
      std::fprintf(stderr, "longrun-bench: --precision %s: %s\n",
                   std::string(precision_name(o.precision)).c_str(),
                   at_precision.status().to_string().c_str());
      return 2;
    }
  }
  const std::string isa_label = engine_label(**probe, Engine{o.backend, o.isa, 1}).isa;
  probe->reset();

  Result<std::vector<Job>> jobs = select_jobs(o);
  if (!jobs.ok()) {
    std::fprintf(stderr, "longrun-bench: %s\n", jobs.status().to_string().c_str());
    return 2;
  }
  if (o.list) {
    for (const Job& j : *jobs) {
      std::string ns;
      for (int64_t n : j.ns) ns += (ns.empty() ? "" : ",") + std::to_string(n);
      std::printf("%-24s %-12s N %-20s %s%s\n", j.name.c_str(), j.arch.c_str(), ns.c_str(),
                  j.baseline.empty() ? "" : ("vs " + j.baseline + " ").c_str(), j.config.c_str());
    }
    return 0;
  }

  if (!o.save_models.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.save_models, ec);
    if (ec) {
      std::fprintf(stderr, "longrun-bench: --save-models %s: %s\n", o.save_models.c_str(),
                   ec.message().c_str());
      return 2;
    }
  }
  JsonSink json;
  if (!open_json(o.json, &json)) return 2;
  ModelReporter rep(json.table(), json.file);
  std::string threads;
  for (int t : o.threads) threads += (threads.empty() ? "" : ",") + std::to_string(t);
  const std::string title =
      "longrun-bench models: backend " + o.backend + (isa_label == "-" ? "" : ", isa " + isa_label) +
      (o.precision == Precision::f32 ? "" : ", precision " + std::string(precision_name(o.precision))) +
      ", threads " + threads + pool_settings_text(o.cpus, o.spin_us, o.auto_affinity) + ", batch " +
      std::to_string(o.batch) + "; random weights (seed " + std::to_string(o.seed) + "); median of " +
      std::to_string(o.repeat) + " runs after " + std::to_string(o.warmup) + " warm-up runs" +
      (o.scale ? " (above N = " + std::to_string(kScaleFullRepeatN) +
                     ": runs halved per doubling of N, at least 1, no warm-up)"
               : "") +
      "; ratio = baseline ms / model ms (> 1: the model is faster)" +
      (o.backend == "cuda" ? "\n  cuda times: device events around the nodes (input/output copies excluded)"
                           : "");
  rep.header(title);

  Runner runner{o, rep, isa_label};
  for (const Job& j : *jobs) runner.total += int(j.ns.size() * o.threads.size());
  for (const Job& j : *jobs) runner.run_job(j);
  if (o.pytorch)
    for (const Job& j : *jobs) runner.run_pytorch_peer(j);

  if (!o.plot.empty()) {
    const PlotText text{
        "longrun-bench models: " + o.backend + (isa_label == "-" ? "" : " " + isa_label) +
            (o.precision == Precision::f32 ? "" : " " + std::string(precision_name(o.precision))) +
            ", batch " + std::to_string(o.batch),
        "sequence length N", "median ms per forward pass"};
    const Status st = write_svg_line_plot(o.plot, text, runner.series);
    if (!st.ok()) {
      std::fprintf(stderr, "longrun-bench: %s\n", st.to_string().c_str());
      return 2;
    }
  }
  return runner.failures ? 1 : 0;
}

}  // namespace longrun::bench
