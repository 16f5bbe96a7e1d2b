// The safe pickle parser: a hand-built state dict parses into the right tensor views, and the
// malformed/malicious matrix is refused with a message that names the problem (disallowed
// globals by name, stack/memo/mark errors, truncation, limits) without executing anything,
// crashing or recursing on deep or cyclic structures.
#include "pickle.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "convert_test_util.h"
#include "source.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;

namespace {

Result<std::unique_ptr<PickleDoc>> parse(const std::string& s, bool lenient = false,
                                         PickleLimits limits = {}) {
  PickleOptions o;
  o.lenient = lenient;
  o.limits = limits;
  const auto b = bytes_of(s);
  return parse_pickle(b, o, "test.pkl");
}

// Expects a failure whose message contains `what`.
void refused(const std::string& s, const std::string& what, bool lenient = false, PickleLimits limits = {}) {
  auto r = parse(s, lenient, limits);
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(r.status().message().find(what) != std::string::npos, r.status().message());
  CHECK(r.status().message().find("test.pkl: pickle byte") != std::string::npos);
}

}  // namespace

TEST_CASE("pickle: a state dict with shared storage, offset and strides parses into tensor views") {
  using namespace pk;
  const std::string st = storage("FloatStorage", "0", 12);
  const std::string p =
      state_dict({{"a", tensor(st, 0, {2, 3}, {3, 1})}, {"b", tensor(st, 6, {3, 2}, {1, 3})}});
  auto doc = parse(p);
  REQUIRE_MESSAGE(doc.ok(), doc.status().to_string());
  const PNode* root = (*doc)->root();
  REQUIRE(root->kind == PKind::dict);
  const PNode* b = dict_get(root, "b");
  REQUIRE(b);
  REQUIRE(b->kind == PKind::tensor);
  CHECK(b->tensor.offset == 6);
  CHECK(b->tensor.sizes == std::vector<int64_t>{3, 2});
  CHECK(b->tensor.strides == std::vector<int64_t>{1, 3});
  CHECK(b->tensor.storage->storage.numel == 12);
  CHECK((*doc)->consumed() == p.size());

  // collect_tensors materialises the strided view correctly.
  std::vector<float> data(12);
  for (int i = 0; i < 12; ++i) data[size_t(i)] = float(i);
  SourceCheckpoint ck;
  auto bytes = [&](const StorageRef&) -> Result<std::span<const std::byte>> {
    return std::as_bytes(std::span(data));
  };
  REQUIRE(collect_tensors(root, "test", bytes, &ck).ok());
  REQUIRE(ck.tensors.size() == 2);
  const auto m = materialize(ck.tensors[1]);
  std::vector<float> got(6);
  std::memcpy(got.data(), m.data(), 24);
  CHECK(got == std::vector<float>{6, 9, 7, 10, 8, 11});  // element (i, j) at 6 + i + 3j
}

TEST_CASE("pickle: disallowed globals are refused by name, even in lenient mode for exec gadgets") {
  using namespace pk;
  refused(proto() + global("os", "system") + "(" + str("echo pwned") + "tR.", "refused global 'os.system'");
  refused(proto() + global("builtins", "eval") + "(" + str("1") + "tR.", "refused global 'builtins.eval'",
          true);
  refused(proto() + global("posix", "system") + "(" + str("x") + "tR.", "refused global 'posix.system'",
          true);
  refused(proto() + global("subprocess", "Popen") + ")R.", "refused global 'subprocess.Popen'", true);
  refused(proto() + global("torch.jit.unsupported_tensor_ops", "execWrapper") + ")R.",
          "'torch.jit.unsupported_tensor_ops.execWrapper'", true);
  refused(proto() + global("runpy", "_run_code") + ")R.", "'runpy._run_code'", true);
  refused(proto() + str("os") + str("system") + "\x93" + ")R.",
          "refused global 'os.system'");  // STACK_GLOBAL
  // Unknown but harmless-looking classes: refused when strict, opaque (carrying nothing) when lenient.
  refused(proto() + global("fairseq.meters", "AverageMeter") + ")\x81.", "not on the checkpoint allowlist");
  auto lenient =
      parse(proto() + "}(" + str("m") + global("fairseq.meters", "AverageMeter") + ")\x81}b" + "u.", true);
  REQUIRE_MESSAGE(lenient.ok(), lenient.status().to_string());
  CHECK(dict_get((*lenient)->root(), "m")->kind == PKind::opaque);
  CHECK((*lenient)->opaque_globals() == std::vector<std::string>{"fairseq.meters.AverageMeter"});
  // Allowlisted names that are not callables the importer interprets.
  refused(proto() + global("torch", "FloatStorage") + ")R.", "not a callable the importer interprets");
  refused(proto() + global("torch._utils", "_rebuild_tensor_v2") + "(" + i8(1) + "tR.",
          "takes 6-7 arguments");
  refused(proto() + "(" + str("module") + "tQ.", "pickled module class");
  refused(proto() + "(" + str("storage") + global("torch", "QInt8Storage") + str("0") + str("cpu") + i8(1) +
              "tQ.",
          "refused global 'torch.QInt8Storage'");
  refused(proto() + "(" + str("storage") + global("torch", "FloatStorage") + str("0") + str("meta") + i8(1) +
              "tQ.",
          "device 'meta'");
}

