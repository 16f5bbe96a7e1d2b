// Faults: a memory limit that makes a shape's allocation fail (clean error, session still
// usable), cancelling mid-run (prompt, next run correct), a model file changed after load.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/capi_test_util.h"

using namespace longrun::capi_tests;

namespace {

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A private copy of the small golden model in the temp dir (removed on destruction).
struct TempModel {
  std::string path;
  TempModel() {
    path = (std::filesystem::temp_directory_path() /
            ("longrun_capi_fault_" + std::to_string(::getpid()) + ".safetensors"))
               .string();
    std::filesystem::copy_file(small_model_path(), path, std::filesystem::copy_options::overwrite_existing);
  }
  ~TempModel() { std::filesystem::remove(path); }
};

// What one shape needs against a limit (arena + workspaces + weight copies).
uint64_t need_of(const lr_memory_need& m) { return m.arena_bytes + m.workspace_bytes + m.weight_copy_bytes; }

lr_memory_need plan_memory(lr_session* session, const lr_tensor* ids) {
  const char* in[] = {"input_ids"};
  const lr_tensor* t[] = {ids};
  lr_memory_need m{};
  REQUIRE_MESSAGE(lr_session_plan_memory(session, in, t, 1, &m) == LR_OK, std::string(lr_last_error()));
  return m;
}

}  // namespace

TEST_CASE("faults: a memory limit refuses a shape cleanly and the session keeps working") {
  ModelPtr model = load_model(small_model_path());
  TensorPtr small = ids_tensor(make_ids(8, 1), 1, 8);
  TensorPtr large = ids_tensor(make_ids(300, 2), 1, 300);
  // The probe plans both shapes first and keeps the model's prepacked cpu weights alive: the
  // limited session shares them (copies another session made are not counted again).
  SessionPtr probe = make_session(model.get(), make_options("cpu", 1).get());
  const lr_memory_need first = plan_memory(probe.get(), small.get());
  CHECK(first.weight_copy_bytes > 0);  // the probe's first plan packed the weights
  lr_memory_need small_need = plan_memory(probe.get(), small.get());
  const lr_memory_need large_need = plan_memory(probe.get(), large.get());
  CHECK(large_need.weight_copy_bytes == 0);
  small_need.weight_copy_bytes = 0;
  REQUIRE(need_of(large_need) > need_of(small_need) + 4096);
  const uint64_t limit = (need_of(small_need) + need_of(large_need)) / 2;
  OptionsPtr opts = make_options("cpu", 1);
  REQUIRE(lr_session_options_set_memory_limit(opts.get(), limit) == LR_OK);
  SessionPtr session = make_session(model.get(), opts.get());
  lr_status st;
  const std::vector<float> before = run_logits(session.get(), small.get(), &st);
  REQUIRE_MESSAGE(st == LR_OK, std::string(lr_last_error()));
  for (int k = 0; k < 3; ++k) {
    run_logits(session.get(), large.get(), &st);
    CHECK(st == LR_OUT_OF_MEMORY);
    const std::string e = lr_last_error();
    CHECK(e.find("over the session's memory limit of " + std::to_string(limit) + " bytes") !=
          std::string::npos);
    CHECK(e.find("input_ids i64[1,300]") != std::string::npos);
    const std::vector<float> after = run_logits(session.get(), small.get(), &st);
    REQUIRE(st == LR_OK);
    CHECK(bitwise_equal(before, after));
  }
}

TEST_CASE("faults: weight copies over the memory limit fail cleanly; shared copies make it fit") {
  ModelPtr model = load_model(small_model_path());
  TensorPtr ids = ids_tensor(make_ids(8, 1), 1, 8);
  SessionPtr plain = make_session(model.get(), make_options("cpu", 1).get());
  const lr_memory_need need = plan_memory(plain.get(), ids.get());
  REQUIRE(need.weight_copy_bytes > 0);
  lr_status st;
  const std::vector<float> expected = run_logits(plain.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);
  plain.reset();  // nobody holds the packed weights now

  // Room for the arena and workspaces, not for a packed copy of the weights.
  const uint64_t limit = need.arena_bytes + need.workspace_bytes + need.weight_copy_bytes / 2;
  OptionsPtr opts = make_options("cpu", 1);
  REQUIRE(lr_session_options_set_memory_limit(opts.get(), limit) == LR_OK);
  SessionPtr limited = make_session(model.get(), opts.get());
  for (int k = 0; k < 2; ++k) {
    run_logits(limited.get(), ids.get(), &st);
    CHECK(st == LR_OUT_OF_MEMORY);
    const std::string e = lr_last_error();
    CHECK(e.find("a weight copy of ") != std::string::npos);  // refused before it was allocated
    CHECK(e.find("over the session's memory limit of " + std::to_string(limit) + " bytes") !=
          std::string::npos);
  }
  // Another session's copy is shared, not counted: the same limited session now runs.
  SessionPtr holder = make_session(model.get(), make_options("cpu", 1).get());
  REQUIRE(run_logits(holder.get(), ids.get(), &st).size() == expected.size());
  REQUIRE(st == LR_OK);
  const std::vector<float> after = run_logits(limited.get(), ids.get(), &st);
  REQUIRE_MESSAGE(st == LR_OK, std::string(lr_last_error()));
  CHECK(bitwise_equal(after, expected));
}

