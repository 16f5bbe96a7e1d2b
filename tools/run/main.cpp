// longrun-run: runs a native longrun model file on named inputs and prints or saves the
// outputs, with optional memory and per-op time reports. See usage() for the flags.
//
// Exit status: 0 on success, 2 for a usage error, 1 when loading or running fails (the
// message names the file, tensor or input).
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/backend.h"
#include "longrun/longrun.h"
#include "longrun/models/model.h"
#include "longrun/models/text.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"
#include "longrun/text_file.h"
#include "longrun/thread_pool.h"
#include "longrun/tokenizer.h"
#include "run/generate_command.h"

namespace {

using namespace longrun;
using Clock = std::chrono::steady_clock;

// --text-file: the largest file read (tokenizing takes 10 to 15 bytes of memory per byte of
// text: the code points, their normalised copy and the ids).
constexpr size_t kMaxTextFileBytes = size_t{256} << 20;

void usage() {
  std::string archs;
  for (const std::string& a : model_architectures()) archs += (archs.empty() ? "" : ", ") + a;
  std::string backends;
  for (const std::string& b : backend_names()) backends += (backends.empty() ? "" : "|") + b;
  std::printf(
      "usage: longrun-run --model MODEL.safetensors (--input IN.safetensors | --ids \"ID ID ...\" ... |\n"
      "                   (--text \"TEXT\" | --text-file FILE) ... [--truncation] [--max-length N])\n"
      "                   [--backend %s] [--threads N] [--cpus LIST] [--spin-us US] [--no-auto-affinity]\n"
      "                   [--isa scalar|avx2|avx512] [--precision f32|bf16|int8]\n"
      "                   [--output OUT.safetensors] [--memory] [--profile] [--repeat K] [--debug-outputs]\n"
      "\n"
      "Runs a native longrun model file (safetensors with longrun.format/arch/config metadata;\n"
      "architectures in this build: %s) once on the given inputs.\n"
      "\n"
      "  --model PATH       the model file (memory-mapped; f32 weights are used in place)\n"
      "  --input PATH       a safetensors file of named input tensors: input_ids (i32 or i64 [B, N])\n"
      "                     and optionally attention_mask ([B, N], 1 = token, 0 = padding) and, for\n"
      "                     the bert/roberta families, token_type_ids (i32 or i64 [B, N]). If some\n"
      "                     tensors are named \"input/<name>\" (as the golden .io files), only those are\n"
      "                     used; otherwise every tensor must be a model input.\n"
      "  --ids \"0 5 9 ...\"  one sequence of token ids (i64); repeat for a batch of equal lengths\n"
      "  --text \"TEXT\"      one UTF-8 text, tokenized with the model file's tokenizer (metadata\n"
      "                     \"longrun.tokenizer\"); repeat for a batch (shorter ones are padded at the\n"
      "                     end and masked out with attention_mask when the model accepts one)\n"
      "  --text-file FILE   like --text, the text read from FILE (UTF-8, at most %zu MiB; - reads\n"
      "                     standard input); --text and --text-file mix, in the order given\n"
      "  --truncation       a text longer than the model's maximum input length (the config's\n"
      "                     max positions, e.g. max_position_embeddings) is cut to that length,\n"
      "                     keeping the special tokens the tokenizer adds ([CLS] ... [SEP]);\n"
      "                     without it such a text is an error stating both lengths\n"
      "  --max-length N     cut every text to at most N tokens, special tokens included\n"
      "                     (implies --truncation; N at most the model's maximum)\n"
      "  --backend NAME     reference, cpu (default) or cuda\n"
      "  --threads N        worker threads for the cpu backend (default 1; 0 = all hardware threads)\n"
      "  --cpus LIST        cpu backend: pin the pool's threads to these CPU ids, e.g. 0,1 (thread i\n"
      "                     on CPU i mod count; with --threads 0, one thread per CPU)\n"
      "  --spin-us US       cpu backend: after each parallel kernel the workers busy-wait US\n"
      "                     microseconds (0 .. 1000000; default 0) instead of sleeping, so the\n"
      "                     next kernel starts on every thread at once (costs CPU time while idle;\n"
      "                     on VMs use it with --cpus)\n"
      "  --no-auto-affinity cpu backend, no --cpus: never pin (by default, when the threads are as\n"
      "                     many as the CPUs this process may use, each parallel kernel pins the\n"
      "                     calling thread to its CPU and the workers to the others)\n"
      "  --isa NAME         cpu backend: force an ISA level (default: the best this CPU has)\n"
      "  --precision P      f32 (default), bf16 (cpu backend, avx2 and up: linear layers from\n"
      "                     bf16-rounded inputs and weights, f32 sums) or int8 (cpu backend, avx2\n"
      "                     and up: linear layers on the int8 GEMM, per-channel weights and per-row\n"
      "                     activations); other ops f32; on the reference backend both are the\n"
      "                     formats' scalar emulations\n"
      "  --output PATH      write every output tensor to PATH (safetensors); without it a summary is\n"
      "                     printed (shape and first values of each output)\n"
      "  --memory           print the memory plan (arena, weights mapped/copied, workspaces, inputs,\n"
      "                     outputs) and the process's peak resident memory (getrusage)\n"
      "  --profile          print the time per op kind and the slowest nodes, of the last run with\n"
      "                     --repeat (the first run carries one-time costs)\n"
      "  --repeat K         run K times after the first and report min and median (default 0)\n"
      "  --debug-outputs    add the model's intermediate values (\"debug.*\") to the outputs\n"
      "  --version          print longrun's version and exit\n"
      "  --system-info      print version, build options, CPU ISA levels, threads, backends and CUDA\n"
      "                     devices (or why there are none), and exit\n"
      "\n"
      "Times: \"prepare\" = graph build + memory plan + backend preparation for this input shape\n"
      "(done once per shape); \"run\" = one Session::run.\n"
      "\n"
      "Generation (encoder-decoder models):\n%s",
      backends.c_str(), archs.c_str(), kMaxTextFileBytes >> 20, longrun_run::generation_usage());
}

struct Options {
  std::string model;
  std::string input;
  std::vector<std::vector<int64_t>> ids;
  // --text and --text-file in command-line order: the text, or the file to read it from.
  struct TextArg {
    bool from_file = false;
    std::string value;
  };
  std::vector<TextArg> texts;
  bool truncation = false;
  int64_t max_length = 0;  // 0: the model's maximum
  std::string backend = "cpu";
  int threads = 1;
  std::vector<int> cpus;
  int spin_us = 0;
  bool auto_affinity = true;
  std::string isa;
  Precision precision = Precision::f32;
  std::string output;
  bool memory = false;
  bool profile = false;
  int repeat = 0;
  bool debug_outputs = false;
  longrun_run::GenerationFlags generation;
};

bool parse_int(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Returns 0 to go on, else the exit status (0 for --help is signalled by *done).
int parse(int argc, char** argv, Options* o, bool* done) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view* v) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "longrun-run: %s needs a value (see --help)\n", argv[i]);
        return false;
      }
      *v = argv[++i];
      return true;
    };
    std::string_view v;
    if (a == "--help" || a == "-h") {
      usage();
      *done = true;
      return 0;
    } else if (const int g = longrun_run::parse_generation_flag(argc, argv, &i, &o->generation); g >= 0) {
      if (g != 0) return g;
    } else if (a == "--version") {
      std::printf("longrun-run %s\n", lr_version());
      *done = true;
      return 0;
    } else if (a == "--system-info") {
      std::fputs(lr_system_info(), stdout);
      *done = true;
      return 0;
    } else if (a == "--model") {
      if (!value(&v)) return 2;
      o->model = v;
    } else if (a == "--input") {
      if (!value(&v)) return 2;
      o->input = v;
    } else if (a == "--ids") {
      if (!value(&v)) return 2;
      std::vector<int64_t> row;
      size_t pos = 0;
      const std::string s(v);
      while (pos < s.size()) {
        const size_t start = s.find_first_not_of(" \t,", pos);
        if (start == std::string::npos) break;
        const size_t end = std::min(s.find_first_of(" \t,", start), s.size());
        int64_t id = 0;
        if (!parse_int(std::string_view(s).substr(start, end - start), &id)) {
          std::fprintf(stderr, "longrun-run: --ids: '%s' is not an integer\n",
                       s.substr(start, end - start).c_str());
          return 2;
        }
        row.push_back(id);
        pos = end;
      }
      if (row.empty()) {
        std::fprintf(stderr, "longrun-run: --ids: no ids given\n");
        return 2;
      }
      if (!o->ids.empty() && row.size() != o->ids.front().size()) {
        std::fprintf(stderr,
                     "longrun-run: --ids: every sequence of a batch needs the same length (%zu, found %zu)\n",
                     o->ids.front().size(), row.size());
        return 2;
      }
      o->ids.push_back(std::move(row));
    } else if (a == "--text") {
      if (!value(&v)) return 2;
      o->texts.push_back({false, std::string(v)});
    } else if (a == "--text-file") {
      if (!value(&v)) return 2;
      if (v.empty()) {
        std::fprintf(stderr, "longrun-run: --text-file: empty file name (use - for standard input)\n");
        return 2;
      }
      if (v == "-" && std::any_of(o->texts.begin(), o->texts.end(),
                                  [](const Options::TextArg& t) { return t.from_file && t.value == "-"; })) {
        std::fprintf(stderr, "longrun-run: --text-file: standard input (-) can be read only once\n");
        return 2;
      }
      o->texts.push_back({true, std::string(v)});
    } else if (a == "--truncation") {
      o->truncation = true;
    } else if (a == "--max-length") {
      int64_t n = 0;
      if (!value(&v)) return 2;
      if (!parse_int(v, &n) || n < 1 || n > (int64_t(1) << 30)) {
        std::fprintf(stderr, "longrun-run: --max-length: expected 1..%lld, found '%s'\n",
                     static_cast<long long>(int64_t(1) << 30), std::string(v).c_str());
        return 2;
      }
      o->max_length = n;
      o->truncation = true;
    } else if (a == "--backend") {
      if (!value(&v)) return 2;
      o->backend = v;
    } else if (a == "--threads") {
      int64_t n = 0;
      if (!value(&v)) return 2;
      if (!parse_int(v, &n) || n < 0 || n > 4096) {
        std::fprintf(stderr, "longrun-run: --threads: expected 0..4096, found '%s'\n",
                     std::string(v).c_str());
        return 2;
      }
      o->threads = int(n);
    } else if (a == "--cpus") {
      if (!value(&v)) return 2;
      o->cpus.clear();
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        int64_t cpu = 0;
        if (!parse_int(v.substr(at, comma - at), &cpu) || cpu < 0 || cpu > 65535) {
          std::fprintf(stderr,
                       "longrun-run: --cpus: expected CPU ids 0..65535 separated by commas, found '%s'\n",
                       std::string(v).c_str());
          return 2;
        }
        o->cpus.push_back(int(cpu));
        at = comma + 1;
      }
    } else if (a == "--spin-us") {
      int64_t us = 0;
      if (!value(&v)) return 2;
      if (!parse_int(v, &us) || us < 0 || us > longrun::kMaxSpinUs) {
        std::fprintf(stderr, "longrun-run: --spin-us: expected 0..%d, found '%s'\n", longrun::kMaxSpinUs,
                     std::string(v).c_str());
        return 2;
      }
      o->spin_us = int(us);
    } else if (a == "--no-auto-affinity") {
      o->auto_affinity = false;
    } else if (a == "--isa") {
      if (!value(&v)) return 2;
      o->isa = v;
    } else if (a == "--precision") {
      if (!value(&v)) return 2;
      auto p = parse_precision(v);
      if (!p) {
        std::fprintf(stderr, "longrun-run: --precision: unknown precision '%.*s' (f32, bf16, int8)\n",
                     int(v.size()), v.data());
        return 2;
      }
      o->precision = *p;
    } else if (a == "--output") {
      if (!value(&v)) return 2;
      o->output = v;
    } else if (a == "--memory") {
      o->memory = true;
    } else if (a == "--profile") {
      o->profile = true;
    } else if (a == "--debug-outputs") {
      o->debug_outputs = true;
    } else if (a == "--repeat") {
      int64_t n = 0;
      if (!value(&v)) return 2;
      if (!parse_int(v, &n) || n < 0 || n > 100000) {
        std::fprintf(stderr, "longrun-run: --repeat: expected 0..100000, found '%s'\n",
                     std::string(v).c_str());
        return 2;
      }
      o->repeat = int(n);
    } else {
      std::fprintf(stderr, "longrun-run: unknown argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (o->model.empty()) {
    std::fprintf(stderr, "longrun-run: --model is required (see --help)\n");
    return 2;
  }
  if (int(!o->input.empty()) + int(!o->ids.empty()) + int(!o->texts.empty()) != 1) {
    std::fprintf(stderr,
                 "longrun-run: give exactly one of --input, --ids and --text/--text-file (see --help)\n");
    return 2;
  }
  if (o->truncation && o->texts.empty()) {
    std::fprintf(stderr, "longrun-run: --truncation and --max-length apply to --text/--text-file only\n");
    return 2;
  }
  return 0;
}

