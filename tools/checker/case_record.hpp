// A test case's end as a text file, so that real ends can be recorded once
// and replayed by the unit tests (tests/fixtures/checker/). With the
// environment variable SA_CHECK_RECORD naming a folder, book-check writes
// there every case it runs (<chapter>.<n>.case), each chapter's results
// (<chapter>.results), and the build log of a check where a chapter did not
// compile (build.log).
//
// The format: "key: value" lines (test, exited, exit_status, signal,
// timed_out, seconds, limit_seconds), then "== report" and the report
// file's lines, "== output" and the process's output, "== end".
#pragma once

#include "classify.hpp"
#include "read_file.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace sa::check {

struct RecordedCase {
  std::string test;
  CaseEnd end;
};

std::string case_record(const std::string& test, const CaseEnd& end);
RecordedCase read_case_record(const std::string& text);

// A chapter's results: status TAB test TAB function TAB message TAB hint, a line each.
std::string results_record(const std::vector<CaseResult>& results);
std::vector<CaseResult> read_results_record(const std::string& text);

// The folder SA_CHECK_RECORD names, or empty.
std::filesystem::path record_folder();

}  // namespace sa::check
