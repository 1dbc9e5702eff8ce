// The first error of a chapter that does not compile, and the progress
// line's file, on build logs recorded from real builds
// (tests/fixtures/checker/logs/).
#include "checker_fixtures.hpp"

#include "build_log.hpp"
#include "build_progress.hpp"

#include <catch2/catch.hpp>

// The logs were recorded in a copy of the tree at this path.
const std::string kRecordedRoot = "/work/wt-checker";

TEST_CASE("a compile error is shown at the reader's file and line", "[checker]") {
  CHECK(sa::check::first_error("02", {checker_fixture("logs/compile_error.log")}, kRecordedRoot) ==
        "exercises/02-scaling/scaling.cpp:15:3: error: ‘retrun’ was not declared in this scope");
  // The reader's line wins over an earlier line that only mentions an error.
  CHECK(sa::check::first_error("02", {"cc1plus: all warnings being treated as errors\n" + checker_fixture("logs/compile_error.log")},
                               kRecordedRoot) ==
        "exercises/02-scaling/scaling.cpp:15:3: error: ‘retrun’ was not declared in this scope");
}

TEST_CASE("an error inside Eigen's templates is placed where the reader's code required it", "[checker]") {
  CHECK(sa::check::first_error("01", {checker_fixture("logs/eigen_required_from.log")}, kRecordedRoot) ==
        "exercises/01-qkv-projection/qkv.cpp:49:62: error inside a library it calls: no type named ‘ReturnType’ in "
        "‘struct Eigen::ScalarBinaryOpTraits<float, double, Eigen::internal::scalar_sum_op<float, double> >’");
}

TEST_CASE("a linker error names the undefined function", "[checker]") {
  CHECK(sa::check::first_error("01", {checker_fixture("logs/linker_error.log")}, kRecordedRoot) ==
        "qkv.cpp:(.text+0x4e): undefined reference to `sa::never_defined(Eigen::Matrix<float, -1, -1, 1, -1, -1> const&)'");
}

TEST_CASE("a log without a recognisable error points to the full build", "[checker]") {
  CHECK(sa::check::first_error("04", {"make: *** [Makefile:91: all] Interrupted\n"}, kRecordedRoot) ==
        "the build failed (see: cmake --build build --target test_04_exercises)");
  const std::string long_error = "/work/wt-checker/exercises/04-multi-head/x.cpp:1:1: error: " + std::string(300, 'x');
  const std::string shown = sa::check::first_error("04", {long_error}, kRecordedRoot);
  CHECK(shown.size() == 220);
  CHECK(shown.ends_with("..."));
}

TEST_CASE("the progress line names the file being compiled", "[checker]") {
  const std::string log = checker_fixture("logs/compile_error.log");
  CHECK(sa::check::files_compiled(log) > 0);
  CHECK(sa::check::last_compiled("[  4%] Building CXX object common/CMakeFiles/sa_precompiled_suite.dir/cmake_pch.hxx.gch\n") ==
        "the precompiled Eigen and fmt");
  CHECK(sa::check::last_compiled("[ 10%] Building CXX object tests/CMakeFiles/test_03_cases.dir/03-softmax/test_softmax.cpp.o\n"
                                 "[ 12%] Building CXX object CMakeFiles/sa_03_exercises.dir/exercises/03-softmax/softmax.cpp.o\n") ==
        "exercises/03-softmax/softmax.cpp");
  CHECK(sa::check::last_compiled("[3/9] Building CXX object common/CMakeFiles/sa_common_narrative.dir/Unity/unity_1_cxx.cxx.o\n") ==
        "files of sa_common_narrative");
  CHECK(sa::check::last_compiled("-- Configuring done\n").empty());
}
