// The first error of a chapter that does not compile, and the progress
// line's file, on build logs recorded from real builds
// (tests/fixtures/checker/logs/).
#include "checker_fixtures.hpp"

#include "build_log.hpp"
#include "build_progress.hpp"

#include "support/catch2_compat.hpp"

// The logs were recorded in a copy of the tree at this path.
const std::string kRecordedRoot = "/work/wt-checker";

TEST_CASE("a compile error is shown at the reader's file and line", "[checker]") {
  CHECK(sa::check::first_error("02", {checker_fixture("logs/compile_error.log")}, kRecordedRoot) ==
        "exercises/02-scaling/scaling.cpp:15:3: error: ‘retrun’ was not declared in this scope");
  // The reader's line wins over an earlier line that only mentions an error.
  CHECK(sa::check::first_error("02", {"cc1plus: all warnings being treated as errors\n" + checker_fixture("logs/compile_error.log")},
                               kRecordedRoot) ==
        "exercises/02-scaling/scaling.cpp:15:3: error: ‘retrun’ was not declared in this scope");
  // Built through ccache with CCACHE_BASEDIR, the paths are relative to the
  // build folder: still the reader's path from the book's root.
  std::string relative = checker_fixture("logs/compile_error.log");
  for (size_t at; (at = relative.find(kRecordedRoot + "/")) != std::string::npos;)
    relative.replace(at, kRecordedRoot.size() + 1, "../");
  CHECK(sa::check::first_error("02", {relative}, kRecordedRoot) ==
        "exercises/02-scaling/scaling.cpp:15:3: error: ‘retrun’ was not declared in this scope");
}

TEST_CASE("an error inside Eigen's templates is placed where the reader's code required it", "[checker]") {
  CHECK(sa::check::first_error("01", {checker_fixture("logs/eigen_required_from.log")}, kRecordedRoot) ==
        "exercises/01-qkv-projection/qkv.cpp:49:62: error inside a library it calls: no type named ‘ReturnType’ in "
        "‘struct Eigen::ScalarBinaryOpTraits<float, double, Eigen::internal::scalar_sum_op<float, double> >’");
}

TEST_CASE("a linker error names the undefined function", "[checker]") {
  CHECK(sa::check::first_error("01", {checker_fixture("logs/linker_error.log")}, kRecordedRoot) ==
        "exercises/01-qkv-projection/qkv.cpp: sa::embed calls sa::never_defined(Matrix const&), which no file "
        "defines (declared but not defined, or defined with another name or signature?)");
}

// The linker's own last line, "collect2: error: ld returned 1 exit status",
// is never what the reader sees; nor an offset in the hidden suite's object.
// (These logs were recorded with Ninja, which names objects relative to the
// build folder: the tree's root is in none of them. The header that
// declares a function is looked up in this tree.)
const std::string kSourceRoot = SA_CHECKER_SOURCE_ROOT;

TEST_CASE("a main() in an exercise file is named, with the file", "[checker]") {
  CHECK(sa::check::first_error("02", {checker_fixture("logs/linker_main_defined.log")}, kSourceRoot) ==
        "exercises/02-scaling/scaling.cpp defines main(), but the hidden suite brings its own: delete yours (the "
        "exercise files hold only the chapter's functions and your helpers)");
}

TEST_CASE("a function defined in two exercise files names both files", "[checker]") {
  CHECK(sa::check::first_error("08", {checker_fixture("logs/linker_defined_twice.log")}, kSourceRoot) ==
        "sa::row_max(Matrix const&, long) is defined twice, in exercises/08-efficient-attention/online_softmax.cpp "
        "and in tiled.cpp: keep one (a helper of one file only: make it static, or put it in an unnamed "
        "namespace)");
  // Another chapter's link in the same log is not this chapter's error:
  // chapter 2 gets the last resort, never chapter 8's linker line.
  const std::string other =
      sa::check::first_error("02", {checker_fixture("logs/linker_defined_twice.log")}, kSourceRoot);
  CHECK(other.find("row_max") == std::string::npos);
  CHECK(other.find("tiled.cpp") == std::string::npos);
}

TEST_CASE("an earlier chapter's function defined again in an exercise names that chapter", "[checker]") {
  // The suites link the earlier chapters' references whole, so a copy of
  // chapter 2's scaled_scores in exercises/05 is a multiple definition (it
  // would otherwise replace the book's silently).
  CHECK(sa::check::first_error("05", {checker_fixture("logs/linker_book_function_again.log")}, kSourceRoot) ==
        "sa::scaled_scores(Matrix const&, Matrix const&) is chapter 2's function "
        "(chapters/02-scaling/scaling.hpp), and exercises/05-causal-mask/mask.cpp defines it again: call chapter "
        "2's, or give yours another name (or make it static)");
  // Chapter 2's own check never shows chapter 5's link.
  CHECK(sa::check::first_error("02", {checker_fixture("logs/linker_book_function_again.log")}, kSourceRoot)
            .find("scaled_scores") == std::string::npos);
}

TEST_CASE("a function the suite calls and the exercises do not define is named with its header", "[checker]") {
  const std::string shown =
      sa::check::first_error("02", {checker_fixture("logs/linker_undefined_in_suite.log")}, kSourceRoot);
  CHECK(shown ==
        "the suite calls sa::scaled_scores(Matrix const&, Matrix const&), declared in "
        "chapters/02-scaling/scaling.hpp, but no file of exercises/02-scaling/ defines it with these "
        "parameters inside namespace sa: renamed? other parameters? outside namespace sa? a file emptied?");
  CHECK(shown.find("test_scaling.cpp") == std::string::npos);
  // Without the tree (the header cannot be looked up), the function alone.
  CHECK(sa::check::first_error("02", {checker_fixture("logs/linker_undefined_in_suite.log")}, "/nonexistent")
            .starts_with("the suite calls sa::scaled_scores(Matrix const&, Matrix const&) but no file of "
                         "exercises/02-scaling/"));
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

TEST_CASE("an error in the book's own code says that a file of the book was edited", "[checker]") {
  // Chapter 3's header edited to match an exercise: chapter 3 still builds,
  // chapter 4's suite, which links chapter 3's reference, does not.
  const std::string log =
      "FAILED: CMakeFiles/sa_03_solutions.dir/solutions/03-softmax/softmax.cpp.o\n"
      "/book/solutions/03-softmax/softmax.cpp:94:8: error: ambiguating new declaration of 'double sa::focus(const "
      "Matrix&)'\n";
  CHECK(sa::check::first_error("04", {log}, "/book") ==
        "solutions/03-softmax/softmax.cpp:94:8: error: ambiguating new declaration of 'double sa::focus(const "
        "Matrix&)' (the book's own code, which compiles as handed out: was a file of the book edited, a header "
        "under chapters/? git diff shows it)");
  // The reader's own file: no such words.
  CHECK(sa::check::first_error("03", {"/book/exercises/03-softmax/softmax.cpp:5:3: error: 'x' was not declared\n"},
                               "/book") == "exercises/03-softmax/softmax.cpp:5:3: error: 'x' was not declared");
}
