// A fresh directory under /tmp for one test, removed with everything in it (permissions
// restored first, so a test may make it read-only) when the object goes out of scope.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace longrun::test_support {

struct TempDir {
  std::filesystem::path path;
  // tag names the test in the directory name: /tmp/longrun-<tag>-XXXXXX.
  explicit TempDir(const std::string& tag) {
    std::string tmpl = "/tmp/longrun-" + tag + "-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path, ec);
  }
  // The names of the entries in the directory (no order).
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& e : std::filesystem::directory_iterator(path)) n.push_back(e.path().filename().string());
    return n;
  }
};

}  // namespace longrun::test_support
