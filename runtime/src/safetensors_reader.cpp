// safetensors reader: mmap + validation as in docs/checkpoints.md#safetensors-reader.
//
// The file is untrusted. Order of checks (the reference's, then ours): length prefix present,
// header length <= 100 MB and inside the file, UTF-8, strict JSON (no duplicate keys, plain
// integers <= 2^48-1, exactly dtype/shape/data_offsets per tensor), supported dtype, rank,
// checked prod(shape) * size == end - begin, offsets sorted and contiguous from 0, and the
// last tensor ending exactly at the end of the file. Nothing is allocated in proportion to a
// size the file claims; only to the header bytes that are actually there.
//
// The mapping is MAP_PRIVATE and read-only. If another process truncates or rewrites the file
// while it is mapped, reads may fault (SIGBUS) or see new bytes: we do not defend against an
// attacker who can already write the file (the safetensors README's "Proposal 6").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <new>
#include <unordered_set>

#include "longrun/checked_math.h"
#include "longrun/file_pages.h"
#include "longrun/safetensors.h"
#include "safetensors_format.h"
#include "strict_json.h"

namespace longrun {
namespace {

namespace fmt = safetensors_format;
using json::quote_for_message;

constexpr const char* kSupportedDtypes = "F32, F16, BF16, I32, I64, U8, BOOL, I8";
constexpr const char* kTensorFields = "a tensor entry has exactly dtype, shape, data_offsets";

// Valid safetensors dtype codes (tensor.rs, enum Dtype) that longrun does not load.
bool is_other_safetensors_dtype(std::string_view code) {
  static constexpr std::string_view kOthers[] = {
      "I16",     "U16",     "U32",         "U64",         "F64", "C64",     "F8_E5M2",
      "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4",  "F6_E2M3", "F6_E3M2"};
  return std::find(std::begin(kOthers), std::end(kOthers), code) != std::end(kOthers);
}

struct ParsedTensor {
  std::string name;
  std::string code;  // dtype as written ("BOOL" stays "BOOL" for messages)
  DType dtype = DType::u8;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  uint64_t begin = 0;
  uint64_t end = 0;
};

std::string quote(std::string_view s) { return quote_for_message(s); }

std::string shape_string(const ParsedTensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(t.dims[size_t(i)]);
  }
  return s + "]";
}

std::string offsets_string(const ParsedTensor& t) {
  return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
}

// Walks the header grammar: { "__metadata__": {str: str}, name: {dtype, shape, data_offsets}, ... }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view header) : cur_(header) {}

  Status parse(std::vector<ParsedTensor>* tensors, std::map<std::string, std::string>* metadata) {
    if (!cur_.consume('{')) return cur_.expected("the header to be a JSON object ('{')");
    std::unordered_set<std::string> keys;
    if (!cur_.consume('}')) {
      for (;;) {
        std::string key;
        LR_RETURN_IF_ERROR(cur_.read_string(&key).with_context("header key"));
        if (!keys.insert(key).second)
          return format_error(key == fmt::kMetadataKey ? "duplicate key '__metadata__' in the header"
                                                       : "duplicate tensor name " + quote(key));
        if (!cur_.consume(':')) return cur_.expected("':' after key " + quote(key));
        if (key == fmt::kMetadataKey) {
          LR_RETURN_IF_ERROR(parse_metadata(metadata).with_context("__metadata__"));
        } else {
          LR_RETURN_IF_ERROR(check_name(key));
          ParsedTensor t;
          t.name = std::move(key);
          LR_RETURN_IF_ERROR(parse_tensor(&t).with_context("tensor " + quote(t.name)));
          tensors->push_back(std::move(t));
        }
        if (cur_.consume(',')) continue;
        if (cur_.consume('}')) break;
        return cur_.expected("',' or '}' in the header object");
      }
    }
    cur_.skip_ws();
    if (!cur_.at_end())
      return format_error("unexpected bytes after the header's JSON object at header byte " +
                          std::to_string(cur_.pos()) + ": found " + cur_.describe_next() +
                          " (only whitespace may pad the header)");
    return Status::ok_status();
  }