int fail(const Status& s) {
  std::fprintf(stderr, "longrun-run: %s\n", s.to_string().c_str());
  return 1;
}

// --text / --text-file: tokenizes with the model file's "longrun.tokenizer" metadata into
// input_ids (padded at the end to the longest text) and, when the model accepts it,
// attention_mask. A text longer than the model's maximum input length is an error, or cut to
// it (or to --max-length) with --truncation.
Result<std::vector<NamedTensor>> tokenize_inputs(const Options& o, const Model& model) {
  LR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(o.model));
  LR_ASSIGN_OR_RETURN(std::optional<Tokenizer> tokenizer, file_tokenizer(*file));
  if (!tokenizer)
    return invalid_argument(o.model + ": --text needs a tokenizer in the model file (metadata '" +
                            std::string(kTokenizerMetadataKey) + "'), and this file has none; give token " +
                            "ids with --ids or --input");
  const std::optional<InputLengthLimit> limit = model.max_input_length();
  const std::string limit_text = limit ? std::to_string(limit->tokens) + ", " + limit->source : std::string();
  int64_t cut_to = 0;  // truncation length, 0 = none
  if (o.max_length > 0) {
    if (limit && o.max_length > limit->tokens)
      return invalid_argument("--max-length " + std::to_string(o.max_length) + " is longer than this " +
                              model.arch() + " model allows (" + limit_text + ")");
    cut_to = o.max_length;
  } else if (o.truncation) {
    if (!limit)
      return invalid_argument("--truncation: this " + model.arch() +
                              " model states no maximum input length; give --max-length N");
    cut_to = limit->tokens;
  }
  std::vector<std::string> texts, names;
  for (size_t t = 0; t < o.texts.size(); ++t) {
    const Options::TextArg& arg = o.texts[t];
    if (!arg.from_file) {
      names.push_back("--text " + std::to_string(t));
      texts.push_back(arg.value);
      continue;
    }
    names.push_back("--text-file " + arg.value);
    const std::string file_name = arg.value == "-" ? "--text-file - (standard input)" : names.back();
    LR_ASSIGN_OR_RETURN(std::string text, read_text_file(arg.value, kMaxTextFileBytes,
                                                         {.dash_is_stdin = true, .name = file_name}));
    texts.push_back(std::move(text));
  }
  LR_ASSIGN_OR_RETURN(TokenBatch batch,
                      encode_batch(*tokenizer, texts, {.max_length = cut_to, .names = names}));
  for (size_t b = 0; b < names.size(); ++b)
    if (cut_to == 0 && limit && batch.lengths[b] > limit->tokens)
      return out_of_range(names[b] + ": " + std::to_string(batch.lengths[b]) +
                          " tokens is longer than this " + model.arch() + " model allows (" + limit_text +
                          "); pass --truncation to cut it to " + std::to_string(limit->tokens) +
                          " tokens, special tokens included");
  const std::vector<std::string> accepted = model.input_names();
  const bool has_mask = std::find(accepted.begin(), accepted.end(), "attention_mask") != accepted.end();
  const int64_t longest = batch.input_ids.desc().dim(1);
  for (const int64_t length : batch.lengths)
    if (length != longest && !has_mask)
      return invalid_argument("--text: the texts tokenize to different lengths and this " + model.arch() +
                              " model takes no attention_mask to mask the padding; give one text at a time");
  for (size_t b = 0; b < names.size(); ++b) {
    std::string notes = o.texts[b].from_file ? names[b] : "";
    if (batch.untruncated_lengths[b] > batch.lengths[b])
      notes += (notes.empty() ? "" : ", ") + std::string("truncated from ") +
               std::to_string(batch.untruncated_lengths[b]);
    std::printf("text     %zu: %lld tokens%s:", b, static_cast<long long>(batch.lengths[b]),
                notes.empty() ? "" : (" (" + notes + ")").c_str());
    const int64_t* row = batch.input_ids.data<int64_t>() + int64_t(b) * longest;
    for (int64_t i = 0; i < std::min<int64_t>(batch.lengths[b], 16); ++i)
      std::printf(" %lld", static_cast<long long>(row[i]));
    std::printf("%s\n", batch.lengths[b] > 16 ? " ..." : "");
  }
  std::vector<NamedTensor> inputs;
  inputs.push_back({"input_ids", std::move(batch.input_ids)});
  if (has_mask) inputs.push_back({"attention_mask", std::move(batch.attention_mask)});
  return inputs;
}

