// Where things are: the running program's folder, its sibling programs,
// and paths shown as the reader would type them.
#pragma once

#include <filesystem>
#include <string>

namespace sa {

// The folder of the running program (build/bin), from /proc/self/exe;
// empty when Linux cannot say.
std::filesystem::path running_program_dir();

// Another program of the build, next to the running one (build/bin/...).
std::string sibling_program(const std::string& name);

// A path as the reader would type it from the repository root (unchanged
// when it lies outside the repository).
std::string shown_path(const std::string& path);

}  // namespace sa
