#include "crash_words.hpp"

#include <csignal>

namespace sa::check {
namespace {

struct SignalWords {
  int number;
  std::string_view name;   // as Catch2 starts its description: "SIGSEGV - ..."
  std::string_view words;  // what it most likely means in an exercise
};

// (SIGTERM is check's time limit: the checker reports that as a time-out,
// whatever the listener wrote. A stack overflow is a SIGSEGV too: a
// recursive helper without its base case ends there, not in a time-out.)
constexpr SignalWords kSignals[] = {
    {SIGSEGV, "SIGSEGV", "segmentation fault (an index outside a matrix or vector, or a recursion that never ends?)"},
    {SIGABRT, "SIGABRT", "abort (an assert or abort() failed)"},
    {SIGFPE, "SIGFPE", "floating-point exception (an integer division by zero?)"},
    {SIGBUS, "SIGBUS", "bus error"},
    {SIGTERM, "SIGTERM", "stopped by SIGTERM"},
};

}  // namespace

std::string signal_sentence(int signal) {
  for (const SignalWords& s : kSignals)
    if (s.number == signal) return std::string(kCrashed) + " " + std::string(s.words);
  return std::string(kCrashed) + " killed by signal " + std::to_string(signal);
}

std::string caught_signal_sentence(const std::string& catch2_text) {
  for (const SignalWords& s : kSignals)
    if (catch2_text.starts_with(s.name)) return std::string(kCrashed) + " " + std::string(s.words);
  return std::string(kCrashed) + " " + catch2_text;
}

std::string uncaught_exception_sentence(const std::string& type) {
  return std::string(kCrashed) + " uncaught exception of type " + type;
}

}  // namespace sa::check
