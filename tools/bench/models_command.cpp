#include "models_command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "graph_run.h"
#include "longrun/models/model.h"
#include "model_presets.h"
#include "model_report.h"
#include "random_model.h"
#include "svg_plot.h"

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
  if (!o.arch.empty()) {
    LR_RETURN_IF_ERROR(model_parameters(o.arch, o.config).status().with_context("--arch/--config"));
    jobs.push_back({o.arch, o.arch, o.config, "",
                    !o.ns.empty() ? o.ns
                    : o.quick     ? quick_ns
                                  : parse_ns("512,1024")});
    return jobs;
  }
  std::set<std::string, std::less<>> wanted;
  for (const std::string& name : o.presets) {
    const ModelPreset* p = find_preset(name);
    if (p == nullptr) return invalid_argument("--preset: unknown preset '" + name + "'");
    wanted.insert(name);
    if (!p->baseline.empty()) wanted.insert(std::string(p->baseline));
  }
  for (const ModelPreset& p : model_presets()) {
    if (!o.presets.empty() && !wanted.contains(p.name)) continue;
    jobs.push_back({std::string(p.name), std::string(p.arch), std::string(p.config), std::string(p.baseline),
                    !o.ns.empty() ? o.ns
                    : o.quick     ? quick_ns
                                  : parse_ns(p.ns)});
  }
  return jobs;
}

// [batch, n] i64 ids in [1, vocab - 1) (never 0 = padding, never the last id, which some
// families reserve for CLS), from a fixed seed.
BufferPtr random_ids(int64_t count, int64_t vocab, uint32_t seed) {
  auto buf = std::make_shared<HostBuffer>(size_t(count) * sizeof(int64_t));
  auto* ids = reinterpret_cast<int64_t*>(buf->data());
  const int64_t range = std::max<int64_t>(1, vocab - 2);
  uint64_t s = 0x243F6A8885A308D3ull + seed;
  for (int64_t i = 0; i < count; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = 1 + int64_t((s >> 33) % uint64_t(range));
  }
  return buf;
}

struct Runner {
  const ModelsOptions& o;
  ModelReporter& rep;
  std::string isa_label;
  int failures = 0;
  std::map<std::tuple<std::string, int64_t, int>, Timing> done;  // (model, n, threads) -> timing
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
    r.warmup = o.warmup;
    r.repeat = o.repeat;
    return r;
  }

  void fail(ModelRow r, const Status& st) {
    r.skipped = st.code() == StatusCode::unsupported;
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

  void run_job(const Job& job) {
    const std::string save = o.save_models.empty() ? "" : o.save_models + "/" + job.name + ".safetensors";
    Result<RandomModel> m = random_model(job.arch, job.config, o.seed, save);
    if (!m.ok()) {
      fail(base_row(job, 0, o.threads.front()), m.status());
      return;
    }
    for (const int64_t n : job.ns) {
      const TensorDesc desc(DType::i64, {o.batch, n});
      const std::vector<std::string> names = {"input_ids"};
      Result<Graph> graph = m->model->build_graph(names, std::vector<TensorDesc>{desc});
      if (!graph.ok()) {
        fail(base_row(job, n, o.threads.front()), graph.status());
        continue;
      }
      const BufferPtr ids = random_ids(o.batch * n, m->vocab_size, o.seed + uint32_t(n));
      const TensorView input{desc, ids->data()};
      for (const int threads : o.threads) run_one(job, n, threads, *graph, input, m->model->weight_bytes());
    }
  }

  void run_one(const Job& job, int64_t n, int threads, const Graph& graph, const TensorView& input,
               int64_t weight_bytes) {
    ModelRow r = base_row(job, n, threads);
    const Engine engine{o.backend, o.isa, threads};
    Result<std::unique_ptr<GraphRun>> run =
        GraphRun::create(graph, std::span<const TensorView>(&input, 1), engine);
    if (!run.ok()) {
      fail(r, run.status());
      return;
    }
    const EngineLabel label = engine_label((*run)->backend(), engine);
    r.isa = label.isa;
    r.threads = label.threads;
    r.arena_bytes = (*run)->memory().arena_bytes;
    r.peak_live_bytes = (*run)->memory().peak_live_bytes;
    r.weight_bytes = weight_bytes;
    Result<Timing> t = measure([&] { return (*run)->run(); }, nullptr, o.warmup, o.repeat);
    run->reset();
    if (!t.ok()) {
      fail(r, t.status());
      return;
    }
    r.timing = *t;
    done[{job.name, n, threads}] = *t;
    if (!job.baseline.empty()) {
      auto it = done.find({job.baseline, n, threads});
      if (it != done.end()) r.peer = PeerResult{job.baseline, it->second};
    }
    rep.row(r);
    const std::string label_text =
        o.threads.size() > 1 ? job.name + " (" + std::to_string(threads) + "t)" : job.name;
    series_for(label_text).points.emplace_back(double(n), t->median_ms);
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
  std::FILE* json = nullptr;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> json_file(nullptr, &std::fclose);
  if (o.json == "-") {
    json = stdout;
  } else if (!o.json.empty()) {
    json_file.reset(std::fopen(o.json.c_str(), "w"));
    if (!json_file) {
      std::fprintf(stderr, "longrun-bench: --json %s: cannot open: %s\n", o.json.c_str(),
                   std::strerror(errno));
      return 2;
    }
    json = json_file.get();
  }
  ModelReporter rep(json == stdout ? stderr : stdout, json);
  std::string threads;
  for (int t : o.threads) threads += (threads.empty() ? "" : ",") + std::to_string(t);
  const std::string title =
      "longrun-bench models: backend " + o.backend + (isa_label == "-" ? "" : ", isa " + isa_label) +
      ", threads " + threads + ", batch " + std::to_string(o.batch) + "; random weights (seed " +
      std::to_string(o.seed) + "); median of " + std::to_string(o.repeat) + " runs after " +
      std::to_string(o.warmup) + " warm-up runs; ratio = baseline ms / model ms (> 1: the model is faster)";
  rep.header(title);

  Runner runner{o, rep, isa_label};
  for (const Job& j : *jobs) runner.run_job(j);

  if (!o.plot.empty()) {
    const PlotText text{"longrun-bench models: " + o.backend + (isa_label == "-" ? "" : " " + isa_label) +
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
