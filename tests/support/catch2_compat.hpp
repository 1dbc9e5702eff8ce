// Catch2's test macros, Approx and string matchers, from Catch2 2.13
// (Debian 12's catch2, one header) or Catch2 3 (Debian 13's, a header a
// part). What the test files use is the same in both but for two names:
// Approx, which Catch2 3 keeps in namespace Catch only, and the matcher of a
// substring, Catch2 2's Contains and Catch2 3's ContainsSubstring (Catch2
// 3's Contains is for ranges): the suites say sa::test::ContainsText.
//
// Which version: SA_CATCH2_MAJOR, from CMake, the Catch2 whose library the
// suites link (tests/CMakeLists.txt); without it, the headers found.
#pragma once

#ifndef SA_CATCH2_MAJOR
#if __has_include(<catch2/catch_version_macros.hpp>)
#define SA_CATCH2_MAJOR 3
#else
#define SA_CATCH2_MAJOR 2
#endif
#endif

#if SA_CATCH2_MAJOR >= 3
#include <catch2/catch_version_macros.hpp>  // CATCH_VERSION_MAJOR
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif

#include <string>

namespace sa::test {

// CHECK_THAT(text, ContainsText("position 6")): text holds that substring.
inline auto ContainsText(const std::string& substring) {
#if CATCH_VERSION_MAJOR >= 3
  return Catch::Matchers::ContainsSubstring(substring);
#else
  return Catch::Matchers::Contains(substring);
#endif
}

}  // namespace sa::test
