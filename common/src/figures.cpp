#include "sa/figures.hpp"

#include "sa/paths.hpp"

#include <fmt/core.h>

namespace sa {

Figures::Figures(const Cli& cli) : enabled_(cli.plots), dir_(cli.plots_dir) {}

void Figures::draw(const std::string& file, const std::function<std::string(const std::string&)>& draw) {
  if (!enabled_) return;
  const std::string written = draw(dir_ + "/" + file);
  if (written.empty()) return;
  written_.push_back(written);
  fmt::print("  figure: {}\n", shown_path(written));
}

void Figures::heading() const {
  if (enabled_) fmt::print("\nDrawing figures\n");
}

void Figures::summary() const {
  if (!enabled_)
    fmt::print("\nFigures: not drawn (--no-plots).\n");
  else if (written_.empty())
    fmt::print("\nFigures: none drawn.\n");
  else
    fmt::print("\nFigures: {} written to {}/\n", written_.size(), shown_path(dir_));
}

}  // namespace sa
