// Runs a suite's test cases, each in a process of its own (so that a hang, a
// crash or an exit() in one exercise is reported by name and never hides the
// other test cases), several at a time, under a time limit and a memory
// limit, and hands each end to classify().
#pragma once

#include "classify.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace sa::check {

struct Limits {
  int timeout_seconds = 10;
  // Every test case runs in well under a second; once one has hung, the
  // others get hung_timeout_seconds at most, so an endless loop in a function
  // many tests call costs seconds, not minutes (the summary says so).
  int hung_timeout_seconds = 3;
  bool one_hung = false;  // set by run_suite, kept from chapter to chapter
  long memory_kb = 0;     // address space of each test process (as ulimit -v)
  int jobs = 1;           // test processes at once
};

// The processors this process may run on (as nproc counts them).
int processors();

// Each test process may map at most its share of the RAM (16 GiB at most):
// `jobs` run at once, and a reader's matrix of a billion rows must end in
// std::bad_alloc, named, not in the kernel's out-of-memory killer picking a
// process. In KiB.
long memory_share_kb(int jobs);

// Catch2 reads commas, brackets, backslashes, stars and quotes in a test
// spec as syntax: escaped, a name selects exactly its test case.
std::string catch2_spec(const std::string& test_name);

// The suite's test cases in its own order, or why it could not list them.
// The suite writes them to a file (its hidden test case "[.sa-list]",
// tests/support/main.cpp), so that what the reader's code prints cannot
// pass for a name; that run runs the reader's code outside any test (a
// global object's constructor), so it has the time, memory and output
// limits of a test case, and no terminal to read, and what it leaves
// running is ended.
struct Listing {
  std::vector<std::string> names;
  std::string problem;            // empty when listed
  Status status = Status::crash;  // with a problem: crash, or timeout
  CaseResult::Printed printed;    // with a problem: what the suite printed first
};
Listing list_test_cases(const std::filesystem::path& suite, const Limits& limits,
                        const std::filesystem::path& scratch);

// Runs `args` (with `extra_env` added to the environment) under a test
// case's limits: `timeout_seconds`, `memory_kb` of address space, output
// (stdout and stderr, to `output`) of at most kOutputLimitBytes, no terminal.
struct Captured {
  bool timed_out = false;
  int status = 0;  // the wait status
};
Captured run_limited(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                     int timeout_seconds, long memory_kb, const std::filesystem::path& output);

// Runs every named test case of `suite`, limits.jobs at a time, scratch
// files in `scratch`; results in the order of `tests`.
std::vector<CaseResult> run_suite(const std::filesystem::path& suite, const std::vector<std::string>& tests,
                                  Limits& limits, const std::filesystem::path& scratch);

}  // namespace sa::check
