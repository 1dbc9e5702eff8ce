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
  std::error_code ec;
  const fs::path rel = fs::relative(path, source_dir(), ec);
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

}  // namespace sa
