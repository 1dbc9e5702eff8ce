// book-build: ./book's builds, with the progress line (build_progress.cpp),
// and `./book start`'s build-while-running (start.cpp). ./book builds this
// small program first, quietly (one translation unit, seconds), then runs
//   book-build BUILD_DIR JOBS build WHAT TARGET...   (a command's targets)
//   book-build BUILD_DIR JOBS start CHAPTER...       (./book start)
// A failed build ends with ./book's one-line refusal and status 2.
#include "build_progress.hpp"
#include "start.hpp"

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace sa::check;
  const std::string command = argc >= 4 ? argv[3] : "";
  const int jobs = argc >= 3 ? std::atoi(argv[2]) : 0;
  if (jobs < 1 || (command != "build" && command != "start") || (command == "build" && argc < 6)) {
    std::cerr << "usage: book-build BUILD_DIR JOBS build WHAT TARGET... | start CHAPTER... (./book runs it)"
              << std::endl;
    return 2;
  }
  const std::filesystem::path build_dir = argv[1];
  if (command == "start")
    return start_chapters(SA_SOURCE_DIR, build_dir, jobs, std::vector<std::string>(argv + 4, argv + argc));
  const std::string refusal = build_targets(build_dir, jobs, argv[4], std::vector<std::string>(argv + 5, argv + argc));
  if (refusal.empty()) return 0;
  std::cerr << "book: " << refusal << std::endl;
  return 2;
}
