#include "pytorch_peer.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace longrun::bench {
namespace {

// A POSIX shell word: single-quoted, embedded quotes closed and escaped.
std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (const char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

}  // namespace

PytorchRun default_pytorch_run() {
  PytorchRun r;
  const char* python = std::getenv("LONGRUN_PYTHON");
  r.python = python && *python ? python : "/usr/bin/python3";
  r.script = LONGRUN_BENCH_PYTORCH_SCRIPT;
  return r;
}

Result<std::vector<PytorchTiming>> run_pytorch(const PytorchRun& run, const std::string& model_file,
                                               const std::vector<int64_t>& ns, int threads,
                                               const std::string& json_path) {
  std::string n_list;
  for (const int64_t n : ns) n_list += (n_list.empty() ? "" : ",") + std::to_string(n);
  const std::string cmd = shell_quote(run.python) + " " + shell_quote(run.script) + " " +
                          shell_quote(model_file) + " --n " + n_list + " --threads " +
                          std::to_string(threads) + " --batch " + std::to_string(run.batch) + " --warmup " +
                          std::to_string(run.warmup) + " --repeat " + std::to_string(run.repeat) +
                          " --seed " + std::to_string(run.seed) + " --json " + shell_quote(json_path);
  const int rc = std::system(cmd.c_str());
  if (rc != 0)
    return internal_error("--pytorch: " + run.script + " on " + model_file + " failed (status " +
                          std::to_string(rc) + "): " + cmd);
  std::ifstream f(json_path);
  if (!f) return io_error("--pytorch: cannot read " + json_path);
  std::vector<PytorchTiming> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("median_ms") || !j["median_ms"].is_number() || !j.contains("n") ||
        !j.contains("model") || !j.contains("backend"))
      return format_error("--pytorch: " + json_path + ": not a pytorch_models.py JSON line: " + line);
    PytorchTiming t;
    try {
      t.model = j["model"].get<std::string>();
      t.backend = j["backend"].get<std::string>();
      t.n = j["n"].get<int64_t>();
      t.threads = j.value("threads", threads);
      t.timing.median_ms = j["median_ms"].get<double>();
      t.timing.min_ms = j.value("min_ms", t.timing.median_ms);
      t.timing.max_ms = j.value("max_ms", t.timing.median_ms);
    } catch (const nlohmann::json::exception& e) {
      return format_error("--pytorch: " + json_path + ": " + e.what() + ": " + line);
    }
    t.timing.runs = run.repeat;
    out.push_back(t);
  }
  return out;
}

}  // namespace longrun::bench