 private:
  static Status check_name(const std::string& name) {
    if (name.empty()) return format_error("tensor name is empty");
    if (name.size() > fmt::kMaxNameBytes)
      return format_error("tensor name " + quote(name) + " is " + std::to_string(name.size()) +
                          " bytes; expected at most " + std::to_string(fmt::kMaxNameBytes));
    // Escapes decode to well-formed UTF-8 (lone surrogates are refused by the cursor), and
    // raw bytes were checked with the whole header; this guards the invariant.
    if (json::find_invalid_utf8(name) != std::string_view::npos)
      return format_error("tensor name " + quote(name) + " is not valid UTF-8");
    return Status::ok_status();
  }

  Status parse_metadata(std::map<std::string, std::string>* metadata) {
    if (!cur_.consume('{')) return cur_.expected("an object of string values");
    if (cur_.consume('}')) return Status::ok_status();
    for (;;) {
      std::string key, value;
      LR_RETURN_IF_ERROR(cur_.read_string(&key).with_context("key"));
      if (!cur_.consume(':')) return cur_.expected("':' after key " + quote(key));
      if (cur_.peek() != '"')
        return format_error("key " + quote(key) + ": expected a string value, found " + cur_.describe_next() +
                            " (metadata values must be strings)");
      LR_RETURN_IF_ERROR(cur_.read_string(&value).with_context("key " + quote(key)));
      const std::string quoted_key = quote(key);
      if (!metadata->emplace(std::move(key), std::move(value)).second)
        return format_error("duplicate key " + quoted_key);
      if (cur_.consume(',')) continue;
      if (cur_.consume('}')) return Status::ok_status();
      return cur_.expected("',' or '}' in __metadata__");
    }
  }

  Status parse_tensor(ParsedTensor* t) {
    if (!cur_.consume('{')) return cur_.expected("an object (" + std::string(kTensorFields) + ")");
    static constexpr std::string_view kFields[] = {"dtype", "shape", "data_offsets"};
    bool have[3] = {};
    if (!cur_.consume('}')) {
      for (;;) {
        std::string field;
        LR_RETURN_IF_ERROR(cur_.read_string(&field).with_context("field name"));
        const size_t idx =
            size_t(std::find(std::begin(kFields), std::end(kFields), field) - std::begin(kFields));
        if (idx == 3) return format_error("unknown field " + quote(field) + " (" + kTensorFields + ")");
        if (have[idx]) return format_error("duplicate field " + quote(field));
        have[idx] = true;
        if (!cur_.consume(':')) return cur_.expected("':' after field " + quote(field));
        const Status s = idx == 0 ? parse_dtype(t) : idx == 1 ? parse_shape(t) : parse_offsets(t);
        LR_RETURN_IF_ERROR(s.with_context("field '" + std::string(kFields[idx]) + "'"));
        if (cur_.consume(',')) continue;
        if (cur_.consume('}')) break;
        return cur_.expected("',' or '}' in the tensor entry");
      }
    }
    for (size_t i = 0; i < 3; ++i)
      if (!have[i])
        return format_error("missing field '" + std::string(kFields[i]) + "' (" + kTensorFields + ")");
    return check_size(*t);
  }

  Status parse_dtype(ParsedTensor* t) {
    if (cur_.peek() != '"') return cur_.expected("a dtype string such as \"F32\"");
    LR_RETURN_IF_ERROR(cur_.read_string(&t->code));
    if (const auto d = parse_safetensors_dtype(t->code)) {
      t->dtype = *d;
      return Status::ok_status();
    }
    if (is_other_safetensors_dtype(t->code))
      return unsupported(
          "dtype " + quote(t->code) +
          " is valid safetensors but longrun does not load it (supported: " + kSupportedDtypes + ")");
    return format_error("unknown dtype " + quote(t->code) + " (supported: " + kSupportedDtypes + ")");
  }

