// longrun._longrun: the nanobind extension behind the Python package (python/README.md).
// The public classes and their docstrings are in python/longrun/__init__.py, which wraps
// these; everything here is a thin layer over the C++ API that
//   - turns every non-OK Status into the longrun.Error subclass of its code (the classes are
//     registered from Python with _set_error_classes), message unchanged;
//   - releases the GIL around every call that loads, plans, runs, tokenizes or converts;
//   - passes C-contiguous numpy arrays to Session::run without copying them (their buffers
//     are borrowed for the call) and hands each output Tensor to numpy without a copy.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert_file.h"
#include "longrun/dtype.h"
#include "longrun/longrun.h"
#include "longrun/models/generate.h"
#include "longrun/models/model.h"
#include "longrun/models/text.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"
#include "longrun/tokenizer.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace longrun;

// A failed Status on its way to Python (translated in the module's exception translator).
struct StatusError {
  StatusCode code;
  std::string message;
};

constexpr int kNumCodes = int(StatusCode::internal) + 1;
std::array<PyObject*, kNumCodes + 1> g_error_classes{};  // by code; [kNumCodes] = closed
constexpr int kClosed = kNumCodes;

[[noreturn]] void raise(const Status& s) { throw StatusError{s.code(), s.message()}; }
[[noreturn]] void raise_closed(const char* what) {
  throw StatusError{StatusCode(kClosed), std::string(what) + " is closed"};
}
template <typename T>
T value_or_raise(Result<T>&& r) {
  if (!r.ok()) raise(r.status());
  return std::move(r).value();
}

// ---- numpy <-> Tensor ----------------------------------------------------------------------

using InArray = nb::ndarray<nb::ro, nb::device::cpu>;

std::optional<DType> dtype_of(const nb::dlpack::dtype& t) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  if (t.code == uint8_t(dtype_code::Float) && t.bits == 32) return DType::f32;
  if (t.code == uint8_t(dtype_code::Float) && t.bits == 16) return DType::f16;
  if (t.code == uint8_t(dtype_code::Bfloat) && t.bits == 16) return DType::bf16;
  if (t.code == uint8_t(dtype_code::Int) && t.bits == 32) return DType::i32;
  if (t.code == uint8_t(dtype_code::Int) && t.bits == 64) return DType::i64;
  if (t.code == uint8_t(dtype_code::UInt) && t.bits == 8) return DType::u8;
  return std::nullopt;
}

// A view of the array's own buffer; refused (invalid_argument) unless C-contiguous with a
// longrun dtype. The Python layer converts non-contiguous arrays before calling.
TensorView borrow(const std::string& name, const InArray& a) {
  const auto dtype = dtype_of(a.dtype());
  if (!dtype)
    raise(invalid_argument(
        "input '" + name +
        "': the array's dtype is not one longrun takes (float32, float16, int32, int64, uint8)"));
  std::vector<int64_t> dims(a.ndim());
  int64_t expected_stride = 1;
  bool contiguous = true;
  for (size_t i = a.ndim(); i-- > 0;) {
    dims[i] = int64_t(a.shape(i));
    if (dims[i] != 1 && a.stride(i) != expected_stride) contiguous = false;
    expected_stride *= dims[i];
  }
  if (!contiguous) raise(invalid_argument("input '" + name + "': the array is not C-contiguous"));
  auto desc = TensorDesc::make(*dtype, dims);
  if (!desc.ok()) raise(desc.status().with_context("input '" + name + "'"));
  return TensorView{*desc, const_cast<void*>(a.data())};
}

nb::object to_numpy(Tensor&& t) {
  auto* owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape;
  for (int64_t d : owned->desc().dims()) shape.push_back(size_t(d));
  nb::dlpack::dtype dt;
  switch (owned->dtype()) {
    case DType::f32: dt = nb::dtype<float>(); break;
    case DType::i32: dt = nb::dtype<int32_t>(); break;
    case DType::i64: dt = nb::dtype<int64_t>(); break;
    case DType::u8: dt = nb::dtype<uint8_t>(); break;
    case DType::i8: dt = nb::dtype<int8_t>(); break;
    case DType::f16: dt = {uint8_t(nb::dlpack::dtype_code::Float), 16, 1}; break;
    case DType::bf16: dt = {uint8_t(nb::dlpack::dtype_code::Bfloat), 16, 1}; break;
  }
  nb::ndarray<nb::numpy> arr(owned->bytes().data(), shape.size(), shape.data(), owner, nullptr, dt);
  return nb::cast(arr, nb::rv_policy::reference);
}