Result<std::vector<NamedTensor>> load_inputs(const Options& o, const Model& model) {
  if (!o.texts.empty()) return tokenize_inputs(o, model);
  std::vector<NamedTensor> inputs;
  if (!o.ids.empty()) {
    const int64_t dims[] = {int64_t(o.ids.size()), int64_t(o.ids.front().size())};
    LR_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(DType::i64, dims));
    for (size_t b = 0; b < o.ids.size(); ++b)
      std::copy(o.ids[b].begin(), o.ids[b].end(), t.data<int64_t>() + b * o.ids[b].size());
    inputs.push_back({"input_ids", std::move(t)});
    return inputs;
  }
  LR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(o.input));
  const bool prefixed = std::any_of(file->tensors().begin(), file->tensors().end(),
                                    [](const SafetensorsEntry& e) { return e.name.starts_with("input/"); });
  const std::vector<std::string> accepted = model.input_names();
  for (const SafetensorsEntry& e : file->tensors()) {
    std::string name = e.name;
    if (prefixed) {
      if (!name.starts_with("input/")) continue;
      name = name.substr(6);
    }
    if (std::find(accepted.begin(), accepted.end(), name) == accepted.end()) {
      std::string list;
      for (const std::string& n : accepted) list += (list.empty() ? "" : ", ") + n;
      return invalid_argument(o.input + ": tensor '" + e.name + "' is not an input of this " + model.arch() +
                              " model (its inputs: " + list + ")");
    }
    LR_ASSIGN_OR_RETURN(Tensor t, Tensor::from_bytes(e.desc, e.bytes));
    inputs.push_back({name, std::move(t)});
  }
  if (inputs.empty()) return invalid_argument(o.input + ": no input tensors");
  return inputs;
}

