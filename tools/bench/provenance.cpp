#include "provenance.h"

#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>

#include "build_info.h"  // generated: LONGRUN_BENCH_COMMIT, LONGRUN_BENCH_BUILD_TYPE
#include "graph_run.h"
#include "report.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace longrun::bench {
namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const std::string name = trimmed(line.substr(colon + 1));
      if (!name.empty()) return name;
    }
  }
#if defined(__x86_64__) || defined(__i386__)
  unsigned max_leaf = __get_cpuid_max(0x80000000u, nullptr);
  if (max_leaf >= 0x80000004u) {
    unsigned regs[12];
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char brand[49] = {};
    std::memcpy(brand, regs, 48);
    const std::string name = trimmed(brand);
    if (!name.empty()) return name;
  }
#endif
  return "unknown";
}

std::string compiler_text() {
#if defined(__clang__)
  return "clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

// The cpu backend's own choice (graph_run.h's label of its description): what a run without
// --isa uses.
std::string best_cpu_isa() {
  Result<std::unique_ptr<Backend>> b = make_backend(Engine{"cpu", "", 1});
  if (!b.ok()) return "unknown";
  const std::string isa = engine_label(**b, Engine{"cpu", "", 1}).isa;
  return isa == "-" ? "unknown" : isa;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

const Provenance& provenance() {
  static const Provenance p = [] {
    Provenance q;
    q.commit = LONGRUN_BENCH_COMMIT;
    q.cpu = cpu_model();
    q.cpu_isa = best_cpu_isa();
    q.compiler = compiler_text();
    q.build_type = LONGRUN_BENCH_BUILD_TYPE;
    q.date = utc_now();
    return q;
  }();
  return p;
}

std::string json_provenance_fields() {
  const Provenance& p = provenance();
  return ",\"commit\":" + json_string(p.commit) + ",\"cpu\":" + json_string(p.cpu) +
         ",\"cpu_isa\":" + json_string(p.cpu_isa) + ",\"compiler\":" + json_string(p.compiler) +
         ",\"build_type\":" + json_string(p.build_type) + ",\"date\":" + json_string(p.date);
}

}  // namespace longrun::bench