// ---- Tokenizer ------------------------------------------------------------------------------

struct PyTokenizer {
  Tokenizer tokenizer;

  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens) const {
    nb::gil_scoped_release nogil;
    return value_or_raise(tokenizer.encode(text, add_special_tokens));
  }
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
    nb::gil_scoped_release nogil;
    return value_or_raise(tokenizer.decode(ids, skip_special_tokens));
  }
  nb::tuple encode_batch(const std::vector<std::string>& texts, bool add_special_tokens, int64_t max_length,
                         bool pad_to_max_length) const {
    TokenBatch batch;
    {
      nb::gil_scoped_release nogil;
      batch = value_or_raise(encode_batch_impl(texts, add_special_tokens, max_length, pad_to_max_length));
    }
    return nb::make_tuple(to_numpy(std::move(batch.input_ids)), to_numpy(std::move(batch.attention_mask)));
  }
  Result<TokenBatch> encode_batch_impl(const std::vector<std::string>& texts, bool add_special_tokens,
                                       int64_t max_length, bool pad_to_max_length) const {
    return longrun::encode_batch(tokenizer, texts,
                                 {.add_special_tokens = add_special_tokens,
                                  .max_length = max_length,
                                  .pad_to_max_length = pad_to_max_length});
  }
};

// ---- Model ----------------------------------------------------------------------------------

struct PyModel {
  std::shared_ptr<const Model> model;
  std::optional<Tokenizer> tokenizer;

  const Model& get() const {
    if (!model) raise_closed("the model");
    return *model;
  }
};

PyModel load_model(const std::string& path, bool debug_outputs) {
  nb::gil_scoped_release nogil;
  auto file = value_or_raise(SafetensorsFile::open(path));
  PyModel m;
  m.tokenizer = value_or_raise(file_tokenizer(*file));
  m.model = value_or_raise(Model::from_file(file, {.debug_outputs = debug_outputs}));
  return m;
}

// ---- Session --------------------------------------------------------------------------------

struct PySession {
  std::shared_ptr<const Model> model;
  std::optional<Tokenizer> tokenizer;
  SessionOptions options;
  std::mutex mu;  // guards sessions, generator, closed
  bool closed = false;
  // One C++ session per set of input names, in the order given (each plans its own shapes).
  std::map<std::vector<std::string>, std::shared_ptr<Session>> sessions;
  std::shared_ptr<Generator> generator;
  std::mutex generate_mu;  // one generation at a time per session

  // The model, or ClosedError; a copy, so that close() on another thread cannot free it
  // while this call uses it.
  std::shared_ptr<const Model> model_ref() {
    std::lock_guard lock(mu);
    if (closed) raise_closed("the session");
    return model;
  }

  std::shared_ptr<Session> session_for(const std::vector<std::string>& names) {
    std::lock_guard lock(mu);
    if (closed) raise_closed("the session");
    auto it = sessions.find(names);
    if (it != sessions.end()) return it->second;
    auto created = model->create_session(options, names);
    if (!created.ok()) raise(created.status());
    std::shared_ptr<Session> s = std::move(created).value();
    sessions.emplace(names, s);
    return s;
  }

  nb::list run(const std::vector<std::string>& names, const std::vector<InArray>& arrays) {
    if (names.size() != arrays.size()) raise(invalid_argument("run: names and arrays differ in number"));
    std::vector<NamedTensorRef> refs;
    for (size_t i = 0; i < names.size(); ++i) refs.push_back({names[i], borrow(names[i], arrays[i])});
    std::vector<NamedTensor> out;
    {
      nb::gil_scoped_release nogil;
      std::shared_ptr<Session> s = session_for(names);
      out = value_or_raise(s->run(refs));
    }
    nb::list result;
    for (NamedTensor& t : out) result.append(nb::make_tuple(t.name, to_numpy(std::move(t.tensor))));
    return result;
  }

