// Thread affinity through the C API (lr_session_options_set_affinity): a session pinned to a
// 1-CPU and a 2-CPU list gives logits bitwise equal to an unpinned session with the same
// thread count, says where it runs, leaves the calling thread's mask as it was, and bad CPU
// lists fail at lr_session_create naming the CPU. (Where each chunk runs is checked on the
// pool itself: tests/unit/thread_pool_affinity_test.cpp.) Spinning workers
// (lr_session_options_set_spin_us) likewise leave the logits unchanged, and so does a
// session that follows its caller (lr_session_options_set_auto_affinity, on by default where
// the threads are as many as the allowed CPUs) or does not, also with sessions run side by
// side from several threads.
#include <doctest/doctest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "longrun/thread_pool.h"
#include "support/capi_test_util.h"

using namespace longrun::capi_tests;

namespace {

cpu_set_t caller_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0);
  return set;
}

// The logits of a plain (no CPU list, non-spinning) 2-thread cpu session: what every pinned
// or spinning variant must give bit for bit.
std::vector<float> plain_logits(lr_model* model, const lr_tensor* ids) {
  OptionsPtr opts = make_options("cpu", 2);
  SessionPtr plain = make_session(model, opts.get());
  lr_status st;
  std::vector<float> logits = run_logits(plain.get(), ids, &st);
  REQUIRE(st == LR_OK);
  return logits;
}

// Three runs of `session`, each bitwise equal to `expected`.
void check_runs_match(lr_session* session, const lr_tensor* ids, const std::vector<float>& expected) {
  for (int k = 0; k < 3; ++k) {
    lr_status st;
    const std::vector<float> got = run_logits(session, ids, &st);
    REQUIRE(st == LR_OK);
    REQUIRE(got.size() == expected.size());
    CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("C API affinity: pinned sessions match unpinned ones bitwise and restore the caller's mask") {
  const std::vector<int> allowed = longrun::allowed_cpus();
  REQUIRE_FALSE(allowed.empty());
  ModelPtr model = load_model(small_model_path());
  TensorPtr ids = ids_tensor(make_ids(2 * 200, 3), 2, 200);
  const std::vector<float> expected = plain_logits(model.get(), ids.get());

  std::vector<std::vector<int>> lists = {{allowed[0]}};
  if (allowed.size() >= 2) lists.push_back({allowed[0], allowed[1]});
  for (const auto& cpus : lists) {
    CAPTURE(cpus.size());
    OptionsPtr opts = make_options("cpu", 2);
    REQUIRE(lr_session_options_set_affinity(opts.get(), cpus.data(), cpus.size()) == LR_OK);
    SessionPtr session = make_session(model.get(), opts.get());
    const char* desc = nullptr;
    REQUIRE(lr_session_backend(session.get(), &desc) == LR_OK);
    CHECK(std::string(desc).find("2 threads, CPUs " + longrun::cpu_list_text(cpus)) != std::string::npos);
    const cpu_set_t before = caller_mask();
    check_runs_match(session.get(), ids.get(), expected);
    const cpu_set_t after = caller_mask();
    CHECK(CPU_EQUAL(&before, &after));
  }

  // threads = 0 with a list: one thread per CPU, allowed under the determinism switch.
  OptionsPtr per_cpu = make_options("cpu", 0);
  REQUIRE(lr_session_options_set_deterministic(per_cpu.get(), 1) == LR_OK);
  REQUIRE(lr_session_options_set_affinity(per_cpu.get(), allowed.data(), 1) == LR_OK);
  SessionPtr one = make_session(model.get(), per_cpu.get());
  const char* desc = nullptr;
  REQUIRE(lr_session_backend(one.get(), &desc) == LR_OK);
  CHECK(std::string(desc).find("1 thread, CPUs") != std::string::npos);
}

TEST_CASE("C API affinity: bad CPU lists are refused by name") {
  const std::vector<int> allowed = longrun::allowed_cpus();
  int outside = 0;
  while (std::binary_search(allowed.begin(), allowed.end(), outside)) ++outside;
  ModelPtr model = load_model(small_model_path());
  lr_session* s = nullptr;

  OptionsPtr opts = make_options("cpu", 2);
  const int bad[] = {allowed[0], outside};
  REQUIRE(lr_session_options_set_affinity(opts.get(), bad, 2) == LR_OK);  // checked at create
  CHECK(lr_session_create(model.get(), opts.get(), &s) == LR_INVALID_ARGUMENT);
  CHECK(s == nullptr);
  const std::string err = lr_last_error();
  CHECK(err.find("CPU " + std::to_string(outside) + " is not one this process may run on") !=
        std::string::npos);
  CHECK(err.find("lr_session_create") != std::string::npos);

  const int twice[] = {allowed[0], allowed[0]};
  REQUIRE(lr_session_options_set_affinity(opts.get(), twice, 2) == LR_OK);
  CHECK(lr_session_create(model.get(), opts.get(), &s) == LR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error()).find("listed twice") != std::string::npos);

  CHECK(lr_session_options_set_affinity(opts.get(), nullptr, 1) == LR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error()).find("cpus is NULL") != std::string::npos);
  CHECK(lr_session_options_set_affinity(nullptr, allowed.data(), 1) == LR_INVALID_ARGUMENT);

  OptionsPtr ref = make_options("reference", 1);
  REQUIRE(lr_session_options_set_affinity(ref.get(), allowed.data(), 1) == LR_OK);
  CHECK(lr_session_create(model.get(), ref.get(), &s) == LR_UNSUPPORTED);
  CHECK(std::string(lr_last_error()).find("cpu backend only") != std::string::npos);

  // count 0 clears the list.
  REQUIRE(lr_session_options_set_affinity(opts.get(), nullptr, 0) == LR_OK);
  SessionPtr fine = make_session(model.get(), opts.get());
}