TEST_CASE("faults: cancelling mid-run returns at once and the next run is correct") {
  struct Cancel {
    int calls = 0;
    int cancel_at = 0;  // 0: never
  } c;
  ModelPtr model = load_model(small_model_path());
  OptionsPtr opts = make_options("cpu", 1);
  REQUIRE(lr_session_options_set_progress_callback(
              opts.get(),
              [](void* user, int done, int) {
                auto* cc = static_cast<Cancel*>(user);
                ++cc->calls;
                return cc->cancel_at == 0 || done < cc->cancel_at ? 1 : 0;
              },
              &c) == LR_OK);
  SessionPtr session = make_session(model.get(), opts.get());
  SessionPtr plain = make_session(model.get(), nullptr);
  TensorPtr ids = ids_tensor(make_ids(2 * 100, 4), 2, 100);
  lr_status st;
  const std::vector<float> expected = run_logits(plain.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);
  const std::vector<float> first = run_logits(session.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);
  const int total = c.calls;
  REQUIRE(total > 4);
  CHECK(bitwise_equal(first, expected));
  for (int at : {1, total / 2, total - 1}) {
    CAPTURE(at);
    c = Cancel{0, at};
    run_logits(session.get(), ids.get(), &st);
    CHECK(st == LR_CANCELLED);
    CHECK(c.calls == at);  // no node ran after the callback said stop
    CHECK(std::string(lr_last_error()).find("cancelled after node " + std::to_string(at)) !=
          std::string::npos);
    c = Cancel{};
    const std::vector<float> next = run_logits(session.get(), ids.get(), &st);
    REQUIRE(st == LR_OK);
    CHECK(bitwise_equal(next, expected));
  }
}

TEST_CASE("faults: a model file truncated, rewritten or replaced after load is detected") {
  TempModel tmp;
  ModelPtr model = load_model(tmp.path);
  SessionPtr session = make_session(model.get(), nullptr);
  TensorPtr ids = ids_tensor(make_ids(8, 3), 1, 8);
  lr_status st;
  run_logits(session.get(), ids.get(), &st);
  REQUIRE(st == LR_OK);

  SUBCASE("truncated") {
    REQUIRE(::truncate(tmp.path.c_str(), 1000) == 0);
    run_logits(session.get(), ids.get(), &st);  // must not touch the shrunken mapping (SIGBUS)
    CHECK(st == LR_FORMAT_ERROR);
    CHECK(std::string(lr_last_error()).find("changed since it was loaded (size ") != std::string::npos);
    lr_session* s2 = nullptr;
    CHECK(lr_session_create(model.get(), nullptr, &s2) == LR_FORMAT_ERROR);
  }
  SUBCASE("rewritten in place (same size, new mtime)") {
    struct stat st0 {};
    REQUIRE(::stat(tmp.path.c_str(), &st0) == 0);
    timespec times[2] = {st0.st_atim, st0.st_mtim};
    times[1].tv_sec += 5;
    REQUIRE(::utimensat(AT_FDCWD, tmp.path.c_str(), times, 0) == 0);
    run_logits(session.get(), ids.get(), &st);
    CHECK(st == LR_FORMAT_ERROR);
    CHECK(std::string(lr_last_error()).find("modified") != std::string::npos);
  }
  SUBCASE("replaced by rename") {
    const std::string other = tmp.path + ".new";
    std::filesystem::copy_file(small_model_path(), other);
    REQUIRE(std::rename(other.c_str(), tmp.path.c_str()) == 0);
    run_logits(session.get(), ids.get(), &st);
    CHECK(st == LR_FORMAT_ERROR);
    CHECK(std::string(lr_last_error()).find("replaced by another file") != std::string::npos);
  }
  SUBCASE("removed") {
    std::filesystem::remove(tmp.path);
    run_logits(session.get(), ids.get(), &st);
    CHECK(st == LR_FORMAT_ERROR);
  }
}
