// A whole file's text: the one reader of the checker's three programs.
#pragma once

#include <filesystem>
#include <string>

namespace sa::check {

// The whole of a file, or "" when it cannot be read (a report the test
// process never wrote, a reader's deleted exercise file).
std::string read_file(const std::filesystem::path& path);

}  // namespace sa::check