  // Reads "[" int, ... "]" into dims[0 .. min(count, capacity)) and the element count.
  Status parse_uint_list(std::string_view what, int64_t* dims, int capacity, int* count) {
    if (!cur_.consume('[')) return cur_.expected("an array of " + std::string(what));
    *count = 0;
    if (cur_.consume(']')) return Status::ok_status();
    for (;;) {
      uint64_t v;
      LR_RETURN_IF_ERROR(
          cur_.read_uint(fmt::kMaxInteger, &v).with_context("entry " + std::to_string(*count)));
      if (*count < capacity) dims[*count] = int64_t(v);
      ++*count;  // bounded by the header length, which is <= 100 MB
      if (cur_.consume(',')) continue;
      if (cur_.consume(']')) return Status::ok_status();
      return cur_.expected("',' or ']' in the array");
    }
  }

  Status parse_shape(ParsedTensor* t) {
    int count;
    LR_RETURN_IF_ERROR(parse_uint_list("dimensions", t->dims.data(), kMaxRank, &count));
    if (count > kMaxRank)
      return unsupported("rank " + std::to_string(count) + " exceeds longrun's runtime limit of " +
                         std::to_string(kMaxRank) + " dimensions (kMaxRank)");
    t->rank = count;
    return Status::ok_status();
  }

  Status parse_offsets(ParsedTensor* t) {
    int64_t v[2] = {};
    int count;
    LR_RETURN_IF_ERROR(parse_uint_list("[begin, end] offsets", v, 2, &count));
    if (count != 2)
      return format_error("expected exactly 2 integers [begin, end], found " + std::to_string(count));
    t->begin = uint64_t(v[0]);
    t->end = uint64_t(v[1]);
    return Status::ok_status();
  }

  // Checked prod(shape) * dtype size == end - begin. Checked in int64 (TensorDesc's type), in
  // file order, like the reference's checked_mul fold: a zero dimension after an overflowing
  // prefix is still refused.
  static Status check_size(const ParsedTensor& t) {
    if (t.end < t.begin) return format_error("data_offsets " + offsets_string(t) + ": end is before begin");
    int64_t numel;
    if (!checked_product(std::span<const int64_t>(t.dims.data(), size_t(t.rank)), &numel))
      return overflow_error("shape " + shape_string(t) + ": element count overflows int64");
    const int64_t elem = int64_t(dtype_size(t.dtype));
    int64_t nbytes;
    if (!checked_mul(numel, elem, &nbytes))
      return overflow_error("shape " + shape_string(t) + " of " + t.code + ": byte size " +
                            std::to_string(numel) + " * " + std::to_string(elem) + " overflows int64");
    if (uint64_t(nbytes) != t.end - t.begin)
      return format_error("shape " + shape_string(t) + " of " + t.code + " needs " + std::to_string(nbytes) +
                          " bytes but data_offsets " + offsets_string(t) + " span " +
                          std::to_string(t.end - t.begin));
    return Status::ok_status();
  }

  json::Cursor cur_;
};

// Offsets sorted by (begin, end) must tile [0, data_size) exactly: the first begins at 0,
// each begins where the previous ended, the last ends at the end of the file. This one rule
// refuses gaps, overlaps, aliasing (many tensors on the same bytes), truncation and trailing
// bytes (polyglots).
Status check_layout(const std::vector<ParsedTensor>& sorted, uint64_t data_size, uint64_t data_start) {
  uint64_t cursor = 0;
  const ParsedTensor* prev = nullptr;
  for (const ParsedTensor& t : sorted) {
    const std::string ctx = "tensor " + quote(t.name) + ": data_offsets " + offsets_string(t);
    if (t.begin < cursor)
      return format_error(ctx + " overlap tensor " + quote(prev->name) + " " + offsets_string(*prev));
    if (t.begin > cursor)
      return format_error(ctx + " leave a gap of " + std::to_string(t.begin - cursor) + " bytes after " +
                          (prev ? "tensor " + quote(prev->name) + " (ends at " + std::to_string(cursor) + ")"
                                : std::string("the start of the data section")) +
                          "; the data section must be indexed without holes");
    if (t.end > data_size)
      return format_error(ctx + " extend past the end of the file: the data section (from file byte " +
                          std::to_string(data_start) + ") has only " + std::to_string(data_size) +
                          " bytes (truncated file?)");
    cursor = t.end;
    prev = &t;
  }
  if (cursor != data_size)
    return format_error("the data section has " + std::to_string(data_size) +
                        " bytes but the tensors cover " + std::to_string(cursor) + ": " +
                        std::to_string(data_size - cursor) + " trailing bytes after the last tensor");
  return Status::ok_status();
}