TEST_CASE("C API spin: spinning workers give the same logits; out-of-range and non-cpu are refused") {
  ModelPtr model = load_model(small_model_path());
  TensorPtr ids = ids_tensor(make_ids(2 * 200, 3), 2, 200);
  const std::vector<float> expected = plain_logits(model.get(), ids.get());

  OptionsPtr opts = make_options("cpu", 2);
  REQUIRE(lr_session_options_set_spin_us(opts.get(), 500) == LR_OK);
  SessionPtr session = make_session(model.get(), opts.get());
  const char* desc = nullptr;
  REQUIRE(lr_session_backend(session.get(), &desc) == LR_OK);
  CHECK(std::string(desc).find("2 threads, ") != std::string::npos);
  CHECK(std::string(desc).find("workers spin 500 us") != std::string::npos);
  check_runs_match(session.get(), ids.get(), expected);

  CHECK(lr_session_options_set_spin_us(opts.get(), 1000001) == LR_OUT_OF_RANGE);
  CHECK(std::string(lr_last_error()).find("expected 0..1000000 microseconds, found 1000001") !=
        std::string::npos);
  CHECK(lr_session_options_set_spin_us(nullptr, 10) == LR_INVALID_ARGUMENT);
  lr_session* s = nullptr;
  OptionsPtr ref = make_options("reference", 1);
  REQUIRE(lr_session_options_set_spin_us(ref.get(), 10) == LR_OK);
  CHECK(lr_session_create(model.get(), ref.get(), &s) == LR_UNSUPPORTED);
  CHECK(s == nullptr);
  CHECK(std::string(lr_last_error()).find("spin_us applies to the cpu backend only") != std::string::npos);
}

TEST_CASE("C API auto affinity: following the caller or not gives the same logits; the session says which") {
  const std::vector<int> allowed = longrun::allowed_cpus();
  ModelPtr model = load_model(small_model_path());
  TensorPtr ids = ids_tensor(make_ids(2 * 200, 3), 2, 200);
  const std::vector<float> expected = plain_logits(model.get(), ids.get());
  for (int enabled : {1, 0}) {
    CAPTURE(enabled);
    OptionsPtr opts = make_options("cpu", 0);  // as many threads as allowed CPUs
    REQUIRE(lr_session_options_set_auto_affinity(opts.get(), enabled) == LR_OK);
    SessionPtr session = make_session(model.get(), opts.get());
    const char* desc = nullptr;
    REQUIRE(lr_session_backend(session.get(), &desc) == LR_OK);
    const bool follows = std::string(desc).find("following the caller on CPUs " +
                                                longrun::cpu_list_text(allowed)) != std::string::npos;
    CHECK(follows == (enabled == 1 && allowed.size() >= 2));
    const cpu_set_t before = caller_mask();
    lr_status st;
    const std::vector<float> got = run_logits(session.get(), ids.get(), &st);
    REQUIRE(st == LR_OK);
    const cpu_set_t after = caller_mask();
    CHECK(CPU_EQUAL(&before, &after));  // the caller is not left pinned
    if (allowed.size() == 2) {          // the same thread count as plain_logits: the same bits
      REQUIRE(got.size() == expected.size());
      CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
    }
  }
  CHECK(lr_session_options_set_auto_affinity(nullptr, 1) == LR_INVALID_ARGUMENT);
}

TEST_CASE("C API auto affinity: sessions following their callers run side by side from four threads") {
  // Each run enters its session's pool once (ThreadPool::run_inside): four threads with a
  // session each, and the same four on one shared session, must all give the first run's
  // bits and leave every calling thread's mask as it was.
  constexpr int kThreads = 4, kRuns = 12;
  ModelPtr model = load_model(small_model_path());
  TensorPtr ids = ids_tensor(make_ids(2 * 200, 5), 2, 200);
  OptionsPtr opts = make_options("cpu", 0);  // as many threads as allowed CPUs: follows its caller
  SessionPtr shared = make_session(model.get(), opts.get());
  lr_status st;
  const std::vector<float> expected = run_logits(shared.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);
  std::atomic<int> failures{0}, mismatches{0}, masks_changed{0};
  auto run_and_check = [&](lr_session* session) {
    const cpu_set_t before = caller_mask();
    lr_status s;
    const std::vector<float> got = run_logits(session, ids.get(), &s);
    const cpu_set_t after = caller_mask();
    if (s != LR_OK) return void(++failures);
    if (got.size() != expected.size() ||
        std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) != 0)
      ++mismatches;
    if (!CPU_EQUAL(&before, &after)) ++masks_changed;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      lr_session* own = nullptr;
      if (lr_session_create(model.get(), opts.get(), &own) != LR_OK) return void(++failures);
      for (int r = 0; r < kRuns; ++r) {
        run_and_check(own);
        run_and_check(shared.get());
      }
      lr_session_free(own);
    });
  for (std::thread& t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(mismatches.load() == 0);
  CHECK(masks_changed.load() == 0);
}
