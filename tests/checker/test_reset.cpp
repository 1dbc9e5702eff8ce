// `./book reset N FUNCTION` (tools/checker/reset.cpp) on the fixture tree
// fixtures/checker/exercise_tree/ (its README says what it holds).
#include "checker_fixtures.hpp"
#include "chapters.hpp"
#include "reset.hpp"

#include "support/catch2_compat.hpp"

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using namespace sa::check;

namespace {

const std::string kMine = "exercises/01-demo/demo.cpp";

std::string reset(const ScratchTree& tree, const std::vector<std::string>& words) {
  std::ostringstream out;
  reset_command(tree.root, words, out, "20260126-142501");
  return out.str();
}

}  // namespace

TEST_CASE("reset: a written function is its stub again, the reader's kept in saved/", "[checker]") {
  const ScratchTree tree("exercise_tree");
  CHECK(reset(tree, {"1", "shift"}) ==
        "shift in exercises/01-demo/demo.cpp is its stub again.\n"
        "Your version is kept in exercises/01-demo/saved/shift.20260126-142501.cpp.\n");
  CHECK(tree.read("exercises/01-demo/saved/shift.20260126-142501.cpp") ==
        "double shift(double x) {\n"
        "  return x + 1;  // mine\n"
        "}\n");
  CHECK(tree.read(kMine) ==
        "// The fixture chapter's stubs.\n"
        "#include \"sa/exercise.hpp\"\n"
        "\n"
        "namespace sa {\n"
        "\n"
        "double shift(double x) {\n"
        "  // TODO: one more than x\n"
        "  SA_TODO(\"shift\", \"add one\");\n"
        "}\n"
        "\n"
        "double unhinted(double x) {\n"
        "  SA_TODO(\"unhinted\", \"nothing\");\n"
        "}\n"
        "\n"
        "}  // namespace sa\n");
  // Again: nothing to do.
  CHECK(reset(tree, {"1", "shift"}) == "shift is already its stub: nothing to reset\n");
}

TEST_CASE("reset: the function's hints start again at level 1, the other functions' levels stay", "[checker]") {
  const ScratchTree tree("exercise_tree");
  std::filesystem::create_directories(tree.root / "build");
  tree.write("build/hint-levels", "01-demo shift 2\n01-demo scale 3\n");
  CHECK(reset(tree, {"1", "shift"}) ==
        "shift in exercises/01-demo/demo.cpp is its stub again.\n"
        "Your version is kept in exercises/01-demo/saved/shift.20260126-142501.cpp.\n"
        "Its hints start again at level 1 (./book hint 1 shift).\n");
  CHECK(tree.read("build/hint-levels") == "01-demo scale 3\n");
  // A stub whose hints were read: its hints start again, nothing else changes.
  tree.write("build/hint-levels", "01-demo shift 1\n01-demo scale 3\n");
  CHECK(reset(tree, {"1", "shift"}) ==
        "shift is already its stub: nothing to reset\n"
        "Its hints start again at level 1 (./book hint 1 shift).\n");
  CHECK(tree.read("build/hint-levels") == "01-demo scale 3\n");
}

TEST_CASE("reset: a file saved with CRLF line ends keeps them, and the function before stays whole", "[checker]") {
  // (The scanner once took a '\r' after a closing brace for the start of the
  // next definition, and reset cut that brace away.)
  const ScratchTree tree("exercise_tree");
  std::string crlf, lf = tree.read(kMine);
  // (without the SA_TODO header, which reset puts back: in CRLF too)
  const std::string header = "#include \"sa/exercise.hpp\"\n";
  REQUIRE(lf.find(header) != std::string::npos);
  lf.replace(lf.find(header), header.size(), "#include <cmath>\n");
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  tree.write(kMine, crlf);
  CHECK(reset(tree, {"1", "shift"}) ==
        "shift in exercises/01-demo/demo.cpp is its stub again.\n"
        "Your version is kept in exercises/01-demo/saved/shift.20260126-142501.cpp.\n");
  const std::string after = tree.read(kMine);
  CHECK(after.find("SA_TODO(\"shift\", \"add one\");\r\n}\r\n\r\ndouble unhinted(double x) {\r\n") !=
        std::string::npos);
  CHECK(after.find("namespace sa {\r\n\r\ndouble shift") != std::string::npos);
  CHECK(after.find("#include \"sa/exercise.hpp\"\r\n") != std::string::npos);
  // Every line end is CRLF: no lone '\n' was mixed in.
  for (size_t i = 0; i < after.size(); ++i)
    if (after[i] == '\n') REQUIRE((i > 0 && after[i - 1] == '\r'));
  // And the stub, CRLF or not, counts as the stub.
  CHECK(reset(tree, {"1", "shift"}) == "shift is already its stub: nothing to reset\n");
}

