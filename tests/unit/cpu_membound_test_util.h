// What the cpu memory-bound kernel tests (cpu_membound_test.cpp, cpu_vmath_test.cpp) share:
// inputs ending at a PROT_NONE page, outputs framed by guard words, the run-and-compare rule
// (1 and 2 threads bit for bit, then the reference within a tolerance) and the kernels of
// each ISA level this machine has.
#pragma once

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/elementwise.h"
#include "backends/cpu/embedding.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/normalization.h"
#include "backends/cpu/scan.h"
#include "backends/cpu/selection.h"
#include "longrun/graph.h"
#include "longrun/thread_pool.h"

namespace longrun::membound_tests {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr int64_t kSizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 4096};

inline bool has(cpu::Isa isa) { return int(cpu::detect_isa()) >= int(isa); }

// Storage whose last byte is followed by a PROT_NONE page.
class Guarded {
 public:
  explicit Guarded(size_t bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    pages_ = (bytes + page - 1) / page + 1;
    base_ = static_cast<char*>(
        mmap(nullptr, pages_ * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base_ != MAP_FAILED);
    REQUIRE(mprotect(base_ + (pages_ - 1) * page, page, PROT_NONE) == 0);
    data_ = base_ + (pages_ - 1) * page - bytes;
  }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  ~Guarded() { munmap(base_, pages_ * size_t(sysconf(_SC_PAGESIZE))); }
  void* data() const { return data_; }

 private:
  size_t pages_ = 0;
  char* base_ = nullptr;
  char* data_ = nullptr;
};

// An input tensor in guarded storage.
struct In {
  TensorDesc desc;
  std::shared_ptr<Guarded> mem;
  TensorView view() const { return {desc, mem->data()}; }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(mem->data());
  }
};

inline In make_in(DType t, std::vector<int64_t> dims) {
  In x{TensorDesc(t, dims), nullptr};
  x.mem = std::make_shared<Guarded>(size_t(std::max<int64_t>(x.desc.nbytes(), 1)));
  return x;
}

// Values for adversarial tests: mostly N(0, spread) plus `special` fraction of
// +-inf / NaN / +-0 / repeated values (ties).
inline void fill(const In& x, uint32_t seed, float spread = 1.0f, double special = 0.0, float offset = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(offset, spread);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  float* p = x.ptr<float>();
  const int64_t n = x.desc.numel();
  for (int64_t i = 0; i < n; ++i) {
    p[i] = nd(rng);
    if (u(rng) < special) {
      const float s[] = {kInf, -kInf, kNaN, 0.0f, -0.0f, 1.0f, p[i > 0 ? i - 1 : 0]};
      p[i] = s[rng() % 7];
    }
  }
}

// Element i of x set to v converted to x's dtype (floats rounded, integers truncated).
inline void set(const In& x, int64_t i, float v) {
  switch (x.desc.dtype()) {
    case DType::f32: x.ptr<float>()[i] = v; break;
    case DType::f16: x.ptr<uint16_t>()[i] = f32_to_f16(v); break;
    case DType::bf16: x.ptr<uint16_t>()[i] = f32_to_bf16(v); break;
    case DType::i32: x.ptr<int32_t>()[i] = int32_t(v); break;
    case DType::i64: x.ptr<int64_t>()[i] = int64_t(v); break;
    case DType::u8: x.ptr<uint8_t>()[i] = uint8_t(v); break;
    case DType::i8: x.ptr<int8_t>()[i] = int8_t(v); break;
  }
}

// An output buffer framed by guard words on both sides; the output starts on a 64-byte
// boundary (as the arena places tensors), so the streamed-store paths can be taken.
struct Out {
  TensorDesc desc;
  std::vector<uint32_t> room;
  std::span<uint32_t> words;
  static constexpr size_t kGuard = 16;
  static constexpr uint32_t kGuardWord = 0xdeadbeefu;
  explicit Out(TensorDesc d) : desc(d), room(kGuard * 2 + 16 + size_t(d.nbytes() + 3) / 4, kGuardWord) {
    size_t start = 0;
    while (reinterpret_cast<uintptr_t>(room.data() + start + kGuard) % 64 != 0) ++start;
    words = std::span<uint32_t>(room.data() + start, room.size() - 16);
  }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  void* data() { return words.data() + kGuard; }
  TensorView view() { return {desc, data()}; }
  bool guards_intact() const {
    const size_t body = size_t(desc.nbytes() + 3) / 4;
    for (size_t i = 0; i < kGuard; ++i)
      if (words[i] != kGuardWord || words[kGuard + body + i] != kGuardWord) return false;
    return true;
  }
  std::vector<std::byte> bytes() const {
    const auto* b = reinterpret_cast<const std::byte*>(words.data() + kGuard);
    return {b, b + desc.nbytes()};
  }
  template <typename T>
  T at(int64_t i) const {
    T v;
    std::memcpy(&v, reinterpret_cast<const char*>(words.data() + kGuard) + i * int64_t(sizeof(T)), sizeof(T));
    return v;
  }
};

