// The compiler's warnings about the reader's code. A wrong answer often has
// one: a variable used before it is set, a result computed and never used
// ("unused variable 'scaled'"), an int compared with a size. The build log
// holds them only for the files it compiled, and a file is compiled again
// only when it changes, so they are kept between checks, each with the text
// of the file it was about (a warning about older code is never shown).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sa::check {

// The warnings in a build log about files under exercises/, one line each,
// as "exercises/03-softmax/softmax.cpp:12:9: 'sum' is used uninitialized
// [-Wuninitialized]"; and the exercise files the log compiled ("exercises/
// 03-softmax/softmax.cpp"), with or without warnings.
struct LogWarnings {
  std::vector<std::string> compiled;
  std::vector<std::string> warnings;
};
LogWarnings warnings_in_log(const std::string& log);

// Keeps the warnings of every exercise file `log` compiled in `store`
// (a file's old ones are replaced, or removed when it has none now).
void remember_warnings(const std::filesystem::path& store, const std::filesystem::path& root, const std::string& log);

// The kept warnings of a chapter's exercise files ("03-softmax") whose text
// is still the text they were about.
std::vector<std::string> chapter_warnings(const std::filesystem::path& store, const std::filesystem::path& root,
                                          const std::string& chapter);

}  // namespace sa::check
