// Helpers of the whole-model tests (tests/models/): the backend under test, golden paths,
// error measures, and rewriting a model file in memory (to make broken variants).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"
#include "support/golden_error.h"

namespace longrun::model_tests {

// The backend the executable runs against (LONGRUN_TEST_BACKEND, default "reference"), set
// by main.cpp.
const std::string& backend_name();
void set_backend_name(std::string name);
SessionOptions session_options();

std::string golden_dir();  // tests/golden/models

// Model::load of golden_dir()/file; the test fails (REQUIRE) with the load error otherwise.
std::shared_ptr<const Model> load_golden(const std::string& file);

// The error measure shared with the importer's round trips (tests/support/golden_error.h).
using golden::Error;
using golden::measure;

// A model file's tensors and metadata, copied out so that tests can edit them.
struct EditableFile {
  struct Entry {
    std::string name;
    TensorDesc desc;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> tensors;
  std::map<std::string, std::string> metadata;

  static EditableFile read(const std::string& path);
  Entry* find(const std::string& name);
  void remove(const std::string& name);
  // Serialises (64-byte aligned, as longrun's writer) and parses the result in memory.
  Result<std::shared_ptr<const Model>> load(const ModelOptions& options = {}) const;
  // load() of a copy whose longrun.config has the first `from` replaced by `to` (the test
  // fails, REQUIRE, when the config does not contain `from`).
  Result<std::shared_ptr<const Model>> load_with_config_edit(const std::string& from,
                                                             const std::string& to) const;
  // Serialises with every tensor shifted by one byte (a leading 1-byte "__pad" filler), so
  // no f32 weight is 4-byte aligned.
  Result<std::shared_ptr<const Model>> load_misaligned(const ModelOptions& options = {}) const;
};

// Runs `model` on named inputs and returns the outputs by name.
// With `options` null: session_options().
Result<std::map<std::string, Tensor>> run_model(const Model& model, const std::vector<NamedTensor>& inputs,
                                                RunHooks* hooks = nullptr,
                                                const SessionOptions* options = nullptr);

// Every tensor of `f32` as f16 (returned); `f32` itself is rounded to the f16 values, so the
// two files hold the same numbers.
EditableFile to_f16(EditableFile* f32);

// i64 [B, N] ids.
Tensor ids_tensor(int64_t batch, int64_t n, const std::function<int64_t(int64_t, int64_t)>& value);

}  // namespace longrun::model_tests
