// --inspect: a human-readable listing of a source checkpoint (format, files, metadata,
// tensors with dtype/shape/view, notes on non-tensor entries).
#pragma once

#include <string>

#include "source.h"

namespace longrun::convert {

std::string inspect_report(const SourceCheckpoint& src);

}  // namespace longrun::convert
