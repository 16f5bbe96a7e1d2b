// Where a result came from: the build and machine facts every JSON line of longrun-bench ends
// with, so that a results file read later (tools/bench/compare.py, perf_doc.py) says what
// produced it.
#pragma once

#include <string>

namespace longrun::bench {

struct Provenance {
  std::string commit;      // `git describe --always --dirty` of the source tree at build time, or "unknown"
  std::string cpu;         // the CPU's model name (/proc/cpuinfo, else the CPUID brand string), or "unknown"
  std::string cpu_isa;     // the best ISA the cpu backend runs on this machine: avx512, avx2 or scalar
  std::string compiler;    // the compiler of longrun-bench and its version, e.g. "gcc 12.2.0"
  std::string build_type;  // CMake build type (Release, Debug, ...)
  std::string date;        // UTC time the run started, ISO 8601: 2026-01-31T12:00:00Z
};

// The facts of this process, gathered on the first call (main calls it first, so date is
// the run's start).
const Provenance& provenance();

// The provenance as JSON fields, each with its leading comma, in the order of Provenance.
std::string json_provenance_fields();

}  // namespace longrun::bench
