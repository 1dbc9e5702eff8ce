// Where CMake configured the tree: SA_SOURCE_DIR and SA_BINARY_DIR are
// defined for this file alone (common/CMakeLists.txt says why).
#include "sa/paths.hpp"

namespace sa {

const std::filesystem::path& source_dir() {
  static const std::filesystem::path dir = SA_SOURCE_DIR;
  return dir;
}

const std::filesystem::path& binary_dir() {
  static const std::filesystem::path dir = SA_BINARY_DIR;
  return dir;
}

}  // namespace sa
