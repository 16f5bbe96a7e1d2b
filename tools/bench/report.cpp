#include "report.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "provenance.h"

namespace longrun::bench {
namespace {

std::string rate_text(double per_s) {
  if (!(per_s > 0) || !std::isfinite(per_s)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, per_s >= 100 ? "%.0f" : "%.1f", per_s);
  return buf;
}

// Work per second in G units: flops or bytes over the median time.
double giga_per_s(double count, double ms) { return count > 0 && ms > 0 ? count / (ms * 1e6) : 0.0; }

}  // namespace

bool open_json(const std::string& path, JsonSink* sink) {
  if (path == "-") {
    sink->file = stdout;
  } else if (!path.empty()) {
    sink->owned.reset(std::fopen(path.c_str(), "w"));
    if (!sink->owned) {
      std::fprintf(stderr, "longrun-bench: --json %s: cannot open: %s\n", path.c_str(), std::strerror(errno));
      return false;
    }
    sink->file = sink->owned.get();
  }
  return true;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_engine_fields(const std::string& backend, const std::string& isa, int threads, int warmup,
                               int repeat) {
  return ",\"backend\":" + json_string(backend) +
         ",\"isa\":" + (isa == "-" ? std::string("null") : json_string(isa)) +
         ",\"threads\":" + std::to_string(threads) + ",\"warmup\":" + std::to_string(warmup) +
         ",\"repeat\":" + std::to_string(repeat);
}

std::string json_failure_field(const std::string& error, bool skipped) {
  return std::string(",\"") + (skipped ? "skipped" : "error") + "\":" + json_string(error);
}

std::string json_timing_fields(const Timing& t) {
  return ",\"median_ms\":" + json_number(t.median_ms) + ",\"min_ms\":" + json_number(t.min_ms) +
         ",\"max_ms\":" + json_number(t.max_ms);
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms >= 100 ? "%.1f" : ms >= 0.1 ? "%.3f" : "%.4f", ms);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

void Reporter::header(const std::string& title) {
  std::fprintf(table_, "%s\n", title.c_str());
  std::fprintf(table_, "%-16s %-34s %-14s %-4s %10s %8s %7s  %-11s %10s %6s%s\n", "op", "shape", "engine",
               "prec", "median ms", "GFLOP/s", "GB/s", "peer", "peer ms", "ratio",
               paired_ ? "  paired (min-max)" : "");
  std::fflush(table_);
}

void Reporter::row(const Row& r, bool continuation) {
  if (json_) json_line(r);
  const std::string engine = r.backend + "/" + r.isa + "/" + std::to_string(r.threads) + "t";
  if (!r.error.empty()) {
    std::fprintf(table_, "%-16s %-34s %-14s %-4s %s: %s\n", r.op.c_str(), r.shape.c_str(), engine.c_str(),
                 r.precision.c_str(), r.skipped ? "skipped" : "FAILED", r.error.c_str());
  } else {
    std::string peer = "-", peer_ms = "", ratio = "", paired = "";
    if (r.peer) {
      peer = r.peer->name;
      peer_ms = ms_text(r.peer->timing.median_ms);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f", r.peer->timing.median_ms / r.timing.median_ms);
      ratio = buf;
      if (const std::optional<PairedRatio>& p = r.peer->paired; p && p->rounds > 0) {
        std::snprintf(buf, sizeof buf, "  %.2f (%.2f-%.2f)", p->median, p->min, p->max);
        paired = buf;
      }
    }
    if (continuation)
      std::fprintf(table_, "%-16s %-34s %-14s %-4s %10s %8s %7s  %-11s %10s %6s%s\n", "", "", "", "", "", "",
                   "", peer.c_str(), peer_ms.c_str(), ratio.c_str(), paired.c_str());
    else
      std::fprintf(table_, "%-16s %-34s %-14s %-4s %10s %8s %7s  %-11s %10s %6s%s\n", r.op.c_str(),
                   r.shape.c_str(), engine.c_str(), r.precision.c_str(), ms_text(r.timing.median_ms).c_str(),
                   rate_text(giga_per_s(r.flops, r.timing.median_ms)).c_str(),
                   rate_text(giga_per_s(r.bytes, r.timing.median_ms)).c_str(), peer.c_str(), peer_ms.c_str(),
                   ratio.c_str(), paired.c_str());
  }
  std::fflush(table_);
}

void Reporter::json_line(const Row& r) {
  std::string j = "{\"op\":" + json_string(r.op) + ",\"shape\":" + json_string(r.shape) +
                  ",\"n\":" + std::to_string(r.n) +
                  json_engine_fields(r.backend, r.isa, r.threads, r.warmup, r.repeat) +
                  ",\"precision\":" + json_string(r.precision);
  if (!r.error.empty()) {
    j += json_failure_field(r.error, r.skipped);
  } else {
    const Timing& t = r.timing;
    j += json_timing_fields(t);
    j += ",\"flops\":" + (r.flops > 0 ? json_number(r.flops) : "null");
    j += ",\"gflops\":" + (r.flops > 0 ? json_number(giga_per_s(r.flops, t.median_ms)) : "null");
    j += ",\"bytes\":" + json_number(r.bytes) + ",\"gbps\":" + json_number(giga_per_s(r.bytes, t.median_ms));
    if (r.peer) {
      j += ",\"peer\":" + json_string(r.peer->name) +
           ",\"peer_median_ms\":" + json_number(r.peer->timing.median_ms) +
           ",\"ratio\":" + json_number(r.peer->timing.median_ms / t.median_ms);
      if (const std::optional<PairedRatio>& p = r.peer->paired; p && p->rounds > 0)
        j += ",\"paired_ratio\":" + json_number(p->median) + ",\"paired_ratio_min\":" + json_number(p->min) +
             ",\"paired_ratio_max\":" + json_number(p->max) +
             ",\"paired_rounds\":" + std::to_string(p->rounds);
    }
  }
  j += json_provenance_fields() + "}\n";
  std::fputs(j.c_str(), json_);
  std::fflush(json_);
}

}  // namespace longrun::bench
