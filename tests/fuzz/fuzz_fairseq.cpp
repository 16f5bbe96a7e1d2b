// libFuzzer target for the fairseq checkpoint reader (tools/convert/fairseq.{h,cpp}): the
// hyper-parameter conversion (args Namespace / cfg.model to JSON), the state-dict upgrades and
// split_in_proj, on parsed pickle trees.
//
// Built and run by tools/dev/fuzz.sh (seeds: tests/golden/checkpoints/fairseq.pt,
// namespace.pt and tests/fuzz/seeds/pickle/). Each input is read twice: as a whole torch.save
// file (zip or legacy, as the CLI reads fairseq files: unknown globals opaque outside "model") and as a bare
// pickle whose storages are a fake 4 KiB buffer; every tree that parses goes through fairseq_from.
// Properties: no crash, no sanitizer report, every error carries a message, the
// hyper-parameters are a JSON object, every kept tensor (split views included) materialises to
// numel * itemsize bytes, and split_in_proj on any tensor either errors or yields three views
// that together cover its first dim.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fairseq.h"
#include "fuzz_input.h"
#include "pickle.h"
#include "readers.h"
#include "source.h"

namespace {

using fuzz_input::fail;

void check_tensor(const longrun::convert::SourceTensor& t) {
  using namespace longrun::convert;
  const auto m = materialize(t);
  if (m.size() != size_t(t.numel()) * size_t(source_dtype_size(t.dtype))) fail();
  auto parts = split_in_proj(t);
  if (!parts.ok()) {
    if (parts.status().message().empty()) fail();
    return;
  }
  if (parts->size() != 3) fail();
  int64_t rows = 0;
  for (const SourceTensor& p : *parts) {
    if (p.sizes.empty()) fail();
    rows += p.sizes[0];
    (void)materialize(p);
  }
  if (rows != t.sizes[0]) fail();
}

void check_fairseq(longrun::convert::SourceCheckpoint ck) {
  using namespace longrun::convert;
  auto f = fairseq_from(std::move(ck), "fuzz");
  if (!f.ok()) {
    if (f.status().message().empty()) fail();
    return;
  }
  if (f->hyperparameters_json.empty() || f->hyperparameters_json.front() != '{') fail();
  for (const SourceTensor& t : f->source.tensors) check_tensor(t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  using namespace longrun::convert;
  const std::vector<std::byte> buffer = fuzz_input::bytes(data, size);
  ReadOptions o;
  o.opaque_outside_model = true;
  o.limits.max_ops = 200'000;  // keep single inputs fast

  SourceCheckpoint file;
  const Status st = read_checkpoint_bytes(buffer, "fuzz", o, &file);
  if (!st.ok() && st.message().empty()) fail();
  if (st.ok() && file.pickle_root) check_fairseq(std::move(file));

  PickleOptions po;
  po.lenient = true;
  po.limits = o.limits;
  auto doc = parse_pickle(buffer, po, "fuzz");
  if (!doc.ok()) {
    if (doc.status().message().empty()) fail();
    return 0;
  }
  static const std::vector<std::byte> storage(4096, std::byte{0x3c});
  auto bytes = [&](const StorageRef&) -> Result<std::span<const std::byte>> {
    return std::span<const std::byte>(storage);
  };
  SourceCheckpoint tree;
  const Status ct = collect_tensors((*doc)->root(), "fuzz", bytes, &tree);
  if (!ct.ok()) {
    if (ct.message().empty()) fail();
    return 0;
  }
  tree.pickle_root = (*doc)->root();
  check_fairseq(std::move(tree));
  return 0;
}
