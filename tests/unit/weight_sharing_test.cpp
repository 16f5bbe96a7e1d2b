// Memory the cpu backend holds: prepacked GEMM weights shared by every plan and session
// (backends/cpu/gemm_weight_cache.h) and counted in the memory report, the original file
// pages let go once packed (longrun/file_pages.h), one run-time scratch per prepared graph
// (host::request_scratch).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/gemm_weight_cache.h"
#include "longrun/file_pages.h"
#include "longrun/session.h"
#include "unit/cpu_test_util.h"

using namespace longrun;

namespace {

constexpr int64_t kIn = 32, kOut = 48;

// y = x W^T for x [1, n, kIn], W [kOut, kIn] in `w`.
GraphFactory linear_factory(std::shared_ptr<const std::vector<float>> w) {
  return cpu_test::linear_factory(kIn, kOut, std::move(w), nullptr);
}

std::vector<float> run(Session& s, int64_t n) {
  std::vector<float> x(size_t(n * kIn));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.25f;
  return cpu_test::run_rows(s, std::move(x), kIn);
}

MemoryReport report(Session& s, int64_t n) { return cpu_test::memory_report(s, n, kIn); }

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * int64_t(::sysconf(_SC_PAGESIZE));
}

// The resident bytes of the mapping that contains `p` (/proc/self/smaps), -1 when not found.
int64_t mapping_rss(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') == std::string::npos || line.find('-') < line.find(':')) {
      if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
        inside = addr >= lo && addr < hi;
        continue;
      }
    }
    if (inside && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4)) * 1024;
  }
  return -1;
}

// A read-only file mapping of `count` floats, registered as a file mapping (as the
// safetensors reader does) and unregistered and unmapped on destruction.
class MappedFloats {
 public:
  explicit MappedFloats(int64_t count) : bytes_(size_t(count) * sizeof(float)) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("longrun_mapped_w_" + std::to_string(::getpid())))
            .string();
    {
      std::vector<float> data(static_cast<size_t>(count));
      for (size_t i = 0; i < data.size(); ++i) data[i] = float(int(i * 7 % 23) - 11) / 16.0f;
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(bytes_));
    }
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    map_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    std::filesystem::remove(path);
    REQUIRE(map_ != MAP_FAILED);
    register_file_mapping(map_, bytes_);
  }
  ~MappedFloats() {
    unregister_file_mapping(map_);
    ::munmap(map_, bytes_);
  }
  const float* data() const { return static_cast<const float*>(map_); }
  int64_t bytes() const { return int64_t(bytes_); }
  // Reads every page, so that all of them are resident.
  float touch() const {
    float sum = 0;
    for (size_t i = 0; i < bytes_ / sizeof(float); i += 256) sum += data()[i];
    return sum;
  }

 private:
  size_t bytes_;
  void* map_ = nullptr;
};

}  // namespace

TEST_CASE("cpu backend: a packed weight's file pages go at every precision, unless another op reads it") {
  if (int(cpu::detect_isa()) < int(cpu::Isa::avx2)) return;  // no prepacked GEMM, no int8 / bf16 path
  constexpr int64_t kN = 256, kK = 512;                      // 512 KiB of f32
  const MappedFloats w(kN * kK);
  // y = x W^T; with `also_add`, z = W + W reads the weight outside a matmul too.
  auto factory = [&w](bool also_add) -> GraphFactory {
    return [&w, also_add](std::span<const TensorDesc> descs) -> Result<Graph> {
      GraphBuilder b;
      const ValueId x = b.input("x", descs[0]);
      const ValueId wt = b.weight("w", TensorDesc(DType::f32, {kN, kK}), w.data());
      b.output(b.matmul({x, wt}, {.trans_b = true}), "y");
      if (also_add) b.output(b.add({wt, wt}), "z");
      return b.build();
    };
  };
  for (Precision precision : {Precision::f32, Precision::int8, Precision::bf16}) {
    for (bool also_add : {false, true}) {
      CAPTURE(int(precision));
      CAPTURE(also_add);
      auto s =
          Session::create(factory(also_add), {"x"}, {.backend = "cpu", .threads = 1, .precision = precision});
      REQUIRE(s.ok());
      CHECK(w.touch() != 12345.0f);
      const int64_t before = mapping_rss(w.data());
      REQUIRE(before >= w.bytes() / 2);
      const TensorDesc d(DType::f32, {2, kK});
      auto r = (*s)->memory_report({&d, 1});
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      CHECK(r->weight_bytes_copied > 0);  // packed
      const int64_t after = mapping_rss(w.data());
      if (also_add)
        CHECK(after >= before);  // still mapped: the add reads the original
      else
        CHECK(after < before / 8);  // let go
      // The run reads the packed copy; the values are unchanged either way.
      std::vector<float> x(size_t(2 * kK), 0.5f);
      NamedTensorRef in{"x", TensorView{d, x.data()}};
      auto out = (*s)->run({&in, 1});
      REQUIRE_MESSAGE(out.ok(), out.status().to_string());
      if (!also_add) CHECK(mapping_rss(w.data()) < before / 8);
    }
  }
}

