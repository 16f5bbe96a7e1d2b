// Native files with int8 weights (`longrun-convert --quantize int8`, docs/checkpoints.md#quantized-weights)
// on golden models: an int8 session on the quantized file gives the same bytes as an int8
// session on the source file (the stored q and scales are what the session would compute),
// without an f32 copy of the quantized weights, and an f32 or bf16 session runs the
// dequantized weights w = q · scale, the same bytes as the source file with those weights
// written out as f32.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/model_test_util.h"
#include "quantize.h"

namespace longrun::model_tests {
namespace {

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("longrun_quantized_" + std::to_string(::getpid()) + "_" + name))
                 .string()) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

// The quantized file with every quantized weight written out as f32 q · scale (scales
// removed, no longrun.quantization): the dequantized model as an ordinary file.
EditableFile dequantized(const EditableFile& q) {
  EditableFile out = q;
  const auto j = nlohmann::json::parse(q.metadata.at("longrun.quantization"));
  for (const auto& [name, layout] : j["weights"].items()) {
    EditableFile::Entry* w = out.find(name);
    EditableFile::Entry* s = out.find(name + ".scale");
    REQUIRE(w != nullptr);
    REQUIRE(s != nullptr);
    const int64_t rows = w->desc.dim(0), cols = w->desc.dim(1);
    std::vector<float> scale(size_t(s->desc.numel()));
    std::memcpy(scale.data(), s->bytes.data(), scale.size() * 4);
    std::vector<std::byte> f(size_t(rows * cols) * 4);
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v =
          float(int8_t(w->bytes[size_t(i)])) * scale[size_t(layout == "nk" ? i / cols : i % cols)];
      std::memcpy(f.data() + 4 * i, &v, 4);
    }
    w->desc = w->desc.with_dtype(DType::f32);
    w->bytes = std::move(f);
    out.remove(name + ".scale");
  }
  out.metadata.erase("longrun.quantization");
  return out;
}

std::vector<NamedTensor> inputs_for(const Model& m) {
  std::vector<NamedTensor> in;
  for (const std::string& name : m.required_inputs())
    in.push_back({name, ids_tensor(2, 7, [](int64_t b, int64_t i) { return 2 + (b * 13 + i * 5) % 30; })});
  return in;
}

void check_same_bytes(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : a) {
    CAPTURE(name);
    const Tensor& u = b.at(name);
    REQUIRE(t.desc() == u.desc());
    CHECK(std::memcmp(t.data<std::byte>(), u.data<std::byte>(), size_t(t.desc().nbytes())) == 0);
  }
}

TEST_CASE("quantized file: int8 sessions match the source bit for bit; f32 and bf16 run q * scale") {
  for (const std::string name : {"bert_tiny", "combiner_fixed_causal", "bart_tiny"}) {
    CAPTURE(name);
    const std::string src = golden_dir() + "/" + name + ".safetensors";
    TempFile out(name + ".safetensors");
    auto summary = convert::quantize_native_file(src, out.path);
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(summary->weights > 0);
    CHECK(summary->bytes_after < summary->bytes_before);
    MESSAGE(name << ": " << summary->weights << " weights quantized, " << summary->bytes_before << " -> "
                 << summary->bytes_after << " bytes");
    const std::shared_ptr<const Model> source = load_golden(name + ".safetensors");
    auto quantized = Model::load(out.path);
    REQUIRE_MESSAGE(quantized.ok(), quantized.status().to_string());
    // No f32 copy of a quantized weight: the model copies only its scales.
    EditableFile stored = EditableFile::read(out.path);
    const auto listing = nlohmann::json::parse(stored.metadata.at("longrun.quantization"))["weights"];
    int64_t scale_bytes = 0, quantized_elements = 0;
    for (const auto& [w, layout] : listing.items()) {
      REQUIRE(stored.find(w) != nullptr);
      REQUIRE(stored.find(w + ".scale") != nullptr);
      CHECK(stored.find(w)->desc.dtype() == DType::i8);
      quantized_elements += stored.find(w)->desc.numel();
      scale_bytes += int64_t(stored.find(w + ".scale")->bytes.size());
    }
    CHECK((*quantized)->weight_bytes_copied() == source->weight_bytes_copied() + scale_bytes);
    const std::vector<NamedTensor> in = inputs_for(*source);
    std::vector<std::string> names;
    std::vector<TensorDesc> descs;
    for (const NamedTensor& t : in) names.push_back(t.name), descs.push_back(t.tensor.desc());

    SessionOptions int8 = session_options();
    int8.precision = Precision::int8;
    auto a = run_model(*source, in, nullptr, &int8);
    if (!a.ok() && a.status().code() == StatusCode::unsupported) {
      MESSAGE("int8 on " << backend_name() << ": " << a.status().to_string());
    } else {
      REQUIRE_MESSAGE(a.ok(), a.status().to_string());
      auto b = run_model(**quantized, in, nullptr, &int8);
      REQUIRE_MESSAGE(b.ok(), b.status().to_string());
      check_same_bytes(*a, *b);
      // The int8 plan reads q in place (1 byte per element where the source maps 4) and
      // makes the same packed copies as on the source: nothing holds an f32 copy.
      auto sa = source->create_session(int8, names);
      auto sb = (*quantized)->create_session(int8, names);
      REQUIRE_MESSAGE(sa.ok(), sa.status().to_string());
      REQUIRE_MESSAGE(sb.ok(), sb.status().to_string());
      auto ra = (*sa)->memory_report(descs);
      auto rb = (*sb)->memory_report(descs);
      REQUIRE_MESSAGE(ra.ok(), ra.status().to_string());
      REQUIRE_MESSAGE(rb.ok(), rb.status().to_string());
      CHECK(rb->weight_bytes_mapped == ra->weight_bytes_mapped - 3 * quantized_elements);
      CHECK(rb->weight_bytes_copied <= ra->weight_bytes_copied);
    }

    auto plain = dequantized(EditableFile::read(out.path)).load();
    REQUIRE_MESSAGE(plain.ok(), plain.status().to_string());
    for (const Precision p : {Precision::f32, Precision::bf16}) {
      CAPTURE(precision_name(p));
      SessionOptions o = session_options();
      o.precision = p;
      auto c = run_model(**plain, in, nullptr, &o);
      if (!c.ok() && c.status().code() == StatusCode::unsupported) continue;
      REQUIRE_MESSAGE(c.ok(), c.status().to_string());
      auto d = run_model(**quantized, in, nullptr, &o);
      REQUIRE_MESSAGE(d.ok(), d.status().to_string());
      check_same_bytes(*c, *d);
    }
  }
}

}  // namespace
}  // namespace longrun::model_tests
