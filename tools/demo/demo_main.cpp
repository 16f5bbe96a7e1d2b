// longrun-demo: runs a real graph through the runtime on every backend and prints what it
// did. The graph is the Fourier Transformer's token-mixing block on a long sequence:
//   y = gelu(spectral_filter(layer_norm(x)))   along the sequence axis, M = ceil(N * r)
// The input is a sum of a few low-frequency cosines plus noise. The orthonormal DCT keeps
// energy (Parseval), so ||filtered||^2 / ||normalized||^2 is the share of the signal's
// energy in the kept band: close to 1 for this input, which is what the filter relies on.
//
// With --model it runs a real model instead (embed_demo.cpp): sentence embeddings with a
// converted checkpoint; tools/dev/demo.sh does that with all-MiniLM-L6-v2 and falls back to
// this synthetic block when the weights cannot be downloaded.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "demo/embed_demo.h"
#include "longrun/backend.h"
#include "longrun/graph.h"
#include "longrun/precision.h"
#include "longrun/session.h"

namespace {

using namespace longrun;

struct Options {
  longrun::demo::EmbedOptions embed;  // --model: the real-model mode
  int64_t n = 4096;
  int64_t d = 32;
  double ratio = 0.25;
  int threads = 1;
};

void usage() {
  std::puts(
      "usage: longrun-demo [--n N] [--d D] [--ratio R] [--threads T]\n"
      "Runs y = gelu(spectral_filter(layer_norm(x))) over a [1, N, D] sequence (default N=4096,\n"
      "D=32, R=0.25) on every backend built into this longrun, checks that the backends agree,\n"
      "reports the share of energy the filter kept, and prints time and planned memory.\n"
      "\n"
      "usage: longrun-demo --model M.safetensors [--compare M2.safetensors] [--text \"...\"]...\n"
      "                    [--backend cpu|reference|cuda] [--threads T] [--precision f32|bf16|int8]\n"
      "Sentence embeddings with a real model: a BERT-family native file with its tokenizer (from\n"
      "longrun-convert of an HF directory). Each text (default: six built-in sentences) is\n"
      "tokenized, run, mean-pooled and L2-normalised; prints the cosine-similarity matrix, each\n"
      "sentence's ranking of the others and, with --compare (e.g. the same weights as\n"
      "fourier-bert), the cosine of the two embeddings.\n"
      "--precision: the sessions' number format (docs/usage.md#precision; default f32). int8 runs\n"
      "the linear layers on the cpu backend's int8 GEMM (AVX2 and up); a precision the backend does\n"
      "not implement exits 2 with its message.");
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "longrun-demo: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else if (a == "--n") {
      o->n = std::atoll(next("--n"));
    } else if (a == "--d") {
      o->d = std::atoll(next("--d"));
    } else if (a == "--ratio") {
      o->ratio = std::atof(next("--ratio"));
    } else if (a == "--threads") {
      o->threads = o->embed.threads = std::atoi(next("--threads"));
    } else if (a == "--model") {
      o->embed.model = next("--model");
    } else if (a == "--compare") {
      o->embed.compare = next("--compare");
    } else if (a == "--text") {
      o->embed.sentences.push_back(next("--text"));
    } else if (a == "--backend") {
      o->embed.backend = next("--backend");
    } else if (a == "--precision") {
      const std::string v = next("--precision");
      const auto p = parse_precision(v);
      if (!p) {
        std::fprintf(stderr, "longrun-demo: --precision: unknown precision '%s' (f32, bf16, int8)\n",
                     v.c_str());
        return false;
      }
      o->embed.precision = *p;
    } else {
      std::fprintf(stderr, "longrun-demo: unknown argument '%s' (see --help)\n", a.c_str());
      return false;
    }
  }
  // The synthetic block has no linear layer: a precision would change nothing in it.
  if (o->embed.model.empty() && o->embed.precision != Precision::f32) {
    std::fprintf(stderr,
                 "longrun-demo: --precision: only with --model (the synthetic block has no linear layer)\n");
    return false;
  }
  if (o->n < 2 || o->n > (1 << 20) || o->d < 1 || o->d > 4096 || !(o->ratio > 0 && o->ratio <= 1)) {
    std::fprintf(stderr, "longrun-demo: need 2 <= N <= 2^20, 1 <= D <= 4096, 0 < R <= 1\n");
    return false;
  }
  return true;
}

// x[t, c] = sum of three low-frequency DCT-II basis vectors + small high-frequency noise.
std::vector<float> make_input(const Options& o, int64_t m) {
  std::vector<float> x(size_t(o.n * o.d));
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  const double pi = std::acos(-1.0);
  for (int64_t t = 0; t < o.n; ++t)
    for (int64_t c = 0; c < o.d; ++c) {
      double v = 0;
      for (int k : {1, 2, 3}) {
        const int64_t freq = (k * (c + 1)) % std::max<int64_t>(2, m / 2);
        v += std::cos(pi * double(freq) * (2.0 * double(t) + 1.0) / (2.0 * double(o.n))) / k;
      }
      x[size_t(t * o.d + c)] = float(v) + noise(rng);
    }
  return x;
}

