// book-check: `./book check [N] [--timeout S] [--watch] [--untouched] [--json]`
// (--untouched is the book's CI's; check_options reads the words).
// ./book builds this program and execs it with the reader's arguments. It
// builds only the exercise suites, runs every test case of every suite in a
// process of its own (case_runner), says how each ended (classify), and
// prints the table and the advice (report), again on every save with
// --watch (watch). The suites' listener (tests/support/main.cpp) writes a
// `start` line when a test case begins and one result line when it ends.
#include "build_log.hpp"
#include "build_progress.hpp"
#include "case_record.hpp"
#include "case_runner.hpp"
#include "chapters.hpp"
#include "check_options.hpp"
#include "compiler_warnings.hpp"
#include "exercise_functions.hpp"
#include "report.hpp"
#include "watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace {

namespace fs = std::filesystem;
using namespace sa::check;

const fs::path kRoot = SA_SOURCE_DIR;
const fs::path kBuild = SA_BINARY_DIR;

// A refusal: one line, status 2, as ./book's own.
[[noreturn]] void refuse(const std::string& why) {
  std::cerr << "book: " << why << std::endl;
  std::exit(2);
}

// Whether a chapter's exercise files are the stubs as handed out
// (tests/stubs/C/), byte for byte: the same .cpp files, unchanged.
bool exercises_untouched(const std::string& chapter) {
  const fs::path stubs = kRoot / "tests" / "stubs" / chapter, mine = kRoot / "exercises" / chapter;
  if (!fs::is_directory(stubs)) return false;
  std::error_code ignored;
  for (const auto& f : fs::directory_iterator(mine, ignored))
    if (f.path().extension() == ".cpp" && !fs::exists(stubs / f.path().filename())) return false;
  for (const auto& f : fs::directory_iterator(stubs, ignored))
    if (f.path().extension() == ".cpp" && read_file(f.path()) != read_file(mine / f.path().filename())) return false;
  return true;
}

// The number of test cases of a chapter's suite, from its source: every case
// is a TEST_CASE( at the start of a line (ctest's suites/counts, part of
// ./book test, checks that this count is what the built suite lists).
int suite_size(const std::string& chapter) {
  int n = 0;
  std::error_code ignored;
  for (const auto& f : fs::directory_iterator(kRoot / "tests" / chapter, ignored)) {
    if (f.path().extension() != ".cpp") continue;
    std::ifstream in(f.path());
    for (std::string line; std::getline(in, line);) n += line.starts_with("TEST_CASE(");
  }
  return n;
}

// Whether a chapter's suite has been compiled in this build folder: an
// object file of its test cases (test_NN_cases, compiled once for both
// tracks; tests/CMakeLists.txt) exists, for make's build and Ninja's alike.
bool suite_compiled(const std::string& chapter) {
  const fs::path objects = kBuild / "tests" / "CMakeFiles" / ("test_" + chapter.substr(0, 2) + "_cases.dir");
  std::error_code ignored;
  for (fs::recursive_directory_iterator f(objects, ignored), end; !ignored && f != end; f.increment(ignored))
    if (f->path().extension() == ".o") return true;
  return false;
}

