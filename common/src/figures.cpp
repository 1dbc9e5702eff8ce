#include "sa/figures.hpp"

#include <fmt/core.h>

namespace sa {

namespace {
// Paths inside the repository print relative to it, as the reader types them.
std::string shown(const std::string& path) {
  const std::string root = std::string(SA_SOURCE_DIR) + "/";
  return path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
}
}  // namespace

Figures::Figures(const Cli& cli) : enabled_(cli.plots), dir_(cli.plots_dir) {}

void Figures::draw(const std::string& file, const std::function<std::string(const std::string&)>& draw) {
  if (!enabled_) return;
  const std::string written = draw(dir_ + "/" + file);
  if (written.empty()) return;
  written_.push_back(written);
  fmt::print("  figure: {}\n", shown(written));
}

void Figures::summary() const {
  if (!enabled_)
    fmt::print("\nFigures: not drawn (--no-plots).\n");
  else if (written_.empty())
    fmt::print("\nFigures: none drawn.\n");
  else
    fmt::print("\nFigures: {} written to {}/\n", written_.size(), shown(dir_));
}

}  // namespace sa
