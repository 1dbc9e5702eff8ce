// The sentences a reader sees when a test case did not end normally: one
// place for both the suites' listener (tests/support/main.cpp), which words
// what Catch2 caught inside the process, and `./book check`'s checker
// (classify.cpp), which words what it saw from outside (an exit status, a
// signal, the process's last output). Both must say the same thing for the
// same mistake, so neither spells these sentences itself.
#pragma once

#include <string>
#include <string_view>

namespace sa::check {

// The prefixes the checker sorts results by: a test case whose first failure
// starts with one of these is "todo" or "crash", not "fail".
inline constexpr std::string_view kNotImplemented = "not implemented yet:";
inline constexpr std::string_view kCrashed = "crashed:";

// A signal by number: "crashed: segmentation fault (an index outside a
// matrix or vector, or a recursion that never ends?)", ..., "crashed:
// killed by signal 7" for the rest.
std::string signal_sentence(int signal);

// A signal as Catch2's fatal-condition handler names it ("SIGSEGV -
// Segmentation violation signal"): the same sentences as signal_sentence;
// Catch2's own text for a signal without one.
std::string caught_signal_sentence(const std::string& catch2_text);

// `throw 42` inside an exercise: "crashed: uncaught exception of type int".
std::string uncaught_exception_sentence(const std::string& type);

}  // namespace sa::check
