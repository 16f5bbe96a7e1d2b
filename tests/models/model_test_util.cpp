#include "models/model_test_util.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "longrun/dtype.h"

namespace longrun::model_tests {
namespace {

std::string& backend_storage() {
  static std::string name = "reference";
  return name;
}

}  // namespace

const std::string& backend_name() { return backend_storage(); }
void set_backend_name(std::string name) { backend_storage() = std::move(name); }

SessionOptions session_options() {
  SessionOptions o;
  o.backend = backend_name();
  o.threads = 1;
  return o;
}

std::string golden_dir() { return std::string(LONGRUN_GOLDEN_DIR) + "/models"; }

std::shared_ptr<const Model> load_golden(const std::string& file) {
  auto m = Model::load(golden_dir() + "/" + file);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  return m.value();
}

EditableFile EditableFile::read(const std::string& path) {
  EditableFile f;
  auto file = SafetensorsFile::open(path);
  if (!file.ok()) return f;
  f.metadata = (*file)->metadata();
  for (const SafetensorsEntry& e : (*file)->tensors())
    f.tensors.push_back({e.name, e.desc, std::vector<std::byte>(e.bytes.begin(), e.bytes.end())});
  return f;
}

EditableFile::Entry* EditableFile::find(const std::string& name) {
  for (Entry& e : tensors)
    if (e.name == name) return &e;
  return nullptr;
}

void EditableFile::remove(const std::string& name) {
  std::erase_if(tensors, [&](const Entry& e) { return e.name == name; });
}

Result<std::shared_ptr<const Model>> EditableFile::load_with_config_edit(const std::string& from,
                                                                         const std::string& to) const {
  EditableFile edited = *this;
  std::string& config = edited.metadata["longrun.config"];
  const size_t at = config.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from << " not in " << config);
  config.replace(at, from.size(), to);
  return edited.load();
}

Result<std::shared_ptr<const Model>> EditableFile::load(const ModelOptions& options) const {
  std::vector<SafetensorsWriteEntry> entries;
  for (const Entry& e : tensors) entries.push_back({e.name, e.desc, e.bytes});
  LR_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, serialize_safetensors(entries, metadata));
  auto buffer = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  LR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::parse(*buffer, buffer, "edited.safetensors"));
  return Model::from_file(std::move(file), options);
}

Result<std::shared_ptr<const Model>> EditableFile::load_misaligned(const ModelOptions& options) const {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = metadata;
  header["__pad.0"] = {{"dtype", "U8"}, {"shape", {1}}, {"data_offsets", {0, 1}}};
  uint64_t offset = 1;
  for (const Entry& e : tensors) {
    header[e.name] = {{"dtype", std::string(dtype_safetensors_name(e.desc.dtype()))},
                      {"shape", std::vector<int64_t>(e.desc.dims().begin(), e.desc.dims().end())},
                      {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';
  auto buffer = std::make_shared<std::vector<std::byte>>(8 + text.size() + offset);
  const uint64_t n = text.size();
  std::memcpy(buffer->data(), &n, 8);  // little-endian hosts only, as the reader
  std::memcpy(buffer->data() + 8, text.data(), text.size());
  std::byte* data = buffer->data() + 8 + text.size();
  data[0] = std::byte{0};
  size_t at = 1;
  for (const Entry& e : tensors) {
    std::memcpy(data + at, e.bytes.data(), e.bytes.size());
    at += e.bytes.size();
  }
  LR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::parse(*buffer, buffer, "misaligned.safetensors"));
  return Model::from_file(std::move(file), options);
}

Result<std::map<std::string, Tensor>> run_model(const Model& model, const std::vector<NamedTensor>& inputs,
                                                RunHooks* hooks, const SessionOptions* options) {
  std::vector<std::string> names;
  std::vector<NamedTensorRef> refs;
  for (const NamedTensor& t : inputs) {
    names.push_back(t.name);
    refs.push_back({t.name, t.tensor.view()});
  }
  LR_ASSIGN_OR_RETURN(auto session,
                      model.create_session(options != nullptr ? *options : session_options(), names));
  LR_ASSIGN_OR_RETURN(std::vector<NamedTensor> out, session->run(refs, hooks));
  std::map<std::string, Tensor> by_name;
  for (NamedTensor& t : out) by_name[t.name] = std::move(t.tensor);
  return by_name;
}

EditableFile to_f16(EditableFile* f32) {
  EditableFile f16 = *f32;
  for (size_t i = 0; i < f32->tensors.size(); ++i) {
    EditableFile::Entry& a = f32->tensors[i];
    EditableFile::Entry& h = f16.tensors[i];
    const int64_t n = a.desc.numel();
    h.desc = a.desc.with_dtype(DType::f16);
    h.bytes.assign(size_t(n) * 2, std::byte{0});
    for (int64_t j = 0; j < n; ++j) {
      float x;
      std::memcpy(&x, a.bytes.data() + 4 * j, 4);
      const uint16_t bits = f32_to_f16(x);
      x = f16_to_f32(bits);
      std::memcpy(a.bytes.data() + 4 * j, &x, 4);
      std::memcpy(h.bytes.data() + 2 * j, &bits, 2);
    }
  }
  return f16;
}

Tensor ids_tensor(int64_t batch, int64_t n, const std::function<int64_t(int64_t, int64_t)>& value) {
  const int64_t dims[] = {batch, n};
  Tensor t = Tensor::zeros(DType::i64, dims).value();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[b * n + i] = value(b, i);
  return t;
}

}  // namespace longrun::model_tests