struct Unmapper {
  size_t size;
  void operator()(const void* p) const {
    unregister_file_mapping(p);
    ::munmap(const_cast<void*>(p), size);
  }
};

}  // namespace

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::span<const std::byte> buffer,
                                                                std::shared_ptr<const void> owner,
                                                                std::string label) {
  const std::string where = quote_for_message(label, 512);
  try {
    const uint64_t size = buffer.size();
    if (size < 8)
      return format_error("file is " + std::to_string(size) +
                          " bytes; a safetensors file needs at least 8 (the header length prefix)")
          .with_context(where);
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(buffer[size_t(i)]) << (8 * i);
    if (n > fmt::kMaxHeaderBytes)
      return format_error("header length " + std::to_string(n) + " exceeds the limit of " +
                          std::to_string(fmt::kMaxHeaderBytes) + " bytes")
          .with_context(where);
    uint64_t data_start;
    if (!checked_add(uint64_t{8}, n, &data_start) || data_start > size)
      return format_error("header length " + std::to_string(n) + " needs 8 + " + std::to_string(n) +
                          " bytes but the file has only " + std::to_string(size))
          .with_context(where);
    const std::string_view header(reinterpret_cast<const char*>(buffer.data()) + 8, size_t(n));
    if (const size_t bad = json::find_invalid_utf8(header); bad != std::string_view::npos)
      return format_error("header is not valid UTF-8: byte " + quote_for_message(header.substr(bad, 1)) +
                          " at header byte " + std::to_string(bad))
          .with_context(where);

    std::vector<ParsedTensor> parsed;
    auto file = std::make_shared<SafetensorsFile>();
    LR_RETURN_IF_ERROR(HeaderParser(header).parse(&parsed, &file->metadata_).with_context(where));
    std::stable_sort(parsed.begin(), parsed.end(), [](const ParsedTensor& a, const ParsedTensor& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    LR_RETURN_IF_ERROR(check_layout(parsed, size - data_start, data_start).with_context(where));

    const std::span<const std::byte> data = buffer.subspan(size_t(data_start));
    for (ParsedTensor& t : parsed) {
      if (fmt::is_pad_name(t.name)) continue;
      SafetensorsEntry e;
      e.desc = TensorDesc(t.dtype, std::span<const int64_t>(t.dims.data(), size_t(t.rank)));
      e.data_begin = t.begin;
      e.data_end = t.end;
      e.bytes = data.subspan(size_t(t.begin), size_t(t.end - t.begin));
      e.name = std::move(t.name);
      file->tensors_.push_back(std::move(e));
    }
    file->label_ = std::move(label);
    file->buffer_ = buffer;
    file->owner_ = std::move(owner);
    return file;
  } catch (const std::bad_alloc&) {
    return out_of_memory(where + ": out of memory while reading the safetensors header");
  }
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  const std::string where = quote_for_message(path, 512);
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return not_found(where + ": no such file");
    return io_error(where + ": cannot open: " + std::strerror(e));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return io_error(where + ": fstat failed: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return io_error(where + ": is a directory, expected a safetensors file");
  if (!S_ISREG(st.st_mode)) return io_error(where + ": is not a regular file");
  if (st.st_size == 0) return parse({}, nullptr, path);  // mmap refuses length 0; parse explains
  const size_t size = size_t(st.st_size);
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED)
    return io_error(where + ": mmap of " + std::to_string(size) + " bytes failed: " + std::strerror(errno));
  std::shared_ptr<const void> mapping;
  try {
    mapping = std::shared_ptr<const void>(addr, Unmapper{size});  // unmaps if this throws
    register_file_mapping(addr, size);
  } catch (const std::bad_alloc&) {
    return out_of_memory(where + ": out of memory");
  }
  return parse({static_cast<const std::byte*>(addr), size}, std::move(mapping), path);
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsEntry& e : tensors_)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace longrun
