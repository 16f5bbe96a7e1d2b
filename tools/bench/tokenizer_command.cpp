// `longrun-bench tokenizer` (tokenizer_command.h). The text is built once (the file repeated
// whole, then cut at a character boundary to the asked size), then each tokenizer encodes all
// of it as one string per run: the figure includes UTF-8 decoding, normalisation,
// pre-tokenisation and the model, as Tokenizer::encode does them for longrun-run --text-file.
#include "tokenizer_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "longrun/tokenizer.h"
#include "provenance.h"
#include "report.h"
#include "timing.h"

namespace longrun::bench {
namespace {

const char* model_name(TokenizerModel m) {
  return m == TokenizerModel::wordpiece ? "wordpiece" : "byte_level_bpe";
}

Result<Tokenizer> open_tokenizer(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0)
    return Tokenizer::from_tokenizer_json(path);
  return Tokenizer::from_directory(path);
}

// The file's bytes repeated (whole copies, newline-separated) and cut to `bytes`, the cut moved
// back to the start of a UTF-8 character.
Result<std::string> build_text(const std::string& path, size_t bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string unit = ss.str();
  if (unit.empty()) return invalid_argument(path + ": empty file");
  if (unit.back() != '\n') unit.push_back('\n');
  std::string text;
  text.reserve(bytes + unit.size());
  while (text.size() < bytes) text += unit;
  size_t cut = bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

}  // namespace

std::vector<std::string> default_tokenizers() {
  const std::string dir = std::string(LONGRUN_BENCH_SOURCE_DIR) + "/tests/golden/tokenizer/";
  return {dir + "bert", dir + "bpe"};
}

int run_tokenizer(const TokenizerOptions& o) {
  JsonSink json;
  if (!open_json(o.json, &json)) return 2;
  std::FILE* table = json.table();
  const std::string text_path =
      o.text.empty() ? std::string(LONGRUN_BENCH_SOURCE_DIR) + "/tests/golden/tokenizer/bpe_corpus.txt"
                     : o.text;
  auto text = build_text(text_path, size_t(o.mib * double(1 << 20)));
  if (!text.ok()) {
    std::fprintf(stderr, "longrun-bench: --text: %s\n", text.status().to_string().c_str());
    return 1;
  }
  const std::vector<std::string> paths = o.tokenizers.empty() ? default_tokenizers() : o.tokenizers;
  std::fprintf(table,
               "tokenizer: Tokenizer::encode of %s (%.2f MiB as one string), one thread, median of %d\n",
               text_path.c_str(), double(text->size()) / (1 << 20), o.repeat);
  std::fprintf(table, "%-44s %-15s %10s %10s %9s %12s\n", "tokenizer", "model", "tokens", "median ms", "MB/s",
               "Mtokens/s");
  int rc = 0;
  for (const std::string& path : paths) {
    auto tok = open_tokenizer(path);
    if (!tok.ok()) {
      std::fprintf(stderr, "longrun-bench: --tokenizer: %s\n", tok.status().to_string().c_str());
      rc = 1;
      continue;
    }
    size_t tokens = 0;
    auto timing = measure(
        [&]() -> Status {
          auto ids = tok->encode(*text);
          if (!ids.ok()) return ids.status();
          tokens = ids->size();
          return {};
        },
        {}, o.warmup, o.repeat);
    std::string fields =
        "{\"tokenizer\":" + json_string(path) + ",\"model\":\"" + model_name(tok->model()) +
        "\",\"description\":" + json_string(tok->description()) + ",\"text\":" + json_string(text_path) +
        ",\"bytes\":" + std::to_string(text->size()) +
        ",\"threads\":1,\"warmup\":" + std::to_string(o.warmup) + ",\"repeat\":" + std::to_string(o.repeat);
    if (!timing.ok()) {
      std::fprintf(table, "%-44s %-15s failed: %s\n", path.c_str(), model_name(tok->model()),
                   timing.status().to_string().c_str());
      if (json.file)
        std::fprintf(json.file, "%s,\"error\":%s%s}\n", fields.c_str(),
                     json_string(timing.status().to_string()).c_str(), json_provenance_fields().c_str());
      rc = 1;
      continue;
    }
    const double seconds = timing->median_ms / 1e3;
    const double mb_per_s = seconds > 0 ? double(text->size()) / 1e6 / seconds : 0;
    const double tokens_per_s = seconds > 0 ? double(tokens) / seconds : 0;
    std::fprintf(table, "%-44s %-15s %10zu %10s %9.2f %12.3f\n", path.c_str(), model_name(tok->model()),
                 tokens, ms_text(timing->median_ms).c_str(), mb_per_s, tokens_per_s / 1e6);
    if (json.file)
      std::fprintf(json.file, "%s,\"tokens\":%zu%s,\"mb_per_s\":%s,\"tokens_per_s\":%s%s}\n", fields.c_str(),
                   tokens, json_timing_fields(*timing).c_str(), json_number(mb_per_s).c_str(),
                   json_number(tokens_per_s).c_str(), json_provenance_fields().c_str());
  }
  return rc;
}

}  // namespace longrun::bench
