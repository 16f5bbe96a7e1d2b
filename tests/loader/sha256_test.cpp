// SHA-256 against the FIPS 180-4 / NIST example vectors, and incremental updates in odd-sized
// pieces against the one-shot digest.
#include "sha256.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace longrun::convert;

namespace {
std::string hex_of(const std::string& s) { return sha256_hex(std::as_bytes(std::span(s.data(), s.size()))); }
}  // namespace

TEST_CASE("sha256: NIST example vectors") {
  CHECK(hex_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex_of(
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
            "mnopqrstnopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(hex_of(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: incremental updates equal the one-shot digest at every block boundary") {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg += char('a' + i % 26);
  for (size_t len : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 128u, 300u}) {
    const std::string m = msg.substr(0, len);
    for (size_t piece : {1u, 7u, 64u}) {
      Sha256 h;
      for (size_t at = 0; at < m.size(); at += piece)
        h.update(std::as_bytes(std::span(m.data() + at, std::min(piece, m.size() - at))));
      const auto d = h.finish();
      CHECK_MESSAGE(to_hex(d) == hex_of(m), "len " << len << " piece " << piece);
    }
  }
}