  nb::object embed(const std::vector<std::string>& texts, const std::string& pooling_name, bool normalize,
                   int64_t max_length) {
    Tensor pooled;
    {
      nb::gil_scoped_release nogil;
      const std::shared_ptr<const Model> m = model_ref();
      if (!tokenizer)
        raise(invalid_argument(m->path() + ": embed needs a tokenizer in the model file (metadata '" +
                               std::string(kTokenizerMetadataKey) + "'), and this file has none"));
      const Pooling pooling = value_or_raise(parse_pooling(pooling_name));
      const auto accepted = m->input_names();
      const bool has_mask = std::find(accepted.begin(), accepted.end(), "attention_mask") != accepted.end();
      pooled = has_mask ? embed_batch(*m, texts, pooling, normalize, max_length)
                        : embed_one_by_one(*m, texts, pooling, normalize, max_length);
    }
    return to_numpy(std::move(pooled));
  }

  Tensor embed_batch(const Model& m, const std::vector<std::string>& texts, Pooling pooling, bool normalize,
                     int64_t max_length) {
    TokenBatch batch = value_or_raise(encode_batch(*tokenizer, texts, {.max_length = max_length}));
    std::shared_ptr<Session> s = session_for({"input_ids", "attention_mask"});
    const NamedTensorRef in[] = {{"input_ids", batch.input_ids.view()},
                                 {"attention_mask", batch.attention_mask.view()}};
    std::vector<NamedTensor> out = value_or_raise(s->run(in));
    const TensorView mask = batch.attention_mask.view();
    return value_or_raise(pool_embeddings(hidden(m, out).view(), &mask, pooling, normalize));
  }

  // A model without attention_mask: each text alone (B = 1, no padding), as longrun-demo.
  Tensor embed_one_by_one(const Model& m, const std::vector<std::string>& texts, Pooling pooling,
                          bool normalize, int64_t max_length) {
    std::shared_ptr<Session> s = session_for({"input_ids"});
    std::vector<Tensor> rows;
    for (size_t i = 0; i < texts.size(); ++i) {
      TokenBatch one =
          value_or_raise(encode_batch(*tokenizer, std::span(&texts[i], 1), {.max_length = max_length}));
      const NamedTensorRef in[] = {{"input_ids", one.input_ids.view()}};
      std::vector<NamedTensor> out = value_or_raise(s->run(in));
      rows.push_back(value_or_raise(pool_embeddings(hidden(m, out).view(), nullptr, pooling, normalize)));
    }
    if (rows.empty()) raise(invalid_argument("embed: no texts"));
    const int64_t width = rows.front().desc().dim(1);
    const int64_t dims[] = {int64_t(rows.size()), width};
    Tensor all = value_or_raise(Tensor::zeros(DType::f32, dims));
    for (size_t i = 0; i < rows.size(); ++i)
      std::copy(rows[i].data<float>(), rows[i].data<float>() + width, all.data<float>() + int64_t(i) * width);
    return all;
  }

  static Tensor& hidden(const Model& m, std::vector<NamedTensor>& out) {
    for (NamedTensor& t : out)
      if (t.name == "last_hidden_state") return t.tensor;
    raise(invalid_argument(m.path() + ": the model has no last_hidden_state output to embed"));
  }

  nb::tuple generate(const InArray& ids, std::optional<InArray> mask, int64_t max_new_tokens, int num_beams,
                     int64_t min_length, int64_t no_repeat_ngram_size, double length_penalty,
                     int num_return_sequences) {
    const TensorView ids_view = borrow("input_ids", ids);
    std::optional<TensorView> mask_view;
    if (mask) mask_view = borrow("attention_mask", *mask);
    GenerateOptions go;
    go.max_new_tokens = max_new_tokens;
    go.num_beams = num_beams;
    go.min_length = min_length;
    go.no_repeat_ngram_size = no_repeat_ngram_size;
    go.length_penalty = length_penalty;
    go.num_return_sequences = num_return_sequences;
    GenerateResult r;
    {
      nb::gil_scoped_release nogil;
      std::shared_ptr<Generator> gen;
      {
        std::lock_guard lock(mu);
        if (closed) raise_closed("the session");
        if (!generator) generator = value_or_raise(Generator::create(model, options));
        gen = generator;
      }
      std::lock_guard one_at_a_time(generate_mu);
      r = value_or_raise(gen->generate(ids_view, mask_view ? &*mask_view : nullptr, go));
    }
    return nb::make_tuple(r.sequences, r.scores, r.steps);
  }

