#include "sa/exercise.hpp"

#include <string_view>

namespace sa {

namespace {
// __FILE__ is absolute; the reader wants the path they would type.
std::string relative_to_repository(std::string_view file) {
  for (std::string_view root : {"exercises/", "solutions/", "chapters/"}) {
    if (auto at = file.rfind(root); at != std::string_view::npos) return std::string(file.substr(at));
  }
  return std::string(file);
}
}  // namespace

NotImplemented::NotImplemented(std::string function, std::string file, std::string hint)
    : std::logic_error("not implemented yet: " + function + " (edit " + file + ")"),
      function_(std::move(function)),
      file_(std::move(file)),
      hint_(std::move(hint)) {}

void not_implemented(const char* function, const char* file, const char* hint) {
  throw NotImplemented(function, relative_to_repository(file), hint);
}

}  // namespace sa