Result<Graph> build_graph(const Options& o, int64_t m, const std::shared_ptr<std::vector<float>>& params) {
  GraphBuilder b;
  const ValueId x = b.input("x", TensorDesc(DType::f32, {1, o.n, o.d}));
  const float* gamma = params->data();
  const float* beta = params->data() + o.d;
  const ValueId g = b.weight("norm.weight", TensorDesc(DType::f32, {o.d}), gamma, params);
  const ValueId be = b.weight("norm.bias", TensorDesc(DType::f32, {o.d}), beta, params);
  const ValueId z = b.layer_norm({x, g, be}, {.eps = 1e-5f});
  const ValueId f = b.spectral_filter({z}, {.axis = 1, .keep = m});
  b.output(z, "normalized");
  b.output(f, "filtered");
  b.output(b.gelu({f}), "y");
  return b.build();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  if (!o.embed.model.empty()) return longrun::demo::run_embed_demo(o.embed);
  const int64_t m = int64_t(std::ceil(double(o.n) * o.ratio));  // as the official code: ceil in double
  auto params = std::make_shared<std::vector<float>>(size_t(2 * o.d));
  for (int64_t c = 0; c < o.d; ++c) {
    (*params)[size_t(c)] = 1.0f + 0.01f * float(c % 7);
    (*params)[size_t(o.d + c)] = 0.02f * float(c % 5);
  }
  const std::vector<float> x = make_input(o, m);

  std::printf(
      "longrun demo: y = gelu(spectral_filter(layer_norm(x))), x: f32[1,%lld,%lld], keep M = %lld (r = %g)\n",
      (long long)o.n, (long long)o.d, (long long)m, o.ratio);
  auto graph = build_graph(o, m, params);
  if (!graph.ok()) {
    std::fprintf(stderr, "longrun-demo: %s\n", graph.status().to_string().c_str());
    return 1;
  }

  std::vector<float> first;
  std::string first_backend;
  int ran = 0;
  for (const std::string& name : backend_names()) {
    SessionOptions so;
    so.backend = name;
    so.threads = o.threads;
    auto session = Session::create(Graph(*graph), so);
    if (!session.ok()) {
      std::printf("  %-10s skipped: %s\n", name.c_str(), session.status().message().c_str());
      continue;
    }
    NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {1, o.n, o.d}), const_cast<float*>(x.data())}};
    const auto t0 = std::chrono::steady_clock::now();
    auto out = (*session)->run({&in, 1});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!out.ok()) {
      std::fprintf(stderr, "  %-10s FAILED: %s\n", name.c_str(), out.status().to_string().c_str());
      return 1;
    }
    const Tensor& y = (*out)[2].tensor;
    const float* py = y.data<float>();
    std::vector<float> vy(py, py + y.numel());
    const auto report = (*session)->memory_report({&in.view.desc, 1});
    std::printf("  %-10s %-40s %9.1f ms   out %s   arena %.2f MiB\n", name.c_str(),
                (*session)->backend().description().c_str(), ms, y.desc().to_string().c_str(),
                report.ok() ? double(report->arena_bytes) / (1 << 20) : -1.0);
    if (first.empty()) {
      double kept = 0, total = 0;
      const Tensor& z = (*out)[0].tensor;
      const Tensor& f = (*out)[1].tensor;
      for (int64_t i = 0; i < z.numel(); ++i) total += double(z.data<float>()[i]) * z.data<float>()[i];
      for (int64_t i = 0; i < f.numel(); ++i) kept += double(f.data<float>()[i]) * f.data<float>()[i];
      std::printf("  %-10s energy kept by the filter: %.2f%%\n", "", 100.0 * kept / total);
      first = vy;
      first_backend = name;
    } else {
      double max_abs = 0;
      for (size_t i = 0; i < vy.size(); ++i) max_abs = std::max(max_abs, double(std::fabs(vy[i] - first[i])));
      std::printf("  %-10s max |%s - %s| = %.3g\n", "", name.c_str(), first_backend.c_str(), max_abs);
    }
    ++ran;
  }
  if (ran == 0) {
    std::fprintf(stderr, "longrun-demo: no backend could run\n");
    return 1;
  }
  // The filtered sequence is an M-point resampling: report its length and the mean level.
  double mean = 0;
  for (float v : first) mean += v;
  mean /= double(first.size());
  std::printf("result: %lld -> %lld positions per channel, mean activation %.4f (backends ran: %d)\n",
              (long long)o.n, (long long)m, mean, ran);
  return 0;
}
