#include "text/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace longrun::text {

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(path + ": cannot open (" + std::strerror(errno) + ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(path + ": cannot stat (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) return invalid_argument(path + ": is a directory, not a text file");
  const std::string limit = "the limit of " + std::to_string(max_bytes) + " bytes for this file";
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes)
    return format_error(path + ": " + std::to_string(st.st_size) + " bytes is larger than " + limit);
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(path + ": read failed (" + std::strerror(errno) + ")");
    if (n == 0) return text;
    if (size_t(n) > max_bytes - text.size())
      return format_error(path + ": larger than " + limit +
                          " (its size was not known in advance; reading stopped at " +
                          std::to_string(text.size() + size_t(n)) + " bytes)");
    text.append(buf, size_t(n));
  }
}

}  // namespace longrun::text
