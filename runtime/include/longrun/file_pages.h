// Read-only file mappings whose pages may be dropped from memory and read back from the file
// on the next access (the safetensors reader registers its mmaps here).
//
// A backend that keeps its own copy of a weight (the cpu backend's prepacked GEMM weights)
// calls release_file_pages() on the original bytes once it has copied them, so the process
// does not hold both: the mapping stays valid, and a later read (another backend, another
// ISA's packing, an embedding lookup of a tied table) faults the pages back in from the page
// cache or the file. Memory that is not inside a registered mapping (caller buffers, heap
// copies) is never touched: dropping anonymous pages would lose their contents.
#pragma once

#include <cstddef>

namespace longrun {

// Registers [base, base + bytes) as a PROT_READ, MAP_PRIVATE mapping of a regular file.
void register_file_mapping(const void* base, size_t bytes);
// Forgets the mapping starting at `base` (call before unmapping it).
void unregister_file_mapping(const void* base);

// Drops the resident pages that lie wholly inside [data, data + bytes) when that range is
// inside one registered mapping; returns the bytes advised away (0 when the range is not in
// a registered mapping or covers no whole page). The contents stay readable.
size_t release_file_pages(const void* data, size_t bytes);

}  // namespace longrun
