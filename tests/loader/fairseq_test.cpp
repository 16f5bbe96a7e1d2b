// fairseq checkpoints (tests/golden/checkpoints/fairseq.pt, a torch.save'd fairseq-layout dict
// with a pickled training object of an unknown module; zips built here with an enum in args or
// in the model): unknown globals outside "model" stay opaque without --lenient, under "model"
// they are refused by name; the reader reads cfg.model or args as JSON, keeps only the model's
// tensors, splits the fused in_proj into q/k/v views bit for bit, renames layer_norms.{0,1} and
// drops the version/sinusoidal buffers and the optimizer state with reasons.
#include "fairseq.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "convert_test_util.h"
#include "readers.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;

namespace {

// Writes `bytes` to a temporary file for read_fairseq (which takes a path); removed on exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes) {
    path =
        (std::filesystem::temp_directory_path() / ("longrun-fairseq-" + std::to_string(::getpid()) + ".pt"))
            .string();
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

// A fairseq torch.save zip: {"model": OrderedDict(w=f32[4], <model_extra>), "args": Namespace(
// arch="transformer", dataset_impl=<an enum of fairseq's own module>)}.
std::string fairseq_zip(const std::string& model_extra) {
  using namespace pk;
  const std::string enum_value =
      global("fairseq.dataclass.constants", "DatasetImpl") + "(" + str("mmap") + "tR";
  const std::string model = global("collections", "OrderedDict") + ")R(" + str("w") +
                            tensor(storage("FloatStorage", "0", 4), 0, {4}, {1}) +
                            (model_extra.empty() ? "" : str("x") + enum_value) + "u";
  const std::string args = global("argparse", "Namespace") + ")\x81}(" + str("arch") + str("transformer") +
                           str("dataset_impl") + enum_value + "ub";
  return make_torch_zip(proto() + "}(" + str("model") + model + str("args") + args + "u.",
                        {{"0", std::string(16, '\0')}});
}

}  // namespace

TEST_CASE("fairseq: unknown globals outside \"model\" stay opaque without --lenient") {
  // The fixture pickles a training meter under extra_state.
  auto f = read_fairseq(checkpoint_dir() + "/fairseq.pt", {});
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK(f->source.tensors.size() == 8);

  // An enum in args: the hyper-parameters keep the rest, the enum is an opaque description.
  TempFile args_enum(fairseq_zip(""));
  auto a = read_fairseq(args_enum.path, {});
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  CHECK(a->hyperparameters_from == "args");
  CHECK(a->hyperparameters_json ==
        R"j({"arch":"transformer","dataset_impl":"opaque fairseq.dataclass.constants.DatasetImpl(...)"})j");
  REQUIRE(a->source.tensors.size() == 1);
  CHECK(a->source.tensors[0].name == "w");

  // Read as a plain torch file (not fairseq), the same archive is strict.
  auto plain = read_checkpoint(args_enum.path, "pytorch", {});
  REQUIRE_FALSE(plain.ok());
  CHECK_MESSAGE(plain.status().message().find("refused global 'fairseq.dataclass.constants.DatasetImpl'") !=
                    std::string::npos,
                plain.status().message());
}

TEST_CASE("fairseq: an unknown global under \"model\" is still refused by name") {
  TempFile model_enum(fairseq_zip("in model"));
  auto f = read_fairseq(model_enum.path, {});
  REQUIRE_FALSE(f.ok());
  CHECK_MESSAGE(
      f.status().message().find("refused object 'fairseq.dataclass.constants.DatasetImpl(...)' in the "
                                "\"model\" state dict") != std::string::npos,
      f.status().message());
  // Exec gadgets stay refused anywhere, args included.
  using namespace pk;
  TempFile gadget(make_torch_zip(
      proto() + "}(" + str("model") + "}" + str("args") + global("os", "system") + "(" + str("id") + "tRu.",
      {}));
  auto g = read_fairseq(gadget.path, {});
  REQUIRE_FALSE(g.ok());
  CHECK_MESSAGE(g.status().message().find("refused global 'os.system'") != std::string::npos,
                g.status().message());
}

TEST_CASE("fairseq: lenient read, hyper-parameters, upgrades and in_proj split") {
  ReadOptions o;
  o.lenient = true;
  auto f = read_fairseq(checkpoint_dir() + "/fairseq.pt", o);
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK(f->hyperparameters_from == "cfg.model");
  CHECK(f->hyperparameters_json == R"({"arch":"transformer","dropout":0.1,"encoder_embed_dim":4})");
  std::map<std::string, const SourceTensor*> by_name;
  for (const SourceTensor& t : f->source.tensors) by_name[t.name] = &t;
  CHECK(by_name.size() == 8);
  for (const char* n :
       {"encoder.layers.0.self_attn_layer_norm.weight", "encoder.layers.0.final_layer_norm.weight"})
    CHECK_MESSAGE(by_name.count(n), n);
  CHECK(f->dropped.size() == 3);  // optimizer state, _float_tensor, version

  // q/k/v bias = rows of arange(12); weight rows are slices of the fused matrix.
  for (int i = 0; i < 3; ++i) {
    const std::string p = std::string("encoder.layers.0.self_attn.") + "qkv"[i] + "_proj.";
    REQUIRE(by_name.count(p + "bias"));
    const auto b = materialize(*by_name[p + "bias"]);
    std::vector<float> v(4);
    std::memcpy(v.data(), b.data(), 16);
    CHECK(v == std::vector<float>{float(4 * i), float(4 * i + 1), float(4 * i + 2), float(4 * i + 3)});
    REQUIRE(by_name.count(p + "weight"));
    CHECK(by_name[p + "weight"]->sizes == std::vector<int64_t>{4, 4});
  }
  const auto q = materialize(*by_name["encoder.layers.0.self_attn.q_proj.weight"]);
  const auto k = materialize(*by_name["encoder.layers.0.self_attn.k_proj.weight"]);
  CHECK(q != k);

  SourceTensor bad = *by_name["encoder.layers.0.self_attn.q_proj.bias"];
  bad.name = "x.in_proj_bias";
  bad.sizes = {4};
  CHECK_FALSE(split_in_proj(bad).ok());
}

TEST_CASE("fairseq: a file without a model dict is refused") {
  ReadOptions o;
  auto f = read_fairseq(checkpoint_dir() + "/mixed.pt", o);
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().message().find("no top-level \"model\" state dict") != std::string::npos);
}

TEST_CASE("fairseq: hyper-parameter strings that are not UTF-8 do not abort the JSON conversion") {
  using namespace pk;
  // {"model": {}, "cfg": {"model": {"arch": b"\xff\xfe" (a protocol-2 SHORT_BINSTRING)}}}
  const std::string bad = std::string("U\x02\xff\xfe", 4);
  const std::string p = proto() + "}(" + str("model") + "}" + str("cfg") + "}(" + str("model") + "}(" +
                        str("arch") + bad + "uuu.";
  const auto b = bytes_of(p);
  PickleOptions o;
  auto doc = parse_pickle(b, o, "t.pkl");
  REQUIRE_MESSAGE(doc.ok(), doc.status().to_string());
  SourceCheckpoint ck;
  ck.pickle_root = (*doc)->root();
  auto f = fairseq_from(std::move(ck), "t.pkl");
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK(f->hyperparameters_from == "cfg.model");
  CHECK(f->hyperparameters_json == "{\"arch\":\"\xef\xbf\xbd\xef\xbf\xbd\"}");  // U+FFFD for each byte
}
