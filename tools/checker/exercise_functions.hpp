// The exercise functions of a chapter and whether the reader has written
// them: check's "Functions written: K of M", and which function ./book hint
// and ./book reset mean (book-exercise).
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

// The same, of a file; none when it cannot be read.
std::vector<FunctionDefinition> functions_of_file(const std::filesystem::path& path);

// One exercise function: a function of a stub, tests/stubs/C/FILE.
struct ExerciseFunction {
  std::string file;  // softmax.cpp
  std::string name;  // attention
};

// A chapter's exercise functions (every function of its stubs), in the order
// to write them: that of the sections of its hints file (tests/hints/C.txt),
// then any function the hints do not name, in the stubs' order.
std::vector<ExerciseFunction> chapter_exercises(const std::filesystem::path& root, const std::string& chapter);

// "a, b, c": the names, for a sentence.
std::string name_list(const std::vector<ExerciseFunction>& functions);

// The function of that name among a chapter's; a Refusal (chapters.hpp)
// naming the others when there is none: "hint: chapter 3 has no exercise
// function 'x'; its functions: ...", `command` being "hint" or "reset".
ExerciseFunction exercise_named(const std::vector<ExerciseFunction>& functions, const std::string& chapter,
                                const std::string& name, const std::string& command);

// The reader's function against its stub: written once its body in
// exercises/C/FILE differs from the stub's, comments and spacing aside;
// missing when the reader has deleted it (or the file).
enum class FunctionState { stub, written, missing };
FunctionState function_state(const std::filesystem::path& root, const std::string& chapter,
                             const ExerciseFunction& function);

struct WrittenCount {
  int written = 0, total = 0;
};

// How many of the chapters' exercise functions are written.
WrittenCount functions_written(const std::filesystem::path& root, const std::vector<std::string>& chapters);

}  // namespace sa::check
