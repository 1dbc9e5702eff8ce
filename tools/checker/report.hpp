// What one check found, as one data structure, and its two renderings: the
// text a reader reads (the table, the groups of broken test cases, the
// summary, "Fix:" or "Next:") and JSON for tools (./book check --json).
#pragma once

#include "classify.hpp"

#include <string>
#include <vector>

namespace sa::check {

struct ChapterReport {
  enum class State { ran, does_not_compile, untouched };
  std::string chapter;  // "03-softmax"
  State state = State::ran;
  std::string compile_error;      // when it does not compile
  int untouched_tests = 0;        // when untouched: counted from the suite's source
  std::vector<CaseResult> results;  // when it ran, in suite order
  // When the suite stopped before its first test (the reader's global
  // object crashed or hung): results holds one result saying so, and this
  // the number of test cases that could not run, counted from the source.
  int tests_not_run = 0;
  std::vector<std::string> warnings;  // the compiler's, about the reader's files (compiler_warnings.hpp)
};

struct CheckReport {
  std::vector<ChapterReport> chapters;
  int book_chapters = 0;         // how many the book has ("Progress: N/M" when all are checked)
  int timeout_seconds = 10;
  int hung_timeout_seconds = 3;
  bool one_hung = false;         // the limit dropped after a hang
  bool untouched_rule = false;   // --untouched: every stub must fail only with "not implemented yet"
  bool watching = false;         // --watch: the check runs again by itself on a save
  int functions_written = 0, functions_total = 0;
};

// A chapter's lines of the table, with its broken test cases below it.
std::string chapter_text(const ChapterReport& chapter, bool untouched_rule);

// Everything after the table: the time limit's note, progress, the
// functions written, and the advice.
std::string summary_text(const CheckReport& report);

// The whole text: every chapter's lines, then the summary.
std::string report_text(const CheckReport& report);

// One object per test case (chapter, test, function, status, message,
// hint), one per chapter, and the summary's numbers.
std::string report_json(const CheckReport& report);

// 0 when every test that ran passed (with --untouched: when every stub
// failed only with "not implemented yet"), else 1.
int exit_status(const CheckReport& report);

}  // namespace sa::check