std::string first_values(const Tensor& t, int64_t count) {
  std::string s;
  const int64_t n = std::min(count, t.numel());
  char buf[48];
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case DType::f32: std::snprintf(buf, sizeof buf, "%.6g", double(t.data<float>()[i])); break;
      case DType::i32: std::snprintf(buf, sizeof buf, "%d", t.data<int32_t>()[i]); break;
      case DType::i64:
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(t.data<int64_t>()[i]));
        break;
      case DType::u8: std::snprintf(buf, sizeof buf, "%u", unsigned(t.data<uint8_t>()[i])); break;
      default: std::snprintf(buf, sizeof buf, "?"); break;
    }
    s += (i ? " " : "") + std::string(buf);
  }
  if (t.numel() > n) s += " ...";
  return s;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void print_profile(const Graph& graph, const std::vector<double>& node_ms, int repeat) {
  struct Row {
    int count = 0;
    double ms = 0;
  };
  std::map<std::string, Row> by_op;
  double total = 0;
  for (size_t n = 0; n < graph.nodes().size() && n < node_ms.size(); ++n) {
    Row& r = by_op[std::string(op_name(graph.nodes()[n].kind))];
    r.count++;
    r.ms += node_ms[n];
    total += node_ms[n];
  }
  std::vector<std::pair<std::string, Row>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  if (repeat == 0)
    std::printf("profile (the first run, per op kind):\n");
  else
    std::printf("profile (run %d of %d, per op kind):\n", repeat + 1, repeat + 1);
  std::printf("  %-18s %6s %12s %7s\n", "op", "nodes", "ms", "share");
  for (const auto& [op, r] : rows)
    std::printf("  %-18s %6d %12.3f %6.1f%%\n", op.c_str(), r.count, r.ms,
                total > 0 ? 100.0 * r.ms / total : 0.0);
  std::printf("  %-18s %6zu %12.3f\n", "total", graph.nodes().size(), total);
  std::vector<size_t> order(std::min(node_ms.size(), graph.nodes().size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
  std::printf("slowest nodes:\n");
  for (size_t i = 0; i < std::min<size_t>(5, order.size()); ++i) {
    const Node& node = graph.nodes()[order[i]];
    std::printf("  %12.3f ms  %s (%s)\n", node_ms[order[i]], node.name.c_str(),
                std::string(op_name(node.kind)).c_str());
  }
}

int run(const Options& o) {
  const Clock::time_point t_load = Clock::now();
  auto model_r = Model::load(o.model, {.debug_outputs = o.debug_outputs});
  if (!model_r.ok()) return fail(model_r.status());
  const Model& model = **model_r;
  const double load_ms = ms_since(t_load);

  auto inputs_r = load_inputs(o, model);
  if (!inputs_r.ok()) return fail(inputs_r.status());
  const std::vector<NamedTensor>& inputs = *inputs_r;
  std::vector<std::string> names;
  std::vector<TensorDesc> descs;
  std::vector<NamedTensorRef> refs;
  for (const NamedTensor& t : inputs) {
    names.push_back(t.name);
    descs.push_back(t.tensor.desc());
    refs.push_back({t.name, t.tensor.view()});
  }

  SessionOptions so;
  so.backend = o.backend;
  so.threads = o.threads;
  so.affinity = o.cpus;
  so.spin_us = o.spin_us;
  so.auto_affinity = o.auto_affinity;
  so.isa = o.isa;
  so.precision = o.precision;
  if (o.generation.enabled) return longrun_run::run_generation(*model_r, inputs, so, o.generation);
  auto session_r = model.create_session(so, names);
  if (!session_r.ok()) return fail(session_r.status());
  Session& session = **session_r;

  const Clock::time_point t_prep = Clock::now();
  auto report = session.memory_report(descs);  // builds, plans and prepares this shape
  if (!report.ok()) return fail(report.status());
  const double prepare_ms = ms_since(t_prep);

  std::vector<double> node_ms;
  RunHooks hooks;
  if (o.profile) hooks.node_ms = &node_ms;
  const Clock::time_point t_run = Clock::now();
  // With --repeat, the profile comes from the last run: the first one carries one-time costs
  // (first touch of the arena, a GPU library's lazy module load) that are not the op's.
  auto out_r = session.run(refs, o.profile && o.repeat == 0 ? &hooks : nullptr);
  if (!out_r.ok()) return fail(out_r.status());
  const double run_ms = ms_since(t_run);
  std::vector<double> repeats;
  for (int k = 0; k < o.repeat; ++k) {
    const Clock::time_point t = Clock::now();
    auto again = session.run(refs, o.profile && k + 1 == o.repeat ? &hooks : nullptr);
    if (!again.ok()) return fail(again.status());
    repeats.push_back(ms_since(t));
  }
  const std::vector<NamedTensor>& outputs = *out_r;

  std::printf("model    %s (%s, %d tensors, %.2f MiB of weights, %.2f MiB copied at load)\n", o.model.c_str(),
              model.arch().c_str(), model.num_parameters(), double(model.weight_bytes()) / (1 << 20),
              double(model.weight_bytes_copied()) / (1 << 20));
  std::printf("backend  %s\n", session.backend().description().c_str());
  for (const NamedTensor& t : inputs)
    std::printf("input    %-18s %s\n", t.name.c_str(), t.tensor.desc().to_string().c_str());
  std::printf("time     load %.2f ms, prepare %.2f ms, run %.2f ms", load_ms, prepare_ms, run_ms);
  if (!repeats.empty()) {
    std::vector<double> s = repeats;
    std::sort(s.begin(), s.end());
    std::printf("; %zu more runs: min %.2f ms, median %.2f ms", s.size(), s.front(), s[s.size() / 2]);
  }
  std::printf("\n");

  if (o.output.empty()) {
    for (const NamedTensor& t : outputs)
      std::printf("output   %-18s %-16s %s\n", t.name.c_str(), t.tensor.desc().to_string().c_str(),
                  first_values(t.tensor, 8).c_str());
  } else {
    std::vector<SafetensorsWriteEntry> entries;
    entries.reserve(outputs.size());
    for (const NamedTensor& t : outputs) entries.push_back({t.name, t.tensor.desc(), t.tensor.bytes()});
    const std::map<std::string, std::string> meta = {{"longrun.model", o.model},
                                                     {"longrun.arch", model.arch()}};
    const Status st = write_safetensors(o.output, entries, meta);
    if (!st.ok()) return fail(st);
    std::printf("output   %zu tensors written to %s\n", outputs.size(), o.output.c_str());
  }

  if (o.memory) {
    std::printf("memory plan for this input shape:\n%s", report->to_string().c_str());
    std::printf("  model weights         %.2f MiB (%.2f MiB copied at load: widened or misaligned)\n",
                double(model.weight_bytes()) / (1 << 20), double(model.weight_bytes_copied()) / (1 << 20));
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0)
      std::printf("  peak RSS              %.2f MiB (process, getrusage)\n", double(ru.ru_maxrss) / 1024.0);
  }
  if (o.profile) {
    auto graph = session.graph_for(descs);
    if (!graph.ok()) return fail(graph.status());
    print_profile(**graph, node_ms, o.repeat);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool done = false;
  const int rc = parse(argc, argv, &o, &done);
  if (done || rc != 0) return rc;
  try {
    return run(o);
  } catch (const std::exception& e) {  // allocation failure in the tool itself
    std::fprintf(stderr, "longrun-run: %s\n", e.what());
    return 1;
  }
}
