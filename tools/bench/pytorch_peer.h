// `longrun-bench models --pytorch`: eager PyTorch as a peer of the saved models. After
// longrun's own rows, tools/bench/pytorch_models.py times each model file written by
// --save-models with the same weights, ids (and decoder ids), N, batch, warm-up, repeats and
// thread count; longrun-bench then records one row per (model, N, threads) with peer
// "pytorch-cpu" and ratio = PyTorch ms / longrun ms (> 1: longrun is faster).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "longrun/status.h"
#include "timing.h"

namespace longrun::bench {

struct PytorchRun {
  std::string python;  // interpreter ($LONGRUN_PYTHON, else /usr/bin/python3)
  std::string script;  // pytorch_models.py
  int64_t batch = 1;
  int warmup = 1, repeat = 5;
  uint32_t seed = 1;
};

struct PytorchTiming {
  std::string model;    // the file's stem = the preset name
  std::string backend;  // "pytorch-cpu"
  int64_t n = 0;
  int threads = 1;
  Timing timing;
};

// The interpreter and script this build uses.
PytorchRun default_pytorch_run();

// Runs the script on one model file at the given lengths and thread count; its JSON lines
// go to `json_path` and are parsed back. Errors: the script failing (its exit status) or
// writing something that is not its JSON.
Result<std::vector<PytorchTiming>> run_pytorch(const PytorchRun& run, const std::string& model_file,
                                               const std::vector<int64_t>& ns, int threads,
                                               const std::string& json_path);

}  // namespace longrun::bench