TEST_CASE("pickle: structural errors name the opcode and offset") {
  using namespace pk;
  refused(proto() + "0.", "stack underflow");
  refused(proto() + "t.", "no MARK");
  refused(proto() + "h\x05.", "memo index 5 was never stored");
  refused(proto() + "X" + le(1000, 4) + "abc.", "truncated operand");
  refused(proto() + "X" + le(2, 4) + "\xff\xfe.", "invalid UTF-8");
  refused(proto() + "I12\n.", "not supported by the safe parser");  // text-protocol INT
  refused(proto() + "\x8f.", "not supported by the safe parser");   // EMPTY_SET
  refused(proto() + "K\x01]a.", "expected a list");                 // APPEND to an int (stack: 1, [] ...)
  refused(proto() + "]K\x01K\x02s.", "expected a dict");
  refused(proto() + "}]K\x01s.", "is not a string or an integer");
  refused(proto() + "\x80\x09.", "unsupported pickle protocol 9");
  auto no_stop = parse(proto() + "N");
  REQUIRE_FALSE(no_stop.ok());
  CHECK(no_stop.status().message().find("without STOP") != std::string::npos);
}

TEST_CASE("pickle: limits bound memo, stack, opcodes and values; deep and cyclic trees are safe") {
  using namespace pk;
  PickleLimits small;
  small.max_memo = 100;
  std::string memo_bomb = proto() + "N";
  for (int i = 0; i < 1000; ++i) memo_bomb += "r" + le(uint64_t(i) * 7919, 4);
  refused(memo_bomb + ".", "memo larger than 100", false, small);
  CHECK(parse(proto() + "Nr" + le(0xffffffff, 4) + "j" + le(0xffffffff, 4) + "0.")
            .ok());  // sparse index, no blow-up

  small = {};
  small.max_stack = 1000;
  refused(proto() + std::string(2000, 'N') + ".", "stack deeper than 1000", false, small);
  small = {};
  small.max_ops = 500;
  refused(proto() + "N" + std::string(1000, '2') + ".", "more than 500 opcodes", false, small);

  // 100 000 nested lists: parsing is iterative, destruction is flat (arena), traversal is bounded.
  std::string deep = proto() + "]";
  for (int i = 0; i < 100000; ++i) deep += "]";
  deep += std::string(100000, 'a') + ".";
  auto d = parse(deep);
  REQUIRE_MESSAGE(d.ok(), d.status().to_string());
  SourceCheckpoint ck;
  auto none = [](const StorageRef&) -> Result<std::span<const std::byte>> {
    return std::span<const std::byte>();
  };
  const Status s = collect_tensors((*d)->root(), "deep", none, &ck);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("nested deeper than 256") != std::string::npos);

  // A list that contains itself (through the memo): traversal terminates.
  auto cyc = parse(proto() + std::string("]q\0h\0a.", 7));
  REQUIRE(cyc.ok());
  CHECK((*cyc)->root()->items.front() == (*cyc)->root());
  SourceCheckpoint ck2;
  CHECK(collect_tensors((*cyc)->root(), "cycle", none, &ck2).ok());
}

TEST_CASE("pickle: tensor views outside their storage are refused with the tensor's name") {
  using namespace pk;
  const std::string p = state_dict({{"w", tensor(storage("FloatStorage", "0", 4), 2, {2, 2}, {2, 1})}});
  auto doc = parse(p);
  REQUIRE(doc.ok());
  std::vector<float> data(4);
  auto bytes = [&](const StorageRef&) -> Result<std::span<const std::byte>> {
    return std::as_bytes(std::span(data));
  };
  SourceCheckpoint ck;
  const Status s = collect_tensors((*doc)->root(), "f.pt", bytes, &ck);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("tensor 'w'") != std::string::npos);
  CHECK(s.message().find("needs 24 bytes of its storage, which has 16") != std::string::npos);
}

TEST_CASE("pickle: a stride-0 view of a tiny storage cannot make the importer allocate unboundedly") {
  using namespace pk;
  std::vector<float> data(1, 7.f);
  auto bytes = [&](const StorageRef&) -> Result<std::span<const std::byte>> {
    return std::as_bytes(std::span(data));
  };
  auto collect = [&](const std::string& p, SourceCheckpoint* ck) {
    auto doc = parse(p);
    REQUIRE(doc.ok());
    return collect_tensors((*doc)->root(), "f.pt", bytes, ck);
  };
  // 255^4 floats (16.9 GB, under the 1 TiB cap) read from one 4-byte element: refused before
  // anything is allocated.
  SourceCheckpoint ck;
  const Status s = collect(
      state_dict({{"w", tensor(storage("FloatStorage", "0", 1), 0, {255, 255, 255, 255}, {0, 0, 0, 0})}}),
      &ck);
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(s.message().find("tensor 'w'") != std::string::npos, s.message());
  CHECK_MESSAGE(
      s.message().find("overlapping view (sizes [255, 255, 255, 255], strides [0, 0, 0, 0]) "
                       "would materialise 16913002500 bytes from a storage of 4 bytes") != std::string::npos,
      s.message());
  // A small expanded buffer (torch.save keeps expand()'s stride 0) still imports.
  SourceCheckpoint ok;
  REQUIRE(collect(state_dict({{"b", tensor(storage("FloatStorage", "0", 1), 0, {2, 3}, {0, 0})}}), &ok).ok());
  REQUIRE(ok.tensors.size() == 1);
  CHECK(materialize(ok.tensors[0]).size() == 24);
}