// One check: build, run, print. Returns its exit status.
int check_once(const CheckOptions& o) {
  std::ostream& progress = o.json ? std::cerr : std::cout;
  // A chapter whose exercise files are still the stubs as handed out fails
  // every test with "not implemented yet": its suite is neither built nor
  // run, and its line counts its test cases from the suite's source. Only
  // the first such chapter is built, for the "Next:" line. (Not with
  // --untouched, which proves that rule, nor for one chapter asked by
  // number.) A fresh clone so builds one chapter's suite, not eight.
  std::vector<std::string> build;
  std::vector<bool> skipped(o.chapters.size(), false);
  bool first_untouched_seen = false;
  int skipped_count = 0;
  for (size_t i = 0; i < o.chapters.size(); ++i) {
    const bool untouched = !o.untouched_rule && o.chapters.size() > 1 && exercises_untouched(o.chapters[i]);
    if (untouched && first_untouched_seen) {
      skipped[i] = true;
      ++skipped_count;
      continue;
    }
    first_untouched_seen = first_untouched_seen || untouched;
    build.push_back(o.chapters[i]);
  }
  // "The first time" is a chapter whose suite's test cases were never
  // compiled: then the build compiles them, the precompiled headers and the
  // earlier chapters' solutions. Once they are, a check compiles only the
  // reader's changed files, in seconds, and the note would only be noise.
  const bool first_time = std::ranges::any_of(build, [](const std::string& c) { return !suite_compiled(c); });
  progress << "book check: building the exercise suite" << (build.size() == 1 ? " of 1 chapter" : "s of ")
           << (build.size() == 1 ? "" : std::to_string(build.size()) + " chapters");
  if (skipped_count > 0)
    progress << "; " << skipped_count
             << (skipped_count == 1 ? " untouched chapter needs no build yet" : " untouched chapters need no build yet");
  progress << (first_time ? " (the first time takes a minute or two)..." : "...") << std::endl;

  // (the cases' output and reports, the build log)
  const fs::path scratch = scratch_folder(kBuild, "check");
  if (scratch.empty()) refuse("check: cannot make a scratch folder in " + (kBuild / ".scratch").string());
  // The compilers at once: as many as ./book says the memory holds
  // (BOOK_JOBS, which it checked), else one a core.
  const char* book_jobs = std::getenv("BOOK_JOBS");
  const int compilers = book_jobs && std::atoi(book_jobs) > 0 ? std::atoi(book_jobs) : processors();
  std::map<std::string, std::string> broken =
      build_suites(kBuild, build, scratch / "build.log", kRoot.string(), compilers, progress,
                   isatty(o.json ? STDERR_FILENO : STDOUT_FILENO));
  // The compiler's warnings about the files this build compiled, kept for
  // the checks that will not compile them again.
  const fs::path warnings_store = kBuild / "check" / "warnings";
  remember_warnings(warnings_store, kRoot, read_file(scratch / "build.log"));
  // An exercise file the reader deleted: the chapter still builds
  // (cmake/Chapters.cmake), but its suite cannot link, and the linker's
  // words would name a hidden file. Say which file, and how to get it back.
  for (const std::string& chapter : build) {
    std::vector<std::string> missing;
    std::error_code ignored;
    for (const auto& stub : fs::directory_iterator(kRoot / "tests" / "stubs" / chapter, ignored))
      if (stub.path().extension() == ".cpp" && !fs::exists(kRoot / "exercises" / chapter / stub.path().filename()))
        missing.push_back("exercises/" + chapter + "/" + stub.path().filename().string());
    std::sort(missing.begin(), missing.end());
    if (!missing.empty())
      broken[chapter] = missing.front() + (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) +
                                                                   " more of the chapter's files)"
                                                             : std::string()) +
                        " is missing: ./book reset " + std::to_string(std::stoi(chapter.substr(0, 2))) +
                        " FUNCTION puts one of its functions back, and the whole file with it";
  }
  progress << "Exercises: your implementations in exercises/ against the hidden suites (time limit "
           << o.timeout_seconds << " s a test)\n"
           << std::endl;

  CheckReport report;
  report.book_chapters = o.book_chapters;
  report.timeout_seconds = o.timeout_seconds;
  report.untouched_rule = o.untouched_rule;
  report.watching = o.watch;
  Limits limits;
  limits.timeout_seconds = o.timeout_seconds;
  // The test cases at once: one a core, each with its share of the memory.
  const int jobs = processors();
  limits.jobs = jobs;
  limits.memory_kb = memory_share_kb(jobs);
  for (size_t i = 0; i < o.chapters.size(); ++i) {
    ChapterReport chapter;
    chapter.chapter = o.chapters[i];
    if (const auto error = broken.find(chapter.chapter); error != broken.end()) {
      chapter.state = ChapterReport::State::does_not_compile;
      chapter.compile_error = error->second;
    } else if (skipped[i]) {
      chapter.state = ChapterReport::State::untouched;
      chapter.untouched_tests = suite_size(chapter.chapter);
    } else {
      const fs::path suite = kBuild / "tests" / ("test_" + chapter.chapter.substr(0, 2) + "_exercises");
      const fs::path cases = scratch / chapter.chapter;
      fs::create_directories(cases);
      const Listing listing = list_test_cases(suite, limits, cases);
      if (listing.problem.empty()) {
        chapter.results = run_suite(suite, listing.names, limits, cases);
      } else {
        // The reader's code broke the suite before its first test: one
        // result says so, where the tests would have been.
        CaseResult start;
        start.status = listing.status;
        start.test = "the suite's start, before any test";
        start.message = listing.problem;
        start.printed = listing.printed;
        chapter.results = {start};
        chapter.tests_not_run = suite_size(chapter.chapter);
      }
      if (const fs::path record = record_folder(); !record.empty())
        std::ofstream(record / (chapter.chapter + ".results")) << results_record(chapter.results);
      chapter.warnings = chapter_warnings(warnings_store, kRoot, chapter.chapter);
    }
    if (!o.json) std::cout << chapter_text(chapter, o.untouched_rule) << std::flush;
    report.chapters.push_back(std::move(chapter));
  }
  report.one_hung = limits.one_hung;
  const WrittenCount written = functions_written(kRoot, o.chapters);
  report.functions_written = written.written;
  report.functions_total = written.total;
  std::cout << (o.json ? report_json(report) : summary_text(report)) << std::flush;
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  return exit_status(report);
}

std::atomic<bool> stop_watching{false};
extern "C" void on_stop(int) { stop_watching = true; }

[[noreturn]] void stopped() {
  std::cout << "\nbook: stopped watching" << std::endl;
  std::exit(0);
}

// Checks again on every save under exercises/, until Ctrl-C.
[[noreturn]] void watch(const CheckOptions& o) {
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const fs::path exercises = kRoot / "exercises";
  while (true) {
    if (isatty(STDOUT_FILENO)) std::cout << "\033[2J\033[H";
    // A save made while the check builds or runs would be missed by a
    // watcher started after it: compare the files before and after.
    const std::string stamp = folder_stamp(exercises);
    check_once(o);
    if (stop_watching) stopped();
    std::cout << std::endl;
    if (folder_stamp(exercises) != stamp) {
      std::cout << "exercises/ changed during this check: checking again..." << std::endl;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    std::cout << "Watching exercises/ for changes (Ctrl-C to stop)..." << std::endl;
    // (a file that is not code, written under exercises/, wakes the
    // watcher but checks nothing again)
    do {
      wait_for_change(exercises, stop_watching);
      if (stop_watching) stopped();
    } while (folder_stamp(exercises) == stamp);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CheckOptions options;
  try {
    options = parse_check_options(kRoot, std::vector<std::string>(argv + 1, argv + argc));
  } catch (const Refusal& refusal) {
    refuse(refusal.what());
  }
  if (options.help) {
    std::cout << check_help(int(book_chapters(kRoot).size()));
    return 0;
  }
  if (options.watch) watch(options);
  return check_once(options);
}
