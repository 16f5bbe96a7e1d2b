// Loads a converted model and a golden .io file (inputs "input/<name>", expected outputs
// "expected/<name>"), runs the inputs through a Session and prints the largest difference
// from the expected logits (exit 1 above 1e-4, the whole-model golden tolerance). Then runs
// row 0's ids alone (input_ids only) and prints its logits in the format of the C example,
// so the two programs can be compared. Uses only the installed public headers; RAII
// throughout (the C API's lr_* handles map to these types: longrun.h).
#include <longrun/models/model.h>
#include <longrun/safetensors.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace longrun;
  if (argc != 3) {
    std::fprintf(stderr, "usage: cpp_classify MODEL.safetensors CASE.io.safetensors\n");
    return 2;
  }
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "cpp_classify: %s\n", s.to_string().c_str());
    return 1;
  };
  auto model = Model::load(argv[1]);
  if (!model.ok()) return fail(model.status());
  auto io = SafetensorsFile::open(argv[2]);
  if (!io.ok()) return fail(io.status());

  std::vector<NamedTensor> tensors;  // copies: aligned, owned
  for (const SafetensorsEntry& e : (*io)->tensors()) {
    if (!e.name.starts_with("input/")) continue;
    auto t = Tensor::from_bytes(e.desc, e.bytes);
    if (!t.ok()) return fail(t.status());
    tensors.push_back({e.name.substr(6), std::move(t).value()});
  }
  std::vector<NamedTensorRef> inputs;
  std::vector<std::string> names;
  for (const NamedTensor& t : tensors) {
    names.push_back(t.name);
    inputs.push_back({t.name, t.tensor.view()});
  }
  SessionOptions options;
  options.backend = "cpu";
  auto session = (*model)->create_session(options, names);
  if (!session.ok()) return fail(session.status());
  auto out = (*session)->run(inputs);
  if (!out.ok()) return fail(out.status());
  const SafetensorsEntry* expected = (*io)->find("expected/logits");
  if (!expected) return fail(not_found(std::string(argv[2]) + ": no tensor 'expected/logits'"));
  const Tensor* logits = nullptr;
  for (const NamedTensor& t : *out)
    if (t.name == "logits") logits = &t.tensor;
  if (!logits || logits->nbytes() != int64_t(expected->bytes.size()))
    return fail(internal_error("logits missing or of the wrong size"));
  double max_diff = 0;
  for (int64_t i = 0; i < logits->numel(); ++i) {
    float want;
    std::memcpy(&want, expected->bytes.data() + 4 * i, 4);
    max_diff = std::max(max_diff, std::fabs(double(logits->data<float>()[i]) - double(want)));
  }
  std::printf("%s on %s: %s %s, max |logits - expected| = %.3g\n", (*model)->arch().c_str(),
              (*session)->backend().description().c_str(), argv[2], logits->desc().to_string().c_str(),
              max_diff);

  // Row 0 of input_ids alone, as the C example runs it.
  const SafetensorsEntry* ids = (*io)->find("input/input_ids");
  if (!ids || ids->desc.rank() != 2 || ids->desc.dtype() != DType::i64)
    return fail(invalid_argument("expected input/input_ids i64 [B, N]"));
  const int64_t n = ids->desc.dim(1);
  std::vector<int64_t> row_ids(static_cast<size_t>(n));  // copied: the file's bytes may be unaligned
  std::memcpy(row_ids.data(), ids->bytes.data(), row_ids.size() * sizeof(int64_t));
  const int64_t dims[2] = {1, n};
  NamedTensorRef row{"input_ids", TensorView{TensorDesc(DType::i64, dims), row_ids.data()}};
  auto row_session = (*model)->create_session(options);
  if (!row_session.ok()) return fail(row_session.status());
  auto row_out = (*row_session)->run({&row, 1});
  if (!row_out.ok()) return fail(row_out.status());
  std::printf("row 0 ids:");
  for (int64_t id : row_ids) std::printf(" %lld", static_cast<long long>(id));
  std::printf("\nlogits:");
  for (const NamedTensor& t : *row_out)
    if (t.name == "logits")
      for (int64_t c = 0; c < t.tensor.numel(); ++c) std::printf(" %.6f", double(t.tensor.data<float>()[c]));
  std::printf("\n");
  return max_diff <= 1e-4 ? 0 : 1;
}
