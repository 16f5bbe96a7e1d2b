// Concurrency: one model shared by 8 sessions on 8 threads, each running many times; every
// output must be bitwise identical to a single-threaded run of the same input.
//
// Runs per thread: LONGRUN_RELIABILITY_RUNS (default 1000; the ThreadSanitizer build runs
// 100, tools/dev/test.sh). Small inputs (one sequence of 16 ids, 16 different id sets) keep
// 8 x 1000 runs to a few seconds on 2 cores.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/capi_test_util.h"

using namespace longrun::capi_tests;

namespace {

int runs_per_thread() {
  const char* env = std::getenv("LONGRUN_RELIABILITY_RUNS");
  return env ? std::max(1, std::atoi(env)) : 1000;
}

}  // namespace

TEST_CASE("concurrency: 8 sessions over one model on 8 threads give bitwise single-threaded results") {
  constexpr int kThreads = 8;
  constexpr int kInputs = 16;
  constexpr int64_t kLength = 16;
  ModelPtr model = load_model(small_model_path());
  std::vector<TensorPtr> inputs;
  std::vector<std::vector<float>> expected;
  {
    SessionPtr single = make_session(model.get(), nullptr);
    for (int i = 0; i < kInputs; ++i) {
      inputs.push_back(ids_tensor(make_ids(kLength, uint32_t(i)), 1, kLength));
      lr_status st;
      expected.push_back(run_logits(single.get(), inputs.back().get(), &st));
      REQUIRE(st == LR_OK);
    }
  }
  const int runs = runs_per_thread();
  MESSAGE(kThreads << " threads x " << runs << " runs");
  std::atomic<int> failures{0}, mismatches{0};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      lr_session* s = nullptr;
      if (lr_session_create(model.get(), nullptr, &s) != LR_OK) {
        first_error[size_t(t)] = lr_last_error();
        ++failures;
        return;
      }
      for (int r = 0; r < runs; ++r) {
        const int i = (r * 7 + t) % kInputs;
        lr_status st;
        const std::vector<float> got = run_logits(s, inputs[size_t(i)].get(), &st);
        if (st != LR_OK) {
          if (first_error[size_t(t)].empty()) first_error[size_t(t)] = lr_last_error();
          ++failures;
        } else if (got.size() != expected[size_t(i)].size() ||
                   std::memcmp(got.data(), expected[size_t(i)].data(), got.size() * sizeof(float)) != 0) {
          ++mismatches;
        }
      }
      lr_session_free(s);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& e : first_error)
    if (!e.empty()) MESSAGE("error: " << e);
  CHECK(failures.load() == 0);
  CHECK(mismatches.load() == 0);
}
