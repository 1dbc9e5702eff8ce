#include "read_file.hpp"

#include <fstream>
#include <sstream>

namespace sa::check {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace sa::check
