// How one test case ended, from what its process left behind: the wait
// status, whether check's time limit stopped it, its output, and the report
// file the suites' listener (tests/support/main.cpp) wrote. Pure functions
// of that record, so the unit tests replay recorded ends
// (tests/fixtures/checker/cases/).
#pragma once

#include <string>
#include <vector>

namespace sa::check {

// pass, fail, todo (an exercise not written yet), crash, timeout.
enum class Status { pass, fail, todo, crash, timeout };
std::string to_string(Status status);
bool parse_status(const std::string& word, Status& status);

struct CaseResult {
  Status status = Status::crash;
  std::string test;      // the test case's name
  std::string function;  // the exercise function it was in (or is about)
  std::string message;   // one line; for a crash or a hang it ends ", in <function>"
  std::string hint;      // an unwritten exercise's hint, else empty
  // What the reader's own code printed, when the case did not pass: its
  // first lines, escaped (printed_of), and how many more there were.
  struct Printed {
    std::vector<std::string> lines;
    int more = 0;
    bool empty() const { return lines.empty(); }
  } printed{};
};

// Everything recorded about one finished test process.
struct CaseEnd {
  bool exited = true;        // ended by exit(), else by a signal
  int exit_status = 0;       // when exited
  int signal = 0;            // when not exited
  bool timed_out = false;    // check's time limit sent it SIGTERM
  double seconds = 0;        // how long it ran
  int limit_seconds = 10;    // the time limit it ran under
  std::string report;        // the listener's report file
  std::string output;        // stdout and stderr, interleaved
};

// The most a test process may write (its output file, and what is read of
// a suite's list of tests): a print inside an endless loop wrote 8 GB in
// 17 s. Past it a write ends the process with SIGXFSZ.
inline constexpr long kOutputLimitBytes = 16L << 20;

CaseResult classify(const std::string& test, const CaseEnd& end);

// The input a test case was on, as the listener appends it to a message
// from the test's INFO (" [decode of ids [0, -1]]"), when `message` ends
// with it; else "". A crash's or a hang's message keeps it before its
// ", in <function>".
std::string input_context(const std::string& message);

// The message without that input: test cases that broke the same way on
// different inputs are one group.
std::string without_input(const std::string& message);

// What the reader's code printed in a test case that did not pass, shown
// beside its message: the first three lines of the process's own output
// (Catch2's report goes to a file of its own), each cut at 160 bytes, with
// control characters and bytes that are not UTF-8 escaped (\x1b), without
// the lines the runtime wrote about a crash, which the message says in words.
CaseResult::Printed printed_of(const std::string& output);
// As the report shows it: "\"first\" \"second\" (and 12 more lines)", or empty.
std::string printed_text(const CaseResult::Printed& printed);

// What a failed Eigen check means, in the words of the code a reader writes
// (Eigen's own text is its source expression, "(i>=0) && ( ((BlockRows==1)
// && ...", which names no mistake). Empty when it is not one of these.
std::string explain_assertion(const std::string& assertion, const std::string& output);

}  // namespace sa::check