  void close() {
    nb::gil_scoped_release nogil;
    std::lock_guard lock(mu);
    closed = true;
    sessions.clear();  // a run in flight keeps its session alive until it returns
    generator.reset();
    model.reset();
  }
};

std::unique_ptr<PySession> make_session(const PyModel& m, const std::string& backend, int threads,
                                        int64_t memory_limit, bool deterministic,
                                        const std::string& precision) {
  const Model& model = m.get();
  const std::optional<Precision> parsed = parse_precision(precision);
  if (!parsed) raise(invalid_argument("precision: expected f32, bf16 or int8, found '" + precision + "'"));
  if (threads < 0 || threads > 1024)
    raise(invalid_argument("threads: expected 0 (all hardware threads) .. 1024, found " +
                           std::to_string(threads)));
  if (memory_limit < 0)
    raise(
        invalid_argument("memory_limit: expected a byte count >= 0, found " + std::to_string(memory_limit)));
  auto s = std::make_unique<PySession>();
  s->model = model.shared_from_this();
  s->tokenizer = m.tokenizer;
  s->options.backend = backend;
  s->options.threads = threads;
  s->options.memory_limit_bytes = memory_limit;
  s->options.deterministic = deterministic;
  s->options.precision = *parsed;
  // Created once now so that a bad backend or option fails here, not at the first run.
  (void)s->session_for(model.required_inputs());
  return s;
}

nb::dict convert_checkpoint(const std::string& src, const std::string& dst, const std::string& arch,
                            std::optional<std::string> config_json, const std::vector<std::string>& sets,
                            const std::string& dtype, const std::string& from,
                            const std::string& tokenizer_dir, bool no_tokenizer,
                            const std::string& quantize) {
  convert::ConvertFileOptions o;
  o.from = from;
  o.arch = arch;
  o.config_json = std::move(config_json);
  o.sets = sets;
  o.tokenizer_dir = tokenizer_dir;
  o.no_tokenizer = no_tokenizer;
  if (!quantize.empty() && quantize != "int8")
    raise(invalid_argument("quantize: expected 'int8', found '" + quantize + "'"));
  o.quantize = quantize;
  if (!dtype.empty()) {
    o.dtype = parse_dtype(dtype);
    if (!o.dtype || !dtype_is_float(*o.dtype))
      raise(invalid_argument("dtype: expected 'f32', 'f16' or 'bf16', found '" + dtype + "'"));
  }
  convert::ConvertFileResult r;
  {
    nb::gil_scoped_release nogil;
    r = value_or_raise(convert::convert_file(src, dst, o));
  }
  nb::dict d;
  d["arch"] = r.arch;
  d["layout"] = r.summary.layout;
  d["mapped"] = r.summary.mapped;
  d["ignored"] = r.summary.ignored;
  d["retied"] = r.summary.retied;
  d["bytes"] = r.summary.bytes;
  d["tokenizer"] = !r.tokenizer_metadata.empty();
  if (r.quantized) {
    nb::dict q;
    q["weights"] = r.quantized->weights;
    q["bytes_before"] = r.quantized->bytes_before;
    q["bytes_after"] = r.quantized->bytes_after;
    d["quantized"] = q;
  } else {
    d["quantized"] = nb::none();
  }
  return d;
}

}  // namespace

