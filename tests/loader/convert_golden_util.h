// Helpers of the importer's round-trip tests: the golden model files, a per-process temporary
// output path, a bit-for-bit comparison of a converted file with a golden model, and one
// run of a model on the reference backend.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"

namespace longrun::convert_tests {

inline std::string golden_model_path(const std::string& name) {
  return std::string(LONGRUN_GOLDEN_DIR) + "/models/" + name + ".safetensors";
}

inline std::string temp_out(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("longrun-convert-rt-" + std::to_string(::getpid()) + "-" + name))
      .string();
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

// The "input/*" tensors of a golden io file (tests/golden/models/<name>.io.safetensors).
inline std::vector<NamedTensor> golden_inputs(const std::string& io_name) {
  auto io = SafetensorsFile::open(std::string(LONGRUN_GOLDEN_DIR) + "/models/" + io_name + ".io.safetensors");
  REQUIRE_MESSAGE(io.ok(), io.status().to_string());
  std::vector<NamedTensor> inputs;
  for (const SafetensorsEntry& e : (*io)->tensors())
    if (e.name.starts_with("input/"))
      inputs.push_back({e.name.substr(6), Tensor::from_bytes(e.desc, e.bytes).value()});
  REQUIRE(!inputs.empty());
  return inputs;
}

// One output of one run on the reference backend, as raw bytes.
inline std::vector<std::byte> run_once(const Model& model, const std::vector<NamedTensor>& inputs,
                                       const std::string& output) {
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
  for (const NamedTensor& t : *out)
    if (t.name == output) {
      const auto* p = static_cast<const std::byte*>(t.tensor.view().data);
      return {p, p + t.tensor.desc().nbytes()};
    }
  FAIL("no output " << output);
  return {};
}

}  // namespace longrun::convert_tests
