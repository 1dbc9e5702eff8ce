#include "sa/paths.hpp"

#include <system_error>

namespace sa {

std::filesystem::path running_program_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || !exe.has_parent_path()) return {};
  return exe.parent_path();
}

std::string sibling_program(const std::string& name) {
  const std::filesystem::path bin = running_program_dir();
  return bin.empty() ? name : (bin / name).string();
}

std::string shown_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path given(path);
  // A relative path the reader gave is theirs, relative to where they are.
  if (given.is_relative()) return given.lexically_normal().string();
  // One of the book's own (build/plots/..., chapters/07-training/...), as the
  // reader would type it from the folder they ran the program in: from the
  // repository's root, build/plots/...; from build/, plots/...; from a
  // folder it does not lie under, the whole path.
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  if (ec) return path;
  const fs::path rel = fs::relative(given, here, ec);  // (through symbolic links too)
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

}  // namespace sa
