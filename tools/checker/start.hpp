// `./book start`, once the packages are installed and the build configured:
// builds each chapter just before it runs. A builder compiles the programs
// in reading order (chapter 1's first, with the common library) while the
// chapters already built run, so chapter 1 prints within a minute or so of
// a fresh clone instead of after the whole tree. With Ninja it is one build
// of every chapter, which keeps both cores busy from the first file to the
// last; start.cpp says how it still finishes them in order. Nothing else is
// built: the suites wait for `./book test` and `./book check`. A chapter
// whose default run trains for minutes runs its short run here, with the
// options of its folder's quick_options.txt (chapter 9: --quick), as its
// docs test does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sa::check {

// Builds and runs `chapters` in order; returns the exit status for ./book
// (a chapter's own when it fails, 2 when one does not build).
int start_chapters(const std::filesystem::path& source_dir, const std::filesystem::path& build_dir, int jobs,
                   const std::vector<std::string>& chapters);

}  // namespace sa::check