TEST_CASE("reset: the reader's version is kept or nothing changes, and two resets in one second keep both",
          "[checker]") {
  const ScratchTree tree("exercise_tree");
  const std::string before = tree.read(kMine);
  // saved/ is a file: the version cannot be kept, so the function stays.
  std::filesystem::create_directories(tree.root / "exercises" / "01-demo");
  tree.write("exercises/01-demo/saved", "a file where the folder goes");
  CHECK_THROWS_WITH(reset(tree, {"1", "shift"}),
                    "reset: cannot keep your version of shift in exercises/01-demo/saved/shift.20260126-142501.cpp (is "
                    "exercises/01-demo/saved/ a writable folder?); nothing was reset");
  CHECK(tree.read(kMine) == before);
  std::filesystem::remove(tree.root / "exercises" / "01-demo" / "saved");
  // Reset, write it again, reset within the same second: two kept versions.
  CHECK(reset(tree, {"1", "shift"}).find("saved/shift.20260126-142501.cpp") != std::string::npos);
  tree.write(kMine, before);
  CHECK(reset(tree, {"1", "shift"}).find("saved/shift.20260126-142501-2.cpp") != std::string::npos);
  CHECK(tree.read("exercises/01-demo/saved/shift.20260126-142501.cpp").find("x + 1") != std::string::npos);
  CHECK(tree.read("exercises/01-demo/saved/shift.20260126-142501-2.cpp").find("x + 1") != std::string::npos);
}

TEST_CASE("reset: a deleted function comes back after the one before it that is still there", "[checker]") {
  const ScratchTree tree("exercise_tree");
  CHECK(reset(tree, {"01", "scale"}) == "scale in exercises/01-demo/demo.cpp is its stub again.\n");
  CHECK(!std::filesystem::exists(tree.root / "exercises" / "01-demo" / "saved"));
  CHECK(tree.read(kMine) ==
        "// The fixture chapter's stubs.\n"
        "#include \"sa/exercise.hpp\"\n"
        "\n"
        "namespace sa {\n"
        "\n"
        "double shift(double x) {\n"
        "  return x + 1;  // mine\n"
        "}\n"
        "\n"
        "double scale(double x) {\n"
        "  SA_TODO(\"scale\", \"twice x\");\n"
        "}\n"
        "\n"
        "double unhinted(double x) {\n"
        "  SA_TODO(\"unhinted\", \"nothing\");\n"
        "}\n"
        "\n"
        "}  // namespace sa\n");
}

TEST_CASE("reset: the first function deleted goes after namespace sa, with the header it needs", "[checker]") {
  const ScratchTree tree("exercise_tree");
  tree.write(kMine, "#include <cmath>\n\nnamespace sa {\n\ndouble scale(double x) { return 2 * x; }\n}\n");
  CHECK(reset(tree, {"1", "shift"}) == "shift in exercises/01-demo/demo.cpp is its stub again.\n");
  CHECK(tree.read(kMine) ==
        "#include <cmath>\n"
        "#include \"sa/exercise.hpp\"\n"
        "\n"
        "namespace sa {\n"
        "\n"
        "double shift(double x) {\n"
        "  // TODO: one more than x\n"
        "  SA_TODO(\"shift\", \"add one\");\n"
        "}\n"
        "\n"
        "double scale(double x) { return 2 * x; }\n"
        "}\n");
  tree.write(kMine, "// nothing of sa here\n");
  REQUIRE_THROWS_WITH(reset(tree, {"1", "shift"}),
                      "reset: cannot find where shift goes in exercises/01-demo/demo.cpp; copy it from "
                      "tests/stubs/01-demo/demo.cpp");
}

TEST_CASE("reset: a deleted file comes back whole from its stub", "[checker]") {
  const ScratchTree tree("exercise_tree");
  std::filesystem::remove_all(tree.root / "exercises");
  CHECK(reset(tree, {"1", "unhinted"}) == "exercises/01-demo/demo.cpp was missing: restored it whole from its stub\n");
  CHECK(tree.read(kMine) == tree.read("tests/stubs/01-demo/demo.cpp"));
}

TEST_CASE("reset: a bad command line is refused with ./book's sentences", "[checker]") {
  const ScratchTree tree("exercise_tree");
  const std::string usage = " (usage: ./book reset N FUNCTION)";
  REQUIRE_THROWS_WITH(reset(tree, {}), "reset: which chapter and function?" + usage);
  REQUIRE_THROWS_WITH(reset(tree, {"1"}),
                      "reset: which function? chapter 1's functions: scale, shift, unhinted" + usage);
  REQUIRE_THROWS_WITH(reset(tree, {"1", "scale", "shift"}),
                      "reset: one chapter and one function, got '1 scale shift'" + usage);
  REQUIRE_THROWS_WITH(reset(tree, {"1", "scales"}),
                      "reset: chapter 1 has no exercise function 'scales'; its functions: scale, shift, unhinted");
  REQUIRE_THROWS_WITH(reset(tree, {"0", "scale"}),
                      "no chapter '0': chapters are numbered 1 to 2 (./book help lists the commands)");
  // Nothing was changed.
  CHECK(tree.read(kMine) == read_file(std::string(SA_CHECKER_FIXTURES) + "/exercise_tree/" + kMine));
}

TEST_CASE("reset: --help prints the usage and what reset does, and changes nothing", "[checker]") {
  const ScratchTree tree("exercise_tree");
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"--help"}, {"1", "-h"}, {"1", "shift", "--help"}}) {
    const std::string help = reset(tree, words);
    CHECK(help.starts_with("usage: ./book reset N FUNCTION\n\n"));
    CHECK(help.find("saved/") != std::string::npos);
  }
  CHECK(tree.read(kMine) == read_file(std::string(SA_CHECKER_FIXTURES) + "/exercise_tree/" + kMine));
  CHECK(!std::filesystem::exists(tree.root / "exercises/01-demo/saved"));
}