TEST_CASE("cpu backend: plans and sessions share one packed copy of a weight") {
  auto w = std::make_shared<std::vector<float>>(size_t(kOut * kIn));
  for (size_t i = 0; i < w->size(); ++i) (*w)[i] = float(int(i % 11) - 5) / 8.0f;
  const size_t before = cpu::gemm::packed_weight_entries();
  {
    auto a = Session::create(linear_factory(w), {"x"}, {.backend = "cpu", .threads = 1});
    auto b = Session::create(linear_factory(w), {"x"}, {.backend = "cpu", .threads = 1});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    const MemoryReport first = report(**a, 3);
    CHECK(first.weight_bytes_copied >= kOut * kIn * int64_t(sizeof(float)));  // packed (panels may pad)
    CHECK(first.workspace_bytes >= 0);
    CHECK(cpu::gemm::packed_weight_entries() == before + 1);
    // Another shape of the same session and a second session reuse the packed copy.
    CHECK(report(**a, 5).weight_bytes_copied == 0);
    CHECK(report(**b, 3).weight_bytes_copied == 0);
    CHECK(cpu::gemm::packed_weight_entries() == before + 1);
    const std::vector<float> ya = run(**a, 5), yb = run(**b, 5);
    CHECK(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)) == 0);
    for (int64_t o = 0; o < kOut; ++o) {  // row 1 against a double-precision dot product
      double want = 0;
      for (int64_t k = 0; k < kIn; ++k)
        want += double(float(int((kIn + k) % 7) - 3) * 0.25f) * (*w)[size_t(o * kIn + k)];
      CHECK(ya[size_t(kOut + o)] == doctest::Approx(want).epsilon(1e-6));
    }
  }
  CHECK(cpu::gemm::packed_weight_entries() == before);  // released with the last plan
}

TEST_CASE("a memory limit counts the packed weight copies") {
  auto w = std::make_shared<std::vector<float>>(size_t(kOut * kIn), 0.5f);
  auto s = Session::create(linear_factory(w), {"x"},
                           {.backend = "cpu", .threads = 1, .memory_limit_bytes = kOut * kIn * 2});
  REQUIRE(s.ok());
  std::vector<float> x(size_t(2 * kIn), 1.0f);
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {1, 2, kIn}), x.data()}};
  for (int k = 0; k < 2; ++k) {  // refused each time; nothing is left behind
    auto out = (*s)->run({&in, 1});
    REQUIRE_FALSE(out.ok());
    CHECK(out.status().code() == StatusCode::out_of_memory);
    CHECK(out.status().message().find("a weight copy of") != std::string::npos);  // refused, not allocated
    CHECK((*s)->cached_plans() == 0);
  }
}

