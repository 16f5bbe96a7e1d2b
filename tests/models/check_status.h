// CHECK_STATUS(result, code, parts...): the Result/Status failed with `code` and its message
// contains every one of `parts` (a message must name the field, tensor or input at fault).
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

namespace longrun::model_tests {

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace longrun::model_tests

#define CHECK_STATUS(result, expected_code, ...)                                     \
  do {                                                                               \
    const auto& r_ = (result);                                                       \
    REQUIRE_FALSE(r_.ok());                                                          \
    const std::string m_ = r_.status().to_string();                                  \
    CAPTURE(m_);                                                                     \
    CHECK(r_.status().code() == (expected_code));                                    \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__}) \
      CHECK(::longrun::model_tests::contains(m_, part_));                            \
  } while (0)