NB_MODULE(_longrun, m) {
  m.doc() = "longrun's C++ runtime (internal: use the longrun package)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyObject* cls =
          (int(e.code) >= 0 && int(e.code) <= kNumCodes) ? g_error_classes[size_t(e.code)] : nullptr;
      PyErr_SetString(cls != nullptr ? cls : PyExc_RuntimeError, e.message.c_str());
    }
  });

  m.def(
      "_set_error_classes",
      [](nb::dict classes) {
        for (int c = 1; c <= kNumCodes; ++c) {
          const std::string name = c == kClosed ? "closed" : std::string(status_code_name(StatusCode(c)));
          if (!classes.contains(name.c_str())) continue;
          nb::object cls = classes[name.c_str()];
          Py_XDECREF(g_error_classes[size_t(c)]);
          g_error_classes[size_t(c)] = cls.release().ptr();
        }
      },
      "classes"_a);
  m.def("version", [] { return std::string(lr_version()); });
  m.def("system_info", [] { return std::string(lr_system_info()); });
  m.def("architectures", &model_architectures);

  nb::class_<PyTokenizer>(m, "Tokenizer")
      .def("encode", &PyTokenizer::encode, "text"_a, "add_special_tokens"_a = true)
      .def("decode", &PyTokenizer::decode, "ids"_a, "skip_special_tokens"_a = true)
      .def("encode_batch", &PyTokenizer::encode_batch, "texts"_a, "add_special_tokens"_a, "max_length"_a,
           "pad_to_max_length"_a)
      .def_prop_ro("vocab_size", [](const PyTokenizer& t) { return t.tokenizer.vocab_size(); })
      .def_prop_ro("pad_id", [](const PyTokenizer& t) { return t.tokenizer.pad_id(); })
      .def_prop_ro("description", [](const PyTokenizer& t) { return t.tokenizer.description(); })
      .def("token_to_id",
           [](const PyTokenizer& t, const std::string& s) { return t.tokenizer.token_to_id(s); })
      .def("id_to_token",
           [](const PyTokenizer& t, int64_t id) { return std::string(t.tokenizer.id_to_token(id)); });

  nb::class_<PyModel>(m, "Model")
      .def_static("load", &load_model, "path"_a, "debug_outputs"_a = false)
      .def_prop_ro("arch", [](const PyModel& p) { return p.get().arch(); })
      .def_prop_ro("path", [](const PyModel& p) { return p.get().path(); })
      .def_prop_ro("config_json", [](const PyModel& p) { return p.get().config_json(); })
      .def_prop_ro("inputs",
                   [](const PyModel& p) {
                     nb::list l;
                     for (const ModelInput& in : p.get().inputs()) {
                       std::vector<std::string> dtypes;
                       for (DType d : in.dtypes) dtypes.emplace_back(dtype_name(d));
                       l.append(nb::make_tuple(in.name, in.required, dtypes, in.description));
                     }
                     return l;
                   })
      .def_prop_ro("output_names", [](const PyModel& p) { return p.get().output_names(); })
      .def_prop_ro("num_parameters", [](const PyModel& p) { return p.get().num_parameters(); })
      .def_prop_ro("weight_bytes", [](const PyModel& p) { return p.get().weight_bytes(); })
      .def_prop_ro("tokenizer",
                   [](const PyModel& p) -> std::optional<PyTokenizer> {
                     p.get();
                     if (!p.tokenizer) return std::nullopt;
                     return PyTokenizer{*p.tokenizer};
                   })
      .def_prop_ro("closed", [](const PyModel& p) { return !p.model; })
      .def("close", [](PyModel& p) {
        p.model.reset();
        p.tokenizer.reset();
      });

  nb::class_<PySession>(m, "Session")
      .def_static("create", &make_session, "model"_a, "backend"_a, "threads"_a, "memory_limit"_a,
                  "deterministic"_a, "precision"_a)
      .def("run", &PySession::run, "names"_a, "arrays"_a)
      .def("embed", &PySession::embed, "texts"_a, "pooling"_a, "normalize"_a, "max_length"_a)
      .def("generate", &PySession::generate, "input_ids"_a, "attention_mask"_a.none(), "max_new_tokens"_a,
           "num_beams"_a, "min_length"_a, "no_repeat_ngram_size"_a, "length_penalty"_a,
           "num_return_sequences"_a)
      .def("backend_description",
           [](PySession& s) {
             auto session = s.session_for(s.model_ref()->required_inputs());
             return session->backend().description();
           })
      .def_prop_ro("closed",
                   [](PySession& s) {
                     std::lock_guard lock(s.mu);
                     return s.closed;
                   })
      .def("close", &PySession::close);

  m.def("convert", &convert_checkpoint, "src"_a, "dst"_a, "arch"_a, "config_json"_a.none(), "sets"_a,
        "dtype"_a, "from_"_a, "tokenizer_dir"_a, "no_tokenizer"_a, "quantize"_a);
}
