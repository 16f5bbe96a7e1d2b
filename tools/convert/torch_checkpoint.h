// torch.save files: the zip format (torch >= 1.6) and the legacy sequential format
// (docs/checkpoints.md#pytorch-zip-checkpoints). Both parse their pickle with the safe parser (pickle.h)
// and check every storage against the bytes the file really holds.
#pragma once

#include <span>
#include <string>

#include "source.h"

namespace longrun::convert {

// True when `file` starts like a torch zip archive / a legacy torch.save stream.
bool looks_like_torch_zip(std::span<const std::byte> file);
bool looks_like_torch_legacy(std::span<const std::byte> file);

// Reads the tensors of a torch.save zip archive held in `file` (which must stay alive: the
// tensors point into it). `label` names the file in errors.
Status read_torch_zip(std::span<const std::byte> file, const std::string& label, const ReadOptions& options,
                      SourceCheckpoint* out);
// Same for the legacy format: magic, protocol, sys_info, object and storage-key pickles,
// then each storage as an int64 element count followed by its raw little-endian bytes.
Status read_torch_legacy(std::span<const std::byte> file, const std::string& label,
                         const ReadOptions& options, SourceCheckpoint* out);

}  // namespace longrun::convert
