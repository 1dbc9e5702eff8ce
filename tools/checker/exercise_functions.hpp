// The exercise functions of a C++ file and whether the reader has written
// them: check's "Functions written: K of M". (./book hint and ./book reset
// keep their own copy of this scanner in awk, cpp_functions in ./book; the
// unit tests hold both to the same answers on the real stubs.)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sa::check {

// A function defined at namespace scope.
struct FunctionDefinition {
  std::string name;
  int first_line = 0;  // where its signature starts
  int last_line = 0;   // its closing brace
  std::string body;    // without comments or whitespace
};

// Every function defined at namespace scope in C++ source, in order. A small
// scanner, enough for the exercises: it skips comments, strings and
// character literals and counts braces.
std::vector<FunctionDefinition> functions_in(const std::string& source);

struct WrittenCount {
  int written = 0, total = 0;
};

// How many of the chapters' exercise functions (those of tests/stubs/C/*.cpp)
// are written: a function is written once its body in exercises/C/ differs
// from its stub's, comments and spacing aside.
WrittenCount functions_written(const std::filesystem::path& root, const std::vector<std::string>& chapters);

}  // namespace sa::check
