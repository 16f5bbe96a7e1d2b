#include "model_report.h"

#include "provenance.h"

namespace longrun::bench {
namespace {

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

double ModelRow::tokens_per_s() const {
  return timing.median_ms > 0 ? double(batch * n) / (timing.median_ms * 1e-3) : 0.0;
}

void ModelReporter::header(const std::string& title) {
  std::fprintf(table_, "%s\n", title.c_str());
  std::fprintf(
      table_,
      "memory: arena = the planned arena, lb = the planner's lower bound (peak live bytes), ! when "
      "arena > %.1f x lb; RSS = the process's resident peak during the runs, bound = weights + arena "
      "+ inputs/outputs + %d MiB, ! when RSS > bound\n",
      ModelRow::kArenaSlack, int(ModelRow::kMemorySlack >> 20));
  std::fprintf(table_, "%-24s %-14s %-14s %10s %9s %8s %8s %6s %8s %8s  %-20s %10s %6s\n", "model", "shape",
               "engine", "median ms", "tokens/s", "arena", "lb MiB", "ar/lb", "RSS MiB", "bound", "baseline",
               "base ms", "ratio");
  std::fflush(table_);
}

void ModelReporter::note(const std::string& line) {
  std::fprintf(table_, "%s\n", line.c_str());
  std::fflush(table_);
}

void ModelReporter::row(const ModelRow& r) {
  // "cpu/avx2/1t", "cpu/avx2/1t/int8": the precision only where it is not the default f32.
  const std::string engine = r.backend + "/" + r.isa + "/" + std::to_string(r.threads) + "t" +
                             (r.precision == "f32" ? "" : "/" + r.precision);
  if (!r.error.empty()) {
    std::fprintf(table_, "%-24s %-14s %-14s %s: %s\n", r.model.c_str(), r.shape.c_str(), engine.c_str(),
                 r.skipped ? "skipped" : "FAILED", r.error.c_str());
  } else {
    std::string base = "-", base_ms, ratio;
    if (r.peer) {
      base = r.peer->name;
      base_ms = ms_text(r.peer->timing.median_ms);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", r.peer->timing.median_ms / r.timing.median_ms);
      ratio = buf;
    }
    char arena_ratio[32];
    std::snprintf(arena_ratio, sizeof arena_ratio, "%.2f%s", r.arena_ratio(), r.arena_ok() ? "" : "!");
    const std::string rss = r.peak_rss_bytes < 0 ? "?" : mib(r.peak_rss_bytes) + (r.memory_ok() ? "" : "!");
    std::fprintf(table_, "%-24s %-14s %-14s %10s %9.0f %8s %8s %6s %8s %8s  %-20s %10s %6s\n",
                 r.model.c_str(), r.shape.c_str(), engine.c_str(), ms_text(r.timing.median_ms).c_str(),
                 r.tokens_per_s(), mib(r.arena_bytes).c_str(), mib(r.peak_live_bytes).c_str(), arena_ratio,
                 rss.c_str(), mib(r.memory_bound_bytes()).c_str(), base.c_str(), base_ms.c_str(),
                 ratio.c_str());
  }
  std::fflush(table_);
  if (!json_) return;

  std::string j = "{\"model\":" + json_string(r.model) + ",\"arch\":" + json_string(r.arch) +
                  ",\"shape\":" + json_string(r.shape) + ",\"n\":" + std::to_string(r.n) +
                  ",\"batch\":" + std::to_string(r.batch) +
                  json_engine_fields(r.backend, r.isa, r.threads, r.warmup, r.repeat) +
                  ",\"precision\":" + json_string(r.precision);
  if (!r.error.empty()) {
    j += json_failure_field(r.error, r.skipped);
  } else {
    const Timing& t = r.timing;
    j += json_timing_fields(t) + ",\"tokens_per_s\":" + json_number(r.tokens_per_s()) +
         ",\"arena_bytes\":" + std::to_string(r.arena_bytes) +
         ",\"peak_live_bytes\":" + std::to_string(r.peak_live_bytes) +
         ",\"weight_bytes\":" + std::to_string(r.weight_bytes) +
         ",\"io_bytes\":" + std::to_string(r.io_bytes) +
         ",\"workspace_bytes\":" + std::to_string(r.workspace_bytes) +
         ",\"weight_copy_bytes\":" + std::to_string(r.weight_copy_bytes) +
         ",\"arena_ratio\":" + json_number(r.arena_ratio()) +
         ",\"arena_ok\":" + (r.arena_ok() ? "true" : "false") +
         ",\"peak_rss_bytes\":" + (r.peak_rss_bytes < 0 ? "null" : std::to_string(r.peak_rss_bytes)) +
         ",\"memory_bound_bytes\":" + std::to_string(r.memory_bound_bytes()) + ",\"memory_ok\":" +
         (r.peak_rss_bytes < 0 ? "null"
          : r.memory_ok()      ? "true"
                               : "false");
    if (r.peer)
      j += ",\"peer\":" + json_string(r.peer->name) +
           ",\"peer_median_ms\":" + json_number(r.peer->timing.median_ms) +
           ",\"ratio\":" + json_number(r.peer->timing.median_ms / t.median_ms);
  }
  if (!r.sweep.empty()) j += ",\"sweep\":" + json_string(r.sweep);
  j += json_provenance_fields() + "}\n";
  std::fputs(j.c_str(), json_);
  std::fflush(json_);
}

}  // namespace longrun::bench
