#include "longrun/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace longrun {

Result<std::string> read_text_file(const std::string& path, size_t max_bytes,
                                   const TextFileOptions& options) {
  const bool in = options.dash_is_stdin && path == "-";
  const std::string name = !options.name.empty() ? options.name : in ? "- (standard input)" : path;
  const int fd = in ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(name + ": cannot open (" + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    bool owned;
    ~Closer() {
      if (owned) ::close(fd);
    }
  } closer{fd, !in};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(name + ": cannot stat (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) return invalid_argument(name + ": is a directory, not a text file");
  constexpr size_t kMiB = size_t{1} << 20;
  std::string limit = "the limit of " + std::to_string(max_bytes) + " bytes";
  if (max_bytes >= kMiB && max_bytes % kMiB == 0) limit += " (" + std::to_string(max_bytes / kMiB) + " MiB)";
  limit += " for this file";
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes)
    return format_error(name + ": " + std::to_string(st.st_size) + " bytes is larger than " + limit);
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(size_t(st.st_size));
  // Uninitialised: a small file touches only the pages read() writes.
  const std::unique_ptr<char[]> buf(new char[kMiB]);
  for (;;) {
    const ssize_t n = ::read(fd, buf.get(), kMiB);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(name + ": read failed (" + std::strerror(errno) + ")");
    if (n == 0) return text;
    if (size_t(n) > max_bytes - text.size())
      return format_error(name + ": larger than " + limit +
                          " (its size was not known in advance; reading stopped at " +
                          std::to_string(text.size() + size_t(n)) + " bytes)");
    text.append(buf.get(), size_t(n));
  }
}

}  // namespace longrun