TEST_CASE("release_file_pages drops a registered file mapping's pages and keeps its contents") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("longrun_file_pages_" + std::to_string(::getpid())))
          .string();
  const size_t bytes = size_t(32) << 20;
  {
    std::vector<uint32_t> data(bytes / 4);
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint32_t(i * 2654435761u);
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(bytes));
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  std::filesystem::remove(path);
  REQUIRE(map != MAP_FAILED);
  const auto* words = static_cast<const uint32_t*>(map);
  auto checksum_ok = [&] {
    for (size_t i = 0; i < bytes / 4; i += 1024)
      if (words[i] != uint32_t(i * 2654435761u)) return false;
    return true;
  };

  CHECK(release_file_pages(map, bytes) == 0);  // not registered: untouched
  register_file_mapping(map, bytes);
  REQUIRE(checksum_ok());  // every page resident
  const int64_t resident = resident_bytes();
  // An unaligned sub-range: only its whole pages go.
  const size_t released = release_file_pages(static_cast<const char*>(map) + 100, bytes - 200);
  CHECK(released == bytes - size_t(::sysconf(_SC_PAGESIZE)) * 2);
  CHECK(resident - resident_bytes() >= int64_t(released) / 2);
  CHECK(checksum_ok());                                                             // read back from the file
  CHECK(release_file_pages(static_cast<const char*>(map) + bytes - 64, 128) == 0);  // past its end
  unregister_file_mapping(map);
  CHECK(release_file_pages(map, bytes) == 0);
  ::munmap(map, bytes);

  std::vector<float> heap(size_t(1) << 20, 3.0f);  // anonymous memory is never released
  CHECK(release_file_pages(heap.data(), heap.size() * sizeof(float)) == 0);
  CHECK(heap[12345] == 3.0f);
}

TEST_CASE("cpu backend: the nodes of a prepared graph share one run-time scratch") {
  // z <- z · b for `count` matmuls whose B is an activation (packed per run into scratch:
  // 100 columns are not whole NR panels, so B is not read in place): the workspace is the
  // largest node's, not the sum, and results are unchanged.
  auto chain = [](int count) {
    return [count](std::span<const TensorDesc> descs) -> Result<Graph> {
      GraphBuilder b;
      const ValueId x = b.input("x", descs[0]), m = b.input("m", descs[1]);
      ValueId z = x;
      for (int i = 0; i < count; ++i) z = b.matmul({z, m}, {.alpha = 0.5f});
      b.output(z, "y");
      return b.build();
    };
  };
  const TensorDesc xd(DType::f32, {64, 100}), md(DType::f32, {100, 100});
  const TensorDesc descs[] = {xd, md};
  std::vector<float> x(size_t(xd.numel())), m(size_t(md.numel()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) / 8.0f;
  for (size_t i = 0; i < m.size(); ++i) m[i] = float(int(i % 7) - 3) / 16.0f;
  int64_t workspace[2] = {};
  std::vector<float> outputs[2];
  for (int k = 0; k < 2; ++k) {
    const int count = k == 0 ? 1 : 4;
    auto s = Session::create(GraphFactory(chain(count)), {"x", "m"}, {.backend = "cpu", .threads = 2});
    REQUIRE(s.ok());
    auto r = (*s)->memory_report(descs);
    REQUIRE(r.ok());
    workspace[k] = r->workspace_bytes;
    NamedTensorRef in[] = {{"x", TensorView{xd, x.data()}}, {"m", TensorView{md, m.data()}}};
    auto out = (*s)->run(in);
    REQUIRE(out.ok());
    const Tensor& y = (*out)[0].tensor;
    outputs[k].assign(y.data<float>(), y.data<float>() + y.desc().numel());
  }
  CHECK(workspace[0] > 0);
  CHECK(workspace[1] == workspace[0]);
  // The 4-matmul chain against a double-precision recomputation.
  std::vector<double> z(x.begin(), x.end());
  for (int i = 0; i < 4; ++i) {
    std::vector<double> next(z.size(), 0.0);
    for (int64_t r = 0; r < 64; ++r)
      for (int64_t c = 0; c < 100; ++c) {
        double acc = 0;
        for (int64_t k = 0; k < 100; ++k) acc += z[size_t(r * 100 + k)] * m[size_t(k * 100 + c)];
        next[size_t(r * 100 + c)] = 0.5 * acc;
      }
    z = next;
  }
  for (size_t i = 0; i < z.size(); ++i)
    CHECK(outputs[1][i] == doctest::Approx(z[i]).epsilon(1e-5).scale(1e-3));
}
