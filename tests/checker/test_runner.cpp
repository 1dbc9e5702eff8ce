// How book-check runs the reader's code (tools/checker/case_runner.cpp):
// the suite's list of tests, which runs the code outside any test, under the
// same limits as a test case; and a test case's output, capped. Shell
// scripts stand in for a suite whose reader's code hangs, throws or prints
// without end.
#include "case_runner.hpp"
#include "classify.hpp"
#include "crash_words.hpp"

#include "support/catch2_compat.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace sa::check;
namespace fs = std::filesystem;

namespace {

// A fresh folder, and in it an executable script `suite` with this body.
struct FakeSuite {
  fs::path dir, path;
  explicit FakeSuite(const std::string& body) {
    static int made = 0;
    dir = fs::temp_directory_path() /
          ("book-check-runner-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
    fs::remove_all(dir);
    fs::create_directories(dir);
    path = dir / "suite";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(path, fs::perms::owner_all);
  }
  ~FakeSuite() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

Limits limits_of(int seconds) {
  Limits l;
  l.timeout_seconds = seconds;
  return l;
}

}  // namespace

// (a suite writes its list to the file SA_CHECK_LIST names, a tab alone on
// the last line: what it prints is never taken for a name)
TEST_CASE("the list of tests: names, one a line, whatever else the suite prints", "[checker]") {
  const FakeSuite suite("echo 'printed by a global object'; printf 'first test\\nsecond: with [brackets]\\n\\t\\n' "
                        "> \"$SA_CHECK_LIST\"");
  const Listing listing = list_test_cases(suite.path, limits_of(5), suite.dir);
  CHECK(listing.problem.empty());
  CHECK(listing.names == std::vector<std::string>{"first test", "second: with [brackets]"});
}

TEST_CASE("the list of tests: reader's code before main() that hangs, throws, crashes or reads the terminal",
          "[checker]") {
  SECTION("an endless loop: the time limit, not a check that never ends") {
    const FakeSuite suite("exec sleep 30");  // (exec: no orphan left when it is killed)
    const Listing listing = list_test_cases(suite.path, limits_of(1), suite.dir);
    CHECK(listing.status == Status::timeout);
    CHECK(listing.problem ==
          "timed out after 1 s before any test started: code that runs outside any test (a global object's "
          "constructor, or a static variable's initializer, in the exercises?) never returned");
  }
  SECTION("an exception: named by its type") {
    const FakeSuite suite(
        "echo \"terminate called after throwing an instance of 'std::runtime_error'\" >&2; kill -ABRT $$");
    const Listing listing = list_test_cases(suite.path, limits_of(5), suite.dir);
    CHECK(listing.status == Status::crash);
    CHECK(listing.problem ==
          "crashed: uncaught exception of type std::runtime_error before any test started: code that runs outside "
          "any test (a global object's constructor, or a static variable's initializer, in the exercises?)");
  }
  SECTION("a crash: named by its signal") {
    const FakeSuite suite("kill -SEGV $$");
    const Listing listing = list_test_cases(suite.path, limits_of(5), suite.dir);
    CHECK(listing.problem.starts_with(signal_sentence(SIGSEGV) + " before any test started"));
  }
  SECTION("reading stdin gets the end of the input at once, not the terminal") {
    const FakeSuite suite("read line; printf 'read: [%s]\\n\\t\\n' \"$line\" > \"$SA_CHECK_LIST\"");
    const Listing listing = list_test_cases(suite.path, limits_of(5), suite.dir);
    CHECK(listing.problem.empty());
    CHECK(listing.names == std::vector<std::string>{"read: []"});
  }
  SECTION("a process it starts and leaves running neither holds check up nor outlives it") {
    const FakeSuite suite(
        "sleep 300 & echo $! > \"$(dirname \"$0\")/child.pid\"; printf 't\\n\\t\\n' > \"$SA_CHECK_LIST\"");
    const Listing listing = list_test_cases(suite.path, limits_of(5), suite.dir);
    CHECK(listing.names == std::vector<std::string>{"t"});
    pid_t child = 0;
    std::ifstream(suite.dir / "child.pid") >> child;
    REQUIRE(child > 0);
    CHECK(::kill(child, 0) != 0);
    if (::kill(child, 0) == 0) ::kill(child, SIGKILL);
  }
}

TEST_CASE("the list of tests: exit() before any test lists nothing, and says so", "[checker]") {
  const FakeSuite suite("exit 0");
  const Listing listing = list_test_cases(suite.path, limits_of(5), suite.dir);
  CHECK(listing.problem ==
        "crashed: exited with status 0 before any test started: code that runs outside any test (a global object's "
        "constructor, or a static variable's initializer, in the exercises?) (exit() there?)");
}

TEST_CASE("output without end is cut: a listing that prints past the limit, a test case stopped by SIGXFSZ",
          "[checker]") {
  const FakeSuite suite("yes 'a line printed in a loop'");
  const Listing listing = list_test_cases(suite.path, limits_of(20), suite.dir);
  CHECK(listing.problem ==
        "crashed: printed more than 16 MiB before any test started: code that runs outside any test (a global "
        "object's constructor, or a static variable's initializer, in the exercises?)");

  // On stderr too: the error file stops at the limit.
  const FakeSuite loud("yes 'an error printed in a loop' >&2");
  CHECK(list_test_cases(loud.path, limits_of(20), loud.dir).problem.starts_with("crashed: printed more than 16 MiB"));
  CHECK(fs::file_size(loud.dir / "list.out") <= size_t(kOutputLimitBytes));

  // A test case: run_suite's process stops at the limit (SIGXFSZ).
  const FakeSuite printing("yes 'a line printed in a loop'");
  Limits limits = limits_of(20);
  const std::vector<CaseResult> results = run_suite(printing.path, {"t"}, limits, printing.dir);
  REQUIRE(results.size() == 1);
  CHECK(results[0].message.starts_with("crashed: wrote more than 16 MiB to its output or a file"));
  CHECK(fs::file_size(printing.dir / "0.out") <= size_t(kOutputLimitBytes));

  CaseEnd end;
  end.exited = false;
  end.signal = SIGXFSZ;
  end.report = "start\tt\tfocus\n";
  CHECK(classify("t", end).message ==
        "crashed: wrote more than 16 MiB to its output or a file and was stopped (a print inside a loop?), in focus");
}

TEST_CASE("a process a test case started and left running is ended with the suite", "[checker]") {
  // fork() in an exercise: the test case ends, its child would run on.
  const FakeSuite suite("sleep 300 & echo $! > \"$(dirname \"$0\")/child.pid\"; exit 0");
  Limits limits = limits_of(5);
  run_suite(suite.path, {"t"}, limits, suite.dir);
  pid_t child = 0;
  std::ifstream(suite.dir / "child.pid") >> child;
  REQUIRE(child > 0);
  CHECK(::kill(child, 0) != 0);  // gone (ended and reaped), not running on under init
  if (::kill(child, 0) == 0) ::kill(child, SIGKILL);
}
