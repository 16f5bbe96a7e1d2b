// Reading a whole text file that is untrusted input (config.json, tokenizer.json, vocab.txt, an
// index, longrun-run --text-file): the size limit is checked before anything is allocated.
#pragma once

#include <cstddef>
#include <string>

#include "longrun/status.h"

namespace longrun {

struct TextFileOptions {
  // "-" reads standard input (left open) instead of a file named "-".
  bool dash_is_stdin = false;
  // What errors call the file; empty: the path ("- (standard input)" for standard input).
  std::string name;
};

// The file's bytes, at most `max_bytes` of them, read in 1 MiB chunks. A regular file larger
// than that is refused from its size alone (nothing is read); a pipe or device (no size known,
// maybe endless: /dev/zero) is read as it comes and refused as soon as it passes the limit. The
// open blocks as open(2) does (a named pipe waits for its writer). Errors name the file, the
// limit and the size (or how much was read): not_found (cannot open), invalid_argument (a
// directory), format_error (too large), io_error (stat or read failed). The bytes are not
// checked as UTF-8: Tokenizer::encode does that, naming the byte offset.
Result<std::string> read_text_file(const std::string& path, size_t max_bytes,
                                   const TextFileOptions& options = {});

}  // namespace longrun
