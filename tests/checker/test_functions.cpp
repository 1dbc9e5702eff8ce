// "Functions written: K of M": the scanner that finds the exercise
// functions and their bodies, comments and spacing aside.
#include "exercise_functions.hpp"

#include "support/catch2_compat.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

using sa::check::functions_in;

TEST_CASE("the functions of a file, at namespace scope only", "[checker]") {
  const auto functions = functions_in(
      "// a comment { with a brace\n"
      "#include <vector>\n"
      "namespace sa {\n"
      "struct Shape { int rows() const { return 1; } };\n"
      "std::vector<double> row_entropy(const Matrix& w) {\n"
      "  const char* s = \"}\";  /* { */\n"
      "  int n = 1'000; char c = '{';\n"
      "  if (n) { return {}; }\n"
      "}\n"
      "Matrix focus(\n"
      "    const Matrix& x) { SA_TODO(\"focus\"); }\n"
      "}  // namespace sa\n");
  REQUIRE(functions.size() == 2);
  CHECK(functions[0].name == "row_entropy");
  CHECK(functions[0].first_line == 5);
  CHECK(functions[0].last_line == 9);
  CHECK(functions[0].body == "constchar*s=\"}\";intn=1'000;charc='{';if(n){return{};}");
  CHECK(functions[1].name == "focus");
  CHECK(functions[1].first_line == 10);
  CHECK(functions[1].body == "SA_TODO(\"focus\");");
}

TEST_CASE("a function counts as written once its body differs from the stub's", "[checker]") {
  const std::string stub = "namespace sa {\nint f() { SA_TODO(\"f\"); }\nint g() { SA_TODO(\"g\"); }\n}\n";
  const std::string respaced = "namespace sa {\nint f() {\n  // mine soon\n  SA_TODO( \"f\" );\n}\nint g() { return 2; }\n}\n";
  const auto a = functions_in(stub), b = functions_in(respaced);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(a[0].body == b[0].body);  // comments and spacing aside: still the stub
  CHECK(a[1].body != b[1].body);  // written
}

TEST_CASE("on the book's own files, the stubs count as unwritten and the solutions as written", "[checker]") {
  namespace fs = std::filesystem;
  const fs::path source = SA_CHECKER_SOURCE_ROOT;
  const fs::path root = fs::temp_directory_path() / ("book-check-test-" + std::to_string(::getpid()));
  fs::create_directories(root / "tests");
  fs::copy(source / "tests" / "stubs", root / "tests" / "stubs", fs::copy_options::recursive);
  std::vector<std::string> chapters;
  for (const auto& entry : fs::directory_iterator(root / "tests" / "stubs")) chapters.push_back(entry.path().filename());
  fs::copy(source / "tests" / "stubs", root / "exercises", fs::copy_options::recursive);
  const sa::check::WrittenCount none = sa::check::functions_written(root, chapters);
  fs::remove_all(root / "exercises");
  fs::copy(source / "solutions", root / "exercises", fs::copy_options::recursive);
  const sa::check::WrittenCount all = sa::check::functions_written(root, chapters);
  fs::remove_all(root);
  CHECK(none.total > 30);
  CHECK(none.written == 0);
  CHECK(all.total == none.total);
  CHECK(all.written == all.total);
}
