#include "run/generate_command.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace longrun_run {

namespace {

bool parse_int(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_double(const char* s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s, &end);
  return end != s && *end == '\0' && std::isfinite(*out);
}

}  // namespace

const char* generation_usage() {
  return "  --generate         encoder-decoder models (bart, transformer, ...) and causal combiner LMs:\n"
         "                     generate from input_ids (and attention_mask, encoder-decoders) and print\n"
         "                     the ids (an LM's continuation of the prompt); greedy unless --beam K > 1\n"
         "  --max-new-tokens N tokens to generate, eos included (default 20)\n"
         "  --beam K           beam size (default 1 = greedy); also --num-beams\n"
         "  --min-length N     eos is banned before N tokens (default 0)\n"
         "  --no-repeat-ngram N  ban repeating any n-gram of size N (default 0 = off)\n"
         "  --length-penalty X score = log-prob / length^X (default 1.0); also --lenpen\n"
         "  --num-return N     hypotheses printed per input (default 1, <= K)\n";
}

int parse_generation_flag(int argc, char** argv, int* i, GenerationFlags* f) {
  const std::string_view a = argv[*i];
  if (a == "--generate") {
    f->enabled = true;
    return 0;
  }
  if (a == "--sample" || a == "--temperature" || a == "--top-k" || a == "--top-p") {
    std::fprintf(stderr, "longrun-run: %s: sampling is not implemented (greedy and beam search are)\n",
                 argv[*i]);
    return 2;
  }
  struct IntFlag {
    std::string_view name;
    int64_t min, max;
  };
  static constexpr IntFlag kInts[] = {{"--max-new-tokens", 1, 1 << 20}, {"--beam", 1, 1024},
                                      {"--num-beams", 1, 1024},         {"--min-length", 0, 1 << 20},
                                      {"--no-repeat-ngram", 0, 1024},   {"--num-return", 1, 1024}};
  const bool is_double = a == "--length-penalty" || a == "--lenpen";
  const IntFlag* int_flag = nullptr;
  for (const IntFlag& x : kInts)
    if (x.name == a) int_flag = &x;
  if (int_flag == nullptr && !is_double) return -1;
  if (*i + 1 >= argc) {
    std::fprintf(stderr, "longrun-run: %s needs a value (see --help)\n", argv[*i]);
    return 2;
  }
  const char* v = argv[++*i];
  f->enabled = true;
  if (is_double) {
    if (!parse_double(v, &f->options.length_penalty)) {
      std::fprintf(stderr, "longrun-run: %s: expected a finite number, found '%s'\n", argv[*i - 1], v);
      return 2;
    }
    return 0;
  }
  int64_t n = 0;
  if (!parse_int(v, &n) || n < int_flag->min || n > int_flag->max) {
    std::fprintf(stderr, "longrun-run: %s: expected %lld..%lld, found '%s'\n", argv[*i - 1],
                 static_cast<long long>(int_flag->min), static_cast<long long>(int_flag->max), v);
    return 2;
  }
  if (a == "--max-new-tokens") f->options.max_new_tokens = n;
  if (a == "--beam" || a == "--num-beams") f->options.num_beams = int(n);
  if (a == "--min-length") f->options.min_length = n;
  if (a == "--no-repeat-ngram") f->options.no_repeat_ngram_size = n;
  if (a == "--num-return") f->options.num_return_sequences = int(n);
  return 0;
}

int run_generation(const std::shared_ptr<const longrun::Model>& model,
                   const std::vector<longrun::NamedTensor>& inputs, const longrun::SessionOptions& options,
                   const GenerationFlags& flags) {
  using namespace longrun;
  const Tensor* ids = nullptr;
  const Tensor* mask = nullptr;
  for (const NamedTensor& t : inputs) {
    if (t.name == "input_ids")
      ids = &t.tensor;
    else if (t.name == "attention_mask")
      mask = &t.tensor;
    else if (t.name != "decoder_input_ids") {
      std::fprintf(stderr, "longrun-run: --generate: input '%s' is not used by generation\n", t.name.c_str());
      return 2;
    }
  }
  if (ids == nullptr) {
    std::fprintf(stderr, "longrun-run: --generate needs input_ids (--ids or --input)\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto gen = Generator::create(model, options);
  if (!gen.ok()) {
    std::fprintf(stderr, "longrun-run: %s\n", gen.status().to_string().c_str());
    return 1;
  }
  const TensorView mask_view = mask != nullptr ? mask->view() : TensorView{};
  auto r = (*gen)->generate(ids->view(), mask != nullptr ? &mask_view : nullptr, flags.options);
  if (!r.ok()) {
    std::fprintf(stderr, "longrun-run: %s\n", r.status().to_string().c_str());
    return 1;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("model    %s (%s)\n", model->path().c_str(), model->arch().c_str());
  std::printf(
      "generate beams %d, max_new_tokens %lld, min_length %lld, no_repeat_ngram %lld, length_penalty %g\n",
      flags.options.num_beams, static_cast<long long>(flags.options.max_new_tokens),
      static_cast<long long>(flags.options.min_length),
      static_cast<long long>(flags.options.no_repeat_ngram_size), flags.options.length_penalty);
  std::printf(
      "time     %.2f ms for %lld decoder steps (KV cache %lld slots, %lld bytes, %d step-graph shapes)\n", ms,
      static_cast<long long>(r->steps), static_cast<long long>(r->cache_slots),
      static_cast<long long>(r->cache_bytes), r->step_shapes);
  for (size_t b = 0; b < r->sequences.size(); ++b)
    for (size_t k = 0; k < r->sequences[b].size(); ++k) {
      std::string s;
      for (int64_t id : r->sequences[b][k]) s += (s.empty() ? "" : " ") + std::to_string(id);
      std::printf("sequence %zu.%zu score %.6f: %s\n", b, k, r->scores[b][k], s.c_str());
    }
  return 0;
}

}  // namespace longrun_run
