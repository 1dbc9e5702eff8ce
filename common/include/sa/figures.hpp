// Where a chapter's figures go and the one line it prints for each.
#pragma once

#include "sa/cli.hpp"

#include <functional>
#include <string>
#include <vector>

namespace sa {

class Figures {
 public:
  explicit Figures(const Cli& cli);

  // Draws one figure: `draw` gets the full path and returns what sa::plot
  // returned (empty when gnuplot is missing). Prints "  figure: <path>".
  void draw(const std::string& file, const std::function<std::string(const std::string&)>& draw);

  // Before a chapter's figures: a blank line and "Drawing figures", when
  // there are figures to draw (with --no-plots, nothing).
  void heading() const;

  // Printed at the end of a chapter: how many figures, and where.
  void summary() const;

  // Whether figures are drawn (not --no-plots): a step that draws none for
  // its input says why only then.
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  std::string dir_;
  std::vector<std::string> written_;
};

}  // namespace sa
