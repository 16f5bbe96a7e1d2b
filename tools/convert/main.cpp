// longrun-convert: imports a checkpoint (PyTorch zip/legacy, safetensors, sharded, Hugging
// Face directory) into a native longrun model file, or lists one with --inspect.
// Exit codes: 0 success, 1 the input could not be read or mapped, 2 usage error.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "convert.h"
#include "convert_file.h"
#include "fairseq.h"
#include "inspect.h"
#include "longrun/models/model.h"
#include "longrun/tokenizer.h"
#include "readers.h"
#include "sha256.h"

namespace {

using namespace longrun;
using namespace longrun::convert;

void usage(FILE* f) {
  std::fprintf(f,
               "usage: longrun-convert [options] INPUT -o OUT.safetensors\n"
               "       longrun-convert --inspect INPUT\n"
               "\n"
               "Imports a checkpoint into a native longrun model file (safetensors with\n"
               "longrun.format/arch/config metadata, the source's sha256 and the converter version;\n"
               "written atomically). Pickled PyTorch files are parsed, never unpickled: only tensors,\n"
               "storages, OrderedDict and argparse.Namespace are interpreted; any other Python global\n"
               "is refused by name.\n"
               "\n"
               "INPUT: a torch.save file (zip, torch >= 1.6, or legacy), a .safetensors file, a Flax\n"
               "msgpack file, a sharded\n"
               "checkpoint's *.index.json, or a Hugging Face directory (config.json +\n"
               "model.safetensors / sharded / pytorch_model.bin).\n"
               "\n"
               "options:\n"
               "  --from auto|hf|pytorch|safetensors|fairseq|flax  input kind (default auto: by content);\n"
               "                       fairseq: the \"model\" state dict with fairseq's upgrades (in_proj\n"
               "                       split, layer_norms renames) and args/cfg.model hyper-parameters\n"
               "                       (converted with the arch's fairseq-* layout); flax: a Flax msgpack\n"
               "                       file (flax.serialization.to_bytes), tensors named by their\n"
               "                       \"/\"-joined tree paths\n"
               "  --arch ARCH          target architecture (default: the input's longrun.arch, or from\n"
               "                       an HF config.json's model_type: bert / roberta / bart, fourier-*\n"
               "                       when filter_layers / dct_layers is set) (known:");
  for (const std::string& a : model_architectures()) std::fprintf(f, " %s", a.c_str());
  std::fprintf(f,
               ")\n"
               "  --config FILE        the architecture's config as JSON (default: the HF directory's\n"
               "                       config.json, if any)\n"
               "  --layout NAME        the source layout (default: the first of ARCH's layouts that maps\n"
               "                       the input without problems)\n"
               "  --set KEY=VALUE      set one config field (VALUE as JSON, else a string); repeatable\n"
               "  --dtype f32|f16|bf16 store every weight in this dtype (default: as in the source;\n"
               "                       f64 becomes f32)\n"
               "  --quantize int8      store every linear-layer weight (a matmul weight the int8\n"
               "                       precision runs as a linear layer) as int8 per output channel\n"
               "                       with f32 scales, quantized from the weight as stored (after\n"
               "                       --dtype); int8 sessions use them as stored, f32/bf16 sessions\n"
               "                       their dequantized values q * scale (lossy)\n"
               "  --tokenizer DIR      embed the Hugging Face tokenizer files of DIR (tokenizer.json, or\n"
               "                       vocab.txt, or vocab.json + merges.txt) under longrun.tokenizer\n"
               "                       (default: INPUT's own when it is a directory holding them; a\n"
               "                       native INPUT keeps its tokenizer); --no-tokenizer: none\n"
               "  --lenient            keep unknown pickle globals as opaque values off the tensor path\n"
               "                       (needed for checkpoints that pickle training objects; --from\n"
               "                       fairseq does this by itself outside the \"model\" state dict)\n"
               "  --inspect            list the input's format, tensors, dtypes, shapes and metadata\n"
               "  -o, --output FILE    the native model file to write\n"
               "  -q, --quiet          no summary\n"
               "  -h, --help           this text\n"
               "\n"
               "Source layouts:");
  for (const SourceLayout& l : source_layouts()) {
    std::string archs;
    for (std::string_view a : l.archs) archs += (archs.empty() ? "" : ", ") + std::string(a);
    std::fprintf(f, "\n  %s -> %s: %s", std::string(l.name).c_str(), archs.c_str(),
                 std::string(l.description).c_str());
  }
  std::fprintf(f, "\n\nexit codes: 0 ok, 1 the input cannot be read or mapped, 2 usage error\n");
}

int fail_usage(const std::string& m) {
  std::fprintf(stderr, "longrun-convert: %s (see --help)\n", m.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string from = "auto", arch, layout, config_path, dtype_name, quantize, input, output;
  std::vector<std::string> sets;
  std::string tokenizer_dir;
  bool inspect = false, quiet = false, no_tokenizer = false;
  ReadOptions read_options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--from") {
      if (!value(&from)) return fail_usage("--from needs a value");
    } else if (a == "--arch") {
      if (!value(&arch)) return fail_usage("--arch needs a value");
    } else if (a == "--layout") {
      if (!value(&layout)) return fail_usage("--layout needs a value");
    } else if (a == "--config") {
      if (!value(&config_path)) return fail_usage("--config needs a file");
    } else if (a == "--set") {
      std::string s;
      if (!value(&s)) return fail_usage("--set needs key=value");
      sets.push_back(s);
    } else if (a == "--dtype") {
      if (!value(&dtype_name)) return fail_usage("--dtype needs a value");
    } else if (a == "--quantize") {
      if (!value(&quantize)) return fail_usage("--quantize needs a value");
      if (quantize != "int8") return fail_usage("--quantize must be int8, found '" + quantize + "'");
    } else if (a == "-o" || a == "--output") {
      if (!value(&output)) return fail_usage("-o needs a file");
    } else if (a == "--inspect") {
      inspect = true;
    } else if (a == "--tokenizer") {
      if (!value(&tokenizer_dir)) return fail_usage("--tokenizer needs a directory");
    } else if (a == "--no-tokenizer") {
      no_tokenizer = true;
    } else if (a == "--lenient") {
      read_options.lenient = true;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return fail_usage("unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return fail_usage("more than one INPUT ('" + input + "', '" + a + "')");
    }
  }
  if (input.empty()) return fail_usage("no INPUT");
  if (from != "auto" && from != "hf" && from != "pytorch" && from != "safetensors" && from != "fairseq" &&
      from != "flax")
    return fail_usage("--from must be auto, hf, pytorch, safetensors, fairseq or flax");
  ConvertFileOptions options;
  if (!dtype_name.empty()) {
    options.dtype = parse_dtype(dtype_name);
    if (!options.dtype || !dtype_is_float(*options.dtype))
      return fail_usage("--dtype must be f32, f16 or bf16");
  }
  if (inspect && !quantize.empty()) return fail_usage("--quantize does not apply to --inspect");
  options.quantize = quantize;
  if (!inspect && output.empty()) return fail_usage("no output file (-o OUT.safetensors)");

  if (inspect) {
    if (from == "fairseq") {
      auto f = read_fairseq(input, read_options);
      if (!f.ok()) {
        std::fprintf(stderr, "longrun-convert: %s\n", f.status().to_string().c_str());
        return 1;
      }
      std::fputs(inspect_report(f->source).c_str(), stdout);
      std::printf("hyper-parameters (%s): %s\n", f->hyperparameters_from.c_str(),
                  f->hyperparameters_json.c_str());
      for (const std::string& s : f->upgraded) std::printf("upgraded: %s\n", s.c_str());
      for (const std::string& s : f->dropped) std::printf("dropped: %s\n", s.c_str());
      return 0;
    }
    auto src = read_checkpoint(input, from, read_options);
    if (!src.ok()) {
      std::fprintf(stderr, "longrun-convert: %s\n", src.status().to_string().c_str());
      return 1;
    }
    std::fputs(inspect_report(*src).c_str(), stdout);
    return 0;
  }

  options.from = from;
  options.arch = arch;
  options.layout = layout;
  options.config_path = config_path;
  options.sets = sets;
  options.tokenizer_dir = tokenizer_dir;
  options.no_tokenizer = no_tokenizer;
  options.read_options = read_options;
  options.progress = !quiet && ::isatty(STDERR_FILENO);
  bool usage_error = false;
  auto converted = convert_file(input, output, options, &usage_error);
  if (!converted.ok()) {
    if (usage_error) return fail_usage(converted.status().message());
    std::fprintf(stderr, "longrun-convert: %s\n", converted.status().to_string().c_str());
    return 1;
  }
  arch = converted->arch;
  const ConvertSummary* summary = &converted->summary;
  const std::vector<std::string>& fairseq_dropped = converted->fairseq_dropped;
  if (!quiet) {
    std::printf("wrote %s: %s, layout %s\n", output.c_str(), arch.c_str(), summary->layout.c_str());
    std::printf("  tensors mapped: %d, ignored: %zu, re-tied: %zu, dtype conversions: %d, bytes: %llu\n",
                summary->mapped, summary->ignored.size(), summary->retied.size(), summary->dtype_conversions,
                static_cast<unsigned long long>(summary->bytes));
    for (const std::string& s : summary->ignored) std::printf("  ignored %s\n", s.c_str());
    for (const std::string& s : summary->retied) std::printf("  re-tied %s\n", s.c_str());
    for (const std::string& s : summary->config_notes) std::printf("  config %s\n", s.c_str());
    for (const std::string& s : fairseq_dropped)
      std::printf("  dropped by the fairseq reader %s\n", s.c_str());
    if (converted->quantized)
      std::printf("  quantized int8: %d linear-layer weights, file %llu -> %llu bytes\n",
                  converted->quantized->weights,
                  static_cast<unsigned long long>(converted->quantized->bytes_before),
                  static_cast<unsigned long long>(converted->quantized->bytes_after));
    const auto sha = summary->metadata.find("longrun.source_sha256");
    std::printf("  source sha256: %s\n", sha != summary->metadata.end() ? sha->second.c_str() : "");
    if (!converted->tokenizer_metadata.empty()) {
      auto t = Tokenizer::from_metadata(converted->tokenizer_metadata);
      std::printf("  tokenizer: %s\n", t.ok() ? t->description().c_str() : "embedded");
    }
  }
  return 0;
}
