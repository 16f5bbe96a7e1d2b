// Reading a whole small text file (config.json, tokenizer.json, vocab.txt, merges.txt, an index)
// that is untrusted input: the size limit is checked before anything is allocated.
#pragma once

#include <cstddef>
#include <string>

#include "longrun/status.h"

namespace longrun::text {

// The file's bytes, at most `max_bytes` of them. A regular file larger than that is refused from
// its size alone (nothing is read); a pipe or device (no size known, maybe endless: /dev/zero)
// is read in chunks and refused as soon as it passes the limit. Errors name `path`, the limit and
// the size (or how much was read).
Result<std::string> read_text_file(const std::string& path, size_t max_bytes);

}  // namespace longrun::text
