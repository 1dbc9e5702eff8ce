// Catch2 for the suites, with one change: CHECK_THROWS_AS and
// REQUIRE_THROWS_AS say which call they are running. Catch2 tells a
// listener of an assertion only when it ends, so a crash or a hang inside
// one (a refusal test whose exercise reads past a matrix instead of
// refusing) could not name the call, nor the exception it should have
// thrown (tests/support/main.cpp adds both to the message).
#pragma once

#include "support/catch2_compat.hpp"

namespace sa::test {

// While one lives, running_throws_check() is its text, "call, type" as the
// macro was written; nullptr otherwise. (Read from a signal handler: a
// plain pointer to a string literal.)
class RunningThrowsCheck {
 public:
  explicit RunningThrowsCheck(const char* text) noexcept;
  ~RunningThrowsCheck();
  RunningThrowsCheck(const RunningThrowsCheck&) = delete;
  RunningThrowsCheck& operator=(const RunningThrowsCheck&) = delete;

 private:
  const char* outer_;  // (one may run inside another's call)
};
const char* running_throws_check() noexcept;

}  // namespace sa::test

#undef CHECK_THROWS_AS
#undef REQUIRE_THROWS_AS
#define SA_THROWS_AS(macro, disposition, expr, exceptionType)                                   \
  do {                                                                                          \
    const ::sa::test::RunningThrowsCheck sa_running_throws_check_(#expr ", " #exceptionType);   \
    INTERNAL_CATCH_THROWS_AS(macro, exceptionType, disposition, expr);                          \
  } while (false)
#define CHECK_THROWS_AS(expr, exceptionType) \
  SA_THROWS_AS("CHECK_THROWS_AS", Catch::ResultDisposition::ContinueOnFailure, expr, exceptionType)
#define REQUIRE_THROWS_AS(expr, exceptionType) \
  SA_THROWS_AS("REQUIRE_THROWS_AS", Catch::ResultDisposition::Normal, expr, exceptionType)

// A refusal check that says its input in words: a failure prints them beside
// the call, whose arguments (X, layer, params) the reader cannot see.
//   CHECK_REFUSES("context_vector(X (3, 2), query_index 3)", context_vector(X, 3), std::out_of_range);
#define CHECK_REFUSES(input, expr, exceptionType) \
  do {                                            \
    INFO(input);                                  \
    CHECK_THROWS_AS(expr, exceptionType);         \
  } while (false)
