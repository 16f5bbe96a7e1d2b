// Helpers of the fuzz targets that read files: a per-process temporary directory (removed at
// exit) and a file writer.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace fuzz_files {

// mkdtemp("/tmp/<prefix>.XXXXXX") once per process, removed with its files at exit.
inline std::string make_temp_dir(const std::string& prefix) {
  std::string name = "/tmp/" + prefix + ".XXXXXX";
  if (!mkdtemp(name.data())) std::abort();
  static std::string made;  // one per target process
  made = name;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(made, ec);
  });
  return name;
}

inline void write_file(const std::string& path, std::string_view text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), f) != text.size()) std::abort();
  std::fclose(f);
}

}  // namespace fuzz_files
