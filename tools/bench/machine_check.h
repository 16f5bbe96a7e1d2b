// The machine check: five short probes that say how much of this core a benchmark run got.
// The build VMs are shared with other tenants, and on a bad day the same binary runs at half
// speed or worse: a run's numbers mean little without the state of the machine beside them.
// `longrun-bench machine` prints the probes; `ops` runs them before and after its cases and
// writes them into its table and JSON.
//
// Probes, each timed in `rounds` short rounds (all five per round, so drift hits them alike):
//  - clock: a dependent scalar FMA chain (4 cycles per FMA), in GHz;
//  - fma: FMA throughput of 12 independent vector chains at the best ISA, in flops per cycle
//    of that clock (at most 64 with two 512-bit FMA pipes, 32 with two 256-bit ones);
//  - row gather: sparse attention's weighted sum of 64-float rows picked at random from 16 KiB
//    (in L1), in cycles per row (at least 2 with two 512-bit FMA pipes: 4 loads and 4 FMAs a
//    row; a tenant on the core's other hardware thread shows here first);
//  - memcpy: a copy of 8 MiB, in GB/s (read + write), which the L3 holds on every build VM;
//  - store_copy: the same copy with ordinary vector stores (machine_probes.h), which read each
//    destination line before writing it, as every kernel writing through the cache does; glibc's
//    memcpy (rep movsb) need not. Their ratio bounds what such a kernel reaches of a memcpy.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace longrun::bench {

struct Probe {
  std::string name;  // clock, fma, row_gather, memcpy, store_copy
  std::string unit;  // GHz, flop/cycle, cycles/row, GB/s
  double min = 0, median = 0, max = 0;
};

struct MachineCheck {
  std::string isa;  // the vector ISA of the fma and row_gather probes: avx512, avx2 or none
  int rounds = 0;
  std::vector<Probe> probes;  // empty without AVX2 + FMA (no probe kernels)
};

// Runs the probes; each takes well under a millisecond per round plus two 8 MiB copies.
MachineCheck run_machine_check(int rounds);

// One line: "clock 2.15 GHz, fma 62.8 flop/cycle, row_gather 6.70 cycles/row, memcpy 6.0
// GB/s" (medians).
std::string machine_check_summary(const MachineCheck& m);

// One JSON object per probe: {"probe", "when", "isa", "rounds", "unit", "min", "median", "max",
// "threads": 1, then the provenance (provenance.h)}.
void write_machine_check_json(std::FILE* f, const MachineCheck& m, const std::string& when);

struct MachineOptions {
  int rounds = 101;
  std::string json;  // "" = none, "-" = stdout
};

// `longrun-bench machine`: the probes as a table (and JSON). Returns the exit code.
int run_machine(const MachineOptions& o);

}  // namespace longrun::bench
