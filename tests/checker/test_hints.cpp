// `./book hint N [FUNCTION]` (tools/checker/hints.cpp) on the fixture tree
// fixtures/checker/exercise_tree/ (its README says what it holds).
#include "checker_fixtures.hpp"
#include "chapters.hpp"
#include "exercise_functions.hpp"
#include "hints.hpp"

#include "support/catch2_compat.hpp"

#include <sstream>
#include <string>
#include <vector>

using namespace sa::check;

namespace {

std::string hint(const ScratchTree& tree, const std::vector<std::string>& words) {
  std::ostringstream out;
  hint_command(tree.root, words, out);
  return out.str();
}

}  // namespace

TEST_CASE("hints: the levels of a function and the text of each, comments left out", "[checker]") {
  const std::string hints = read_file(std::string(SA_CHECKER_FIXTURES) + "/exercise_tree/tests/hints/01-demo.txt");
  CHECK(hint_level_count(hints, "scale") == 3);
  CHECK(hint_level_count(hints, "shift") == 2);
  CHECK(hint_level_count(hints, "unhinted") == 0);
  CHECK(hint_lines(hints, "scale", 1) == std::vector<std::string>{"The idea of scale."});
  CHECK(hint_lines(hints, "scale", 2) == std::vector<std::string>{"The formula: y = 2 x."});
  // (the blank line the level starts with is left out)
  CHECK(hint_lines(hints, "scale", 3) == std::vector<std::string>{"return 2 * x;"});
  CHECK(hint_lines(hints, "shift", 2) == std::vector<std::string>{"x + 1."});
}

TEST_CASE("hints: each ask gives the next level, then the last again, with the reference answer", "[checker]") {
  const ScratchTree tree("exercise_tree");
  CHECK(hint(tree, {"1", "scale"}) ==
        "scale (exercises/01-demo/demo.cpp), hint 1 of 3: the idea\n"
        "  The idea of scale.\n"
        "More: ./book hint 1 scale\n");
  CHECK(hint(tree, {"01", "scale"}) ==
        "scale (exercises/01-demo/demo.cpp), hint 2 of 3: the formula, with shapes\n"
        "  The formula: y = 2 x.\n"
        "More: ./book hint 1 scale\n");
  const std::string last =
      "scale (exercises/01-demo/demo.cpp), hint 3 of 3: close to code\n"
      "  return 2 * x;\n"
      "That was the last hint for scale. The reference answer is solutions/01-demo/demo.cpp.\n";
  CHECK(hint(tree, {"01-demo", "scale"}) == last);
  CHECK(hint(tree, {"1", "scale"}) == last);
  // Another function starts at its first level; the levels are remembered
  // one line a function.
  CHECK(hint(tree, {"1", "shift"}).starts_with("shift (exercises/01-demo/demo.cpp), hint 1 of 2: the idea\n"));
  CHECK(tree.read("build/hint-levels") == "01-demo scale 3\n01-demo shift 1\n");
  // The last of two levels is "close to code" too.
  CHECK(hint(tree, {"1", "shift"}) ==
        "shift (exercises/01-demo/demo.cpp), hint 2 of 2: close to code\n"
        "  x + 1.\n"
        "That was the last hint for shift. The reference answer is solutions/01-demo/demo.cpp.\n");
}

TEST_CASE("hints: the remembered levels keep the other lines of build/hint-levels", "[checker]") {
  const ScratchTree tree("exercise_tree");
  std::filesystem::create_directories(tree.root / "build");
  tree.write("build/hint-levels", "03-softmax focus 2\n01-demo scale 1\nsomething else\n");
  CHECK(shown_hint_level(tree.root / "build" / "hint-levels", "01-demo", "scale") == 1);
  CHECK(hint(tree, {"1", "scale"}).find("hint 2 of 3") != std::string::npos);
  CHECK(tree.read("build/hint-levels") == "03-softmax focus 2\nsomething else\n01-demo scale 2\n");
}

TEST_CASE("hints: without a function, the first in the hints' order that is not written", "[checker]") {
  const ScratchTree tree("exercise_tree");
  // The hints' order (scale, shift), then the function they do not name.
  const std::vector<ExerciseFunction> functions = chapter_exercises(tree.root, "01-demo");
  CHECK(name_list(functions) == "scale, shift, unhinted");
  // scale is deleted, which is not written: its hint comes first.
  CHECK(hint(tree, {"1"}).starts_with("scale (exercises/01-demo/demo.cpp), hint 1 of 3"));
  tree.write("exercises/01-demo/demo.cpp",
             tree.read("exercises/01-demo/demo.cpp") + "namespace sa {\ndouble scale(double x) { return 2 * x; }\n}\n");
  CHECK(function_state(tree.root, "01-demo", functions[0]) == FunctionState::written);
  // shift is written, unhinted is not and has no hints.
  REQUIRE_THROWS_WITH(hint(tree, {"1"}),
                      "hint: no hints written for unhinted yet (tests/hints/01-demo.txt); the "
                      "stub's TODO says what to compute");
}

TEST_CASE("hints: every function written", "[checker]") {
  const ScratchTree tree("exercise_tree");
  tree.write("exercises/01-demo/demo.cpp",
             "namespace sa {\ndouble shift(double x) { return x + 1; }\ndouble scale(double x) { return 2 * x; }\n"
             "double unhinted(double x) { return x; }\n}\n");
  CHECK(hint(tree, {"1"}) ==
        "Every function of chapter 1 is written; ./book check 1 says whether each is right.\n"
        "A hint for one of them: ./book hint 1 FUNCTION (scale, shift, unhinted)\n");
  CHECK(!std::filesystem::exists(tree.root / "build" / "hint-levels"));
}

TEST_CASE("hints: a bad command line is refused with ./book's sentences", "[checker]") {
  const ScratchTree tree("exercise_tree");
  const std::string usage = " (usage: ./book hint N [FUNCTION])";
  REQUIRE_THROWS_WITH(hint(tree, {}), "hint: which chapter?" + usage);
  REQUIRE_THROWS_WITH(hint(tree, {"1", "scale", "shift"}),
                      "hint: a chapter and at most one function, got '1 scale shift'" + usage);
  REQUIRE_THROWS_WITH(hint(tree, {"1", "double"}),
                      "hint: chapter 1 has no exercise function 'double'; its functions: scale, shift, unhinted");
  REQUIRE_THROWS_WITH(hint(tree, {"3"}),
                      "no chapter '3': chapters are numbered 1 to 2 (./book help lists the commands)");
  REQUIRE_THROWS_WITH(hint(tree, {"abc"}),
                      "no chapter 'abc': chapters are numbered 1 to 2 (./book help lists the commands)");
  REQUIRE_THROWS_WITH(hint(tree, {"1-demos"}),
                      "no chapter '1-demos': chapter 1 is 01-demo (or just 1) (./book help lists the commands)");
  REQUIRE_THROWS_WITH(hint(tree, {"2"}), "chapter 2 (02-later) is not written yet");
}

TEST_CASE("hints: --help prints the usage and what hint does, and shows no hint", "[checker]") {
  const ScratchTree tree("exercise_tree");
  for (const std::vector<std::string>& words : {std::vector<std::string>{"--help"}, {"-h"}, {"1", "scale", "--help"}}) {
    const std::string help = hint(tree, words);
    CHECK(help.starts_with("usage: ./book hint N [FUNCTION]\n\n"));
    CHECK(help.find("next level") != std::string::npos);
  }
  CHECK(!std::filesystem::exists(tree.root / "build" / "hint-levels"));
}
