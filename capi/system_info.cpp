// lr_version / lr_system_info: what `longrun-run --version` and `--system-info` print.
#include <string>
#include <thread>

#include "c_api_internal.h"
#include "cpu/cpu_isa.h"
#include "longrun/backend.h"
#include "longrun/ops/schema.h"
#include "longrun/thread_pool.h"

#ifndef LONGRUN_VERSION
#error "LONGRUN_VERSION must be defined by the build (capi/CMakeLists.txt)"
#endif

namespace longrun::capi {
namespace {

thread_local std::string t_system_info;

std::string build_info() {
  std::string s = "build     ";
  s += LONGRUN_BUILD_TYPE;
  s += ", ";
#if defined(__clang__)
  s += "clang " __clang_version__;
#elif defined(__GNUC__)
  s += "gcc " __VERSION__;
#endif
  s += ", CUDA backend ";
  s += LONGRUN_BUILT_WITH_CUDA ? "built" : "not built (LONGRUN_CUDA=OFF or no nvcc)";
  s += ", sanitizers: ";
  s += LONGRUN_BUILT_SANITIZE;
  s += ", ops: ";
  s += ops_build_setting() == "all" ? std::string("all") : "LONGRUN_OPS=" + std::string(ops_build_setting());
  return s + "\n";
}

std::string cpu_info() {
  const cpu::Isa best = cpu::detect_isa();
  std::string s = "cpu isa   best " + std::string(cpu::isa_name(best)) + " (available:";
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (int(i) <= int(best)) s += " " + std::string(cpu::isa_name(i));
  s += ")\n";
  const std::vector<int> usable = allowed_cpus();
  s += "threads   " + std::to_string(std::thread::hardware_concurrency()) + " hardware, " +
       (usable.empty() ? std::string("?") : std::to_string(usable.size())) +
       " usable by this process (CPUs " + cpu_list_text(usable) +
       "; --threads 0 uses these; lr_session_options_set_affinity pins to a subset)\n";
  return s;
}

std::string backend_info() {
  std::string s;
  for (const std::string& name : backend_names()) {
    auto b = create_backend(name);
    s += "backend   " + name + ": " + (b.ok() ? (*b)->description() : b.status().message()) + "\n";
  }
  return s;
}

}  // namespace
}  // namespace longrun::capi

extern "C" {

const char* lr_version(void) { return LONGRUN_VERSION; }

const char* lr_system_info(void) {
  try {
    longrun::capi::t_system_info = std::string("longrun   ") + LONGRUN_VERSION + "\n" +
                                   longrun::capi::build_info() + longrun::capi::cpu_info() +
                                   longrun::capi::backend_info();
  } catch (...) {
    return "longrun " LONGRUN_VERSION " (system info unavailable: out of memory)\n";  // no allocation
  }
  return longrun::capi::t_system_info.c_str();
}

}  // extern "C"