inline Status run(KernelFn fn, const OpAttrs& attrs, const std::vector<In>& ins, Out& out, ThreadPool* pool) {
  std::vector<TensorView> in;
  for (const In& x : ins) in.push_back(x.view());
  TensorView o = out.view();
  KernelArgs a;
  a.attrs = &attrs;
  a.inputs = in;
  a.outputs = std::span<const TensorView>(&o, 1);
  a.pool = pool;
  return fn(a);
}

inline ThreadPool* two_threads() {
  static std::unique_ptr<ThreadPool> pool = std::move(make_thread_pool(2).value());
  return pool.get();
}

// Bitwise equality where NaN matches any NaN (float outputs) — the conformance rule.
inline bool same_bits(const Out& a, const Out& b) {
  if (a.desc.dtype() != DType::f32) return a.bytes() == b.bytes();
  for (int64_t i = 0; i < a.desc.numel(); ++i) {
    const float x = a.at<float>(i), y = b.at<float>(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(&x, &y, 4) != 0) return false;
  }
  return true;
}

// The conformance metric: NaN/Inf positions equal, norm error and max |a-b|/max(1,|b|).
inline void check_close(const Out& got, const Out& want, double tol) {
  double d2 = 0, b2 = 0, worst = 0;
  int64_t bad_special = 0, worst_at = -1;
  for (int64_t i = 0; i < got.desc.numel(); ++i) {
    const double a = got.at<float>(i), b = want.at<float>(i);
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) ++bad_special;
      continue;
    }
    d2 += (a - b) * (a - b);
    b2 += b * b;
    const double e = std::fabs(a - b) / std::max(1.0, std::fabs(b));
    if (e > worst) worst = e, worst_at = i;
  }
  const double norm = b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2);
  CHECK_MESSAGE(bad_special == 0, bad_special, " NaN/Inf mismatches");
  CHECK_MESSAGE(norm <= tol, "norm error ", norm);
  CHECK_MESSAGE(worst <= tol, "element error ", worst, " at ", worst_at, " got ",
                worst_at >= 0 ? got.at<float>(worst_at) : 0.f, " want ",
                worst_at >= 0 ? want.at<float>(worst_at) : 0.f);
}

// Runs `fn` (serially and on two threads) and `ref`, and compares: exactly when tol == 0.
inline void compare(KernelFn fn, KernelFn ref, const OpAttrs& attrs, const std::vector<In>& ins,
                    TensorDesc out_desc, double tol) {
  Out want(out_desc), got(out_desc), got2(out_desc);
  REQUIRE(run(ref, attrs, ins, want, nullptr).ok());
  const Status st = run(fn, attrs, ins, got, nullptr);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  REQUIRE(run(fn, attrs, ins, got2, two_threads()).ok());
  CHECK(got.guards_intact());
  CHECK(got2.guards_intact());
  CHECK_MESSAGE(same_bits(got, got2), "1 and 2 threads differ");
  if (tol == 0) {
    CHECK_MESSAGE(same_bits(got, want), "not bit-exact vs the reference");
  } else {
    check_close(got, want, tol);
  }
}

// The kernels of one ISA level, by op.
struct Level {
  cpu::Isa isa;
  const char* name;
  KernelFn add, sub, mul, scale, exp, tanh, relu, gelu, gelu_tanh, cast, softmax, layer_norm, embedding,
      cummax, cumsum, segment_max;
};
#define LR_LEVEL(isa)                                                                                       \
  Level {                                                                                                   \
    cpu::Isa::isa, #isa, cpu::cpu_add_f32_##isa, cpu::cpu_sub_f32_##isa, cpu::cpu_mul_f32_##isa,            \
        cpu::cpu_scale_f32_##isa, cpu::cpu_exp_f32_##isa, cpu::cpu_tanh_f32_##isa, cpu::cpu_relu_f32_##isa, \
        cpu::cpu_gelu_f32_##isa, cpu::cpu_gelu_tanh_f32_##isa, cpu::cpu_cast_##isa,                         \
        cpu::cpu_softmax_f32_##isa, cpu::cpu_layer_norm_f32_##isa, cpu::cpu_embedding_##isa,                \
        cpu::cpu_cummax_f32_##isa, cpu::cpu_cumsum_f32_##isa, cpu::cpu_segment_max_f32_##isa                \
  }
inline const Level kLevels[] = {LR_LEVEL(avx2), LR_LEVEL(avx512)};
#undef LR_LEVEL

template <typename Fn>
void for_each_level(Fn&& fn) {
  for (const Level& l : kLevels) {
    if (!has(l.isa)) {
      MESSAGE("skipping ISA level ", l.name, ": not supported by this machine");
      continue;
    }
    CAPTURE(l.name);
    fn(l);
  }
}

}  // namespace longrun::membound_tests
