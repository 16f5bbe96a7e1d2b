// Helpers of the importer's round-trip tests: the golden model files, a per-process temporary
// output path, a bit-for-bit comparison of a converted file with a golden model, runs of a
// model on the reference backend, and the comparison of a run with the PyTorch io goldens.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"
#include "support/golden_error.h"

namespace longrun::convert_tests {

inline std::string golden_model_path(const std::string& name) {
  return std::string(LONGRUN_GOLDEN_DIR) + "/models/" + name + ".safetensors";
}

inline std::string temp_out(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("longrun-convert-rt-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// The converted model at `out`, checked to carry the golden model's config (REQUIRE on
// either load failing).
inline std::shared_ptr<const Model> load_with_golden_config(const std::string& out,
                                                            const std::string& golden_name) {
  auto model = Model::load(out);
  auto golden = Model::load(golden_model_path(golden_name));
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  REQUIRE(golden.ok());
  CHECK((*model)->config_json() == (*golden)->config_json());
  return *model;
}

// Every tensor of the golden model, bit for bit (those in `zeroed`: all zeros instead), and
// nothing else in `out`.
inline void check_golden_tensors(const std::string& out, const std::string& golden_name,
                                 const std::vector<std::string>& zeroed = {}) {
  auto golden = SafetensorsFile::open(golden_model_path(golden_name));
  auto conv = SafetensorsFile::open(out);
  REQUIRE(golden.ok());
  REQUIRE(conv.ok());
  CHECK((*conv)->tensors().size() == (*golden)->tensors().size());
  for (const SafetensorsEntry& g : (*golden)->tensors()) {
    const SafetensorsEntry* t = (*conv)->find(g.name);
    REQUIRE_MESSAGE(t, g.name);
    CHECK(t->desc.to_string() == g.desc.to_string());
    if (std::find(zeroed.begin(), zeroed.end(), g.name) != zeroed.end()) {
      CHECK_MESSAGE(
          std::all_of(t->bytes.begin(), t->bytes.end(), [](std::byte b) { return b == std::byte{0}; }),
          g.name);
      continue;
    }
    CHECK_MESSAGE(std::memcmp(t->bytes.data(), g.bytes.data(), g.bytes.size()) == 0, g.name);
  }
}

inline std::string golden_io_path(const std::string& io_name) {
  return std::string(LONGRUN_GOLDEN_DIR) + "/models/" + io_name + ".io.safetensors";
}

// The "input/*" tensors of an io file.
inline std::vector<NamedTensor> io_inputs(const SafetensorsFile& io) {
  std::vector<NamedTensor> inputs;
  for (const SafetensorsEntry& e : io.tensors())
    if (e.name.starts_with("input/"))
      inputs.push_back({e.name.substr(6), Tensor::from_bytes(e.desc, e.bytes).value()});
  REQUIRE(!inputs.empty());
  return inputs;
}

// The "input/*" tensors of a golden io file (tests/golden/models/<name>.io.safetensors).
inline std::vector<NamedTensor> golden_inputs(const std::string& io_name) {
  auto io = SafetensorsFile::open(golden_io_path(io_name));
  REQUIRE_MESSAGE(io.ok(), io.status().to_string());
  return io_inputs(**io);
}

// Every output of one run on the reference backend.
inline std::vector<NamedTensor> run_outputs(const Model& model, const std::vector<NamedTensor>& inputs) {
  std::vector<std::string> names;
  std::vector<NamedTensorRef> refs;
  for (const NamedTensor& t : inputs) {
    names.push_back(t.name);
    refs.push_back({t.name, t.tensor.view()});
  }
  SessionOptions so;
  so.backend = "reference";
  auto session = model.create_session(so, names);
  REQUIRE_MESSAGE(session.ok(), session.status().to_string());
  auto out = (*session)->run(refs);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  return std::move(*out);
}

// One output of one run on the reference backend, as raw bytes.
inline std::vector<std::byte> run_once(const Model& model, const std::vector<NamedTensor>& inputs,
                                       const std::string& output) {
  for (const NamedTensor& t : run_outputs(model, inputs))
    if (t.name == output) {
      const auto* p = static_cast<const std::byte*>(t.tensor.view().data);
      return {p, p + t.tensor.desc().nbytes()};
    }
  FAIL("no output " << output);
  return {};
}

struct IoTolerance {
  double norm_err = golden::kMaxNormErr;
  double max_abs = golden::kMaxAbsErr;
};

// Runs `model` on the inputs of the io file at `io_path` (the PyTorch oracle's goldens, written
// by tests/oracles) and checks every output against its "expected/<name>" with the model
// tests' measure; every output must have one, and every expected tensor an output (except the
// debug intermediates, outputs of debug_outputs models only). An io file that records the
// config its outputs were computed with ("longrun.config") must agree with the model's on
// every field both have (the oracle's also has training-only keys, the model's defaults).
// Returns the worst error.
inline golden::Error check_io_golden(const Model& model, const std::string& io_path, IoTolerance tol = {}) {
  CAPTURE(io_path);
  auto io = SafetensorsFile::open(io_path);
  REQUIRE_MESSAGE(io.ok(), io.status().to_string());
  const auto config = (*io)->metadata().find("longrun.config");
  if (config != (*io)->metadata().end()) {
    const nlohmann::json have = nlohmann::json::parse(model.config_json());
    const nlohmann::json ran = nlohmann::json::parse(config->second);
    for (auto it = ran.begin(); it != ran.end(); ++it)
      if (have.contains(it.key()))
        CHECK_MESSAGE(have.at(it.key()) == it.value(), "config field " << it.key());
  }
  golden::Error worst;
  const std::vector<NamedTensor> outputs = run_outputs(model, io_inputs(**io));
  for (const SafetensorsEntry& e : (*io)->tensors())
    if (e.name.starts_with("expected/") && !e.name.starts_with("expected/debug."))
      CHECK_MESSAGE(std::any_of(outputs.begin(), outputs.end(),
                                [&](const NamedTensor& t) { return "expected/" + t.name == e.name; }),
                    "the model has no output for " << e.name);
  for (const NamedTensor& t : outputs) {
    CAPTURE(t.name);
    const SafetensorsEntry* want = (*io)->find("expected/" + t.name);
    REQUIRE_MESSAGE(want, "no golden for output " << t.name);
    REQUIRE(t.tensor.desc().same_shape(want->desc));
    REQUIRE(t.tensor.desc().dtype() == DType::f32);
    const golden::Error e =
        golden::measure({t.tensor.data<float>(), size_t(t.tensor.numel())},
                        {reinterpret_cast<const float*>(want->bytes.data()), size_t(want->desc.numel())});
    CHECK_MESSAGE(e.norm_err <= tol.norm_err, "norm_err " << e.norm_err);
    CHECK_MESSAGE(e.max_abs <= tol.max_abs, "max_abs " << e.max_abs);
    worst.norm_err = std::max(worst.norm_err, e.norm_err);
    worst.max_abs = std::max(worst.max_abs, e.max_abs);
  }
  return worst;
}

// check_io_golden on every committed io golden of golden model `model_name`
// (tests/golden/models/<model_name>.<case>.io.safetensors); returns the worst error.
inline golden::Error check_model_io_goldens(const Model& model, const std::string& model_name,
                                            IoTolerance tol = {}) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(LONGRUN_GOLDEN_DIR) + "/models")) {
    const std::string f = e.path().filename().string();
    if (f.starts_with(model_name + ".") && f.ends_with(".io.safetensors")) files.push_back(e.path().string());
  }
  REQUIRE_MESSAGE(!files.empty(), "no io goldens of " << model_name);
  std::sort(files.begin(), files.end());
  golden::Error worst;
  for (const std::string& f : files) {
    const golden::Error e = check_io_golden(model, f, tol);
    worst.norm_err = std::max(worst.norm_err, e.norm_err);
    worst.max_abs = std::max(worst.max_abs, e.max_abs);
  }
  return worst;
}

}  // namespace longrun::convert_tests
