// `longrun-bench models`: whole-model inference of registered families with random weights
// (from the family's parameter table; no checkpoint), at model-shaped sizes, each variant
// side by side with its baseline preset in the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "longrun/precision.h"

namespace longrun::bench {

struct ModelsOptions {
  std::string backend = "cpu";
  std::string isa;  // "" = the backend's best
  std::vector<int> threads = {1};
  std::vector<int> cpus;      // cpu only: pin the pool's threads (BackendOptions::affinity)
  int spin_us = 0;            // cpu only: keep the pool's workers spinning (BackendOptions::spin_us)
  bool auto_affinity = true;  // cpu only: BackendOptions::auto_affinity
  Precision precision = Precision::f32;  // BackendOptions::precision of every run
  std::vector<std::string> presets;      // empty (and no --arch) = every preset
  std::string arch, config;              // an ad-hoc model instead of presets (--arch, --config)
  std::vector<int64_t> ns;               // overrides the presets' sequence lengths
  int64_t batch = 1;
  int repeat = 5;
  int warmup = 1;
  uint32_t seed = 1;
  std::string json;          // "" = no JSON, "-" = stdout (the table then goes to stderr)
  std::string plot;          // SVG plot of median_ms vs N per model and thread count
  std::string save_models;   // folder: write each benchmarked model file there
  bool quick = false;        // N = 128, 256 (unless --n)
  bool show_output = false;  // print the first values of each output after a model's row
  bool pytorch = false;      // also time eager PyTorch on the saved models (needs save_models)
  bool list = false;
  // --scale: the scaling sweep (scale_presets(), N 4096 ... 65536 up to max_n; default
  // repeat 3, halved per doubling of N above kScaleFullRepeatN, no warm-up there).
  bool scale = false;
  int64_t max_n = 0;         // 0: no limit
  bool no_baseline = false;  // --preset runs only the presets named, not their baselines
};

// Above this N the sweep's repeat halves per doubling of N (at least 1) and warm-up is 0.
constexpr int64_t kScaleFullRepeatN = 8192;

// Returns the process exit code: 0, 1 when a case failed, 2 on a usage error (bad preset,
// arch or config, an engine that cannot be created -- a precision the backend or ISA refuses
// among them --, an unwritable --json/--plot file).
int run_models(const ModelsOptions& options);

// "name  arch  baseline  summary" lines for --help.
std::vector<std::string> describe_presets();

}  // namespace longrun::bench
