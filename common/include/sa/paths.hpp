// Where things are: the running program's folder, its sibling programs,
// and paths shown as the reader would type them.
#pragma once

#include <filesystem>
#include <string>

namespace sa {

// The repository's root and the build folder, as CMake configured them.
// They are compiled into one small file (build_paths.cpp) and nowhere else:
// a path on every file's command line would make a copy of the tree at
// another place recompile everything, where the compiler cache could have
// answered (the exercise loop's test builds such a copy).
const std::filesystem::path& source_dir();
const std::filesystem::path& binary_dir();

// The folder of the running program (build/bin), from /proc/self/exe;
// empty when Linux cannot say.
std::filesystem::path running_program_dir();

// Another program of the build, next to the running one (build/bin/...).
std::string sibling_program(const std::string& name);

// A path as the reader would type it from the folder the program runs in:
// relative to it when the path lies under it (build/plots/... from the
// repository's root, which is where ./book runs), otherwise whole; a
// relative path as given.
std::string shown_path(const std::string& path);

// A path (or any text) as one word for /bin/sh: single-quoted, a quote
// inside written '\''.
std::string shell_quoted(const std::string& text);

// While it lives, a Ctrl-C (SIGINT), a kill (SIGTERM) or a closed terminal
// (SIGHUP) that ends the program removes `path` first: a temporary file
// being written (a checkpoint's, a figure's), which an interrupted save
// otherwise left behind, hidden, as big as what it saved. A signal the
// program ignores (a background job's SIGINT, nohup's SIGHUP) stays
// ignored. Any number of them at once, from any thread; a path is at most
// PATH_MAX bytes (a longer one is not removed).
class RemovedOnSignal {
 public:
  explicit RemovedOnSignal(const std::string& path);
  ~RemovedOnSignal();
  RemovedOnSignal(const RemovedOnSignal&) = delete;
  RemovedOnSignal& operator=(const RemovedOnSignal&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace sa
