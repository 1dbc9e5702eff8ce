// Surfaces (sa::plot::surface): a matrix as 3-D bars, one per cell at its
// value, so attention weights stand as they are; and a grid of them over
// one z range (surface_grid). surface_panel draws one, whole figure or
// multiplot panel alike.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

namespace sa::plot {

using namespace detail;

namespace {

// A surface's input checked; `where` starts each message (a grid's "panel k: ").
void validate(std::string_view fn, const Surface& sf, const std::string& where = "") {
  const auto rows = static_cast<std::size_t>(sf.z.rows()), cols = static_cast<std::size_t>(sf.z.cols());
  if (rows == 0 || cols == 0) bad_input(fn, where + "empty matrix");
  if (rows < 2 || cols < 2) {
    bad_input(fn, fmt::format("{}a {} x {} matrix has no surface (need 2 x 2)", where, rows, cols));
  }
  if (!sf.row_labels.empty() && sf.row_labels.size() != rows) {
    bad_input(fn, fmt::format("{}{} row labels for a {} x {} matrix", where, sf.row_labels.size(), rows, cols));
  }
  if (!sf.col_labels.empty() && sf.col_labels.size() != cols) {
    bad_input(fn, fmt::format("{}{} column labels for a {} x {} matrix", where, sf.col_labels.size(), rows, cols));
  }
}

// The z range surfaces whose values span [mn, mx] are drawn over: from the
// floor (0, or the lowest value when it is negative: weights stand on the
// floor at 0) to the highest value, never empty.
std::pair<double, double> z_range(double mn, double mx) {
  if (mn == mx) mx = mn + 1;
  return {mn >= 0 ? 0.0 : mn, mx};
}

// Emits one surface (a whole figure, or one multiplot panel) into `s`,
// drawn over z in [zlo, zhi]. id: unique datablock suffix; width: the
// pixels across it; pt: the size of its tic labels; in_grid: one panel of
// a grid, which has no colour bar (the panels share one range, and their z
// axes give the values), fills more of its smaller room, and slants its
// key labels, which would otherwise run together.
void surface_panel(std::string& s, const Surface& sf, int id, double zlo, double zhi, double width, double pt,
                   bool in_grid) {
  const auto rows = static_cast<std::size_t>(sf.z.rows()), cols = static_cast<std::size_t>(sf.z.cols());
  s += title_command(sf.title, width - 60.0, pt + 4, pt);
  // Looking down 55 degrees, turned 40 degrees: keys run along the front
  // left edge, the query axis goes into the picture with row 0 at the back
  // (like the top row of the heatmap).
  s += in_grid ? "set view 55, 40, 0.95, 1.0\nset lmargin 6\nset rmargin 0\n" : "set view 55, 40, 0.95, 1.05\n";
  s += "set xyplane at " + num(zlo) + "\n";
  // Cell (i, j) is a bar at (j, i) standing from 0 to its value: the
  // weights are drawn as they are, one per (query, key), with nothing
  // interpolated between tokens. Bars 0.7 wide leave lanes between them
  // through which the lower bars behind a tall one stay in sight. Ticks sit
  // on the centres.
  s += fmt::format("set xrange [-0.75:{}]\nset yrange [{}:-0.75]\nset zrange [{}:{}]\n", cols - 0.25, rows - 0.25,
                   num(zlo), num(zhi));
  s += fmt::format("set cbrange [{}:{}]\n", num(zlo), num(zhi));
  s += ColourScale{&viridis(), zlo, zhi, false}.command();
  // depthorder base: bars are drawn from the farthest to the nearest by
  // where they stand, so a near bar hides a far one and never the reverse
  // (sorting their faces one by one, as for a surface, let the walls of tall
  // bars cut through the bars in front: gnuplot's manual, "set pm3d
  // depthorder"). A faint light tells a bar's walls from its top; the top
  // keeps the colour bar's colour. A white border separates neighbours.
  s += "set boxwidth 0.7 absolute\nset boxdepth 0.7\nset style fill solid 1.0 border lc rgb '#ffffff'\n";
  s += "set pm3d depthorder base\nset pm3d lighting primary 0.25 specular 0.0\n";
  s += "set grid z back lt 1 lw 1 lc rgb '#e0e0e0'\nset border 1+2+4+8+16 lw 1 lc rgb '#404040'\n";
  // Offsets push the key and query tic labels apart at the front corner.
  // Labels of more than 16 characters are shortened in the middle: the
  // axes' titles sit at a fixed distance, and a word of 64 letters ran over
  // them and the floor.
  auto shortened = [](const std::vector<std::string>& labels) {
    std::vector<std::string> out;
    for (const std::string& l : labels) out.push_back(shorten(l, 16));
    return out;
  };
  const std::vector<std::string> keys = shortened(sf.col_labels), queries = shortened(sf.row_labels);
  s += fmt::format("set xtics {} scale 0 font ',{}' offset -0.8,-0.6", tic_list(keys, cols, 24), pt - 1);
  s += in_grid || longest(keys) > 4 ? " rotate by 30 right\n" : " norotate\n";
  s += fmt::format("set ytics {} scale 0 font ',{}' offset 1.5,-0.3\n", tic_list(queries, rows, 24), pt - 1);
  s += fmt::format("set ztics scale 0.5 font ',{}'\nset format z '%g'\nset format cb '%g'\n", pt - 1);
  s += fmt::format("set xlabel {} font ',{}' offset 0,-1.5\n", gq(sf.xlabel), pt + 1);
  s += fmt::format("set ylabel {} font ',{}' offset 2,0\n", gq(sf.ylabel), pt + 1);
  s += fmt::format("set zlabel {} font ',{}' rotate parallel offset 1,0\n", gq(sf.zlabel), pt + 1);
  if (in_grid) {
    s += "unset colorbox\n";
  } else {
    s += fmt::format("set cblabel {} font ',{}' offset 1.5,0\n", gq(sf.zlabel), pt);
    s += "set colorbox vertical user origin 0.9,0.25 size 0.022,0.5\n";
  }
  s += "unset key\n";

  // One line "x y z" a cell: key j, query i, the weight. A cell without a
  // value (NaN) gets no bar; one of 0 a bar of no height, so the floor
  // shows through where the weights are 0.
  std::string data;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      const double z = double(sf.z(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)));
      if (std::isfinite(z)) data += fmt::format("{} {} {}\n", j, i, num(z));
    }
  const std::string block = fmt::format("$surface{}", id);
  datablock(s, block, data);
  // The fourth column colours each bar by its value.
  s += "splot " + block + " using 1:2:3:3 with boxes fc palette notitle\n";
}

}  // namespace

std::string surface(const std::string& png_path, const Surface& sf, int width, int height) {
  validate("surface", sf);
  check_size("surface", width, height);
  if (!available()) return skipped();
  const auto [mn, mx] = finite_range(sf.z);
  const auto [zlo, zhi] = z_range(mn, mx);
  std::string s;
  surface_panel(s, sf, 0, zlo, zhi, width, 11, false);
  return render("surface", png_path, width, height, s);
}

std::string surface_grid(const std::string& png_path, const std::string& title, int rows, int cols,
                         const std::vector<Surface>& panels, int panel_px) {
  check_grid("surface_grid", rows, cols, panels.size());
  for (std::size_t k = 0; k < panels.size(); ++k) validate("surface_grid", panels[k], fmt::format("panel {}: ", k));
  check_size("surface_grid", panel_px, panel_px);
  if (!available()) return skipped();

  // One z range for every panel, over the values of all of them: a panel
  // scaled to its own data would make a flat head look as tall as a peaked
  // one. (The range of all the values, not the union of each panel's own
  // range, which would pad a constant panel's empty range up by 1.)
  double mn = 0, mx = 0;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const auto [lo, hi] = finite_range(panels[k].z);
    mn = k == 0 ? lo : std::min(mn, lo);
    mx = k == 0 ? hi : std::max(mx, hi);
  }
  const auto [zlo, zhi] = z_range(mn, mx);
  // Smaller panels, smaller type, but never below 9 pt (as heatmap_grid).
  const double pt = std::clamp(panel_px / 40.0, 9.0, 11.0);
  const int panel_h = static_cast<int>(std::lround(0.9 * panel_px));  // a surface is a little wider than tall
  const int width = cols * panel_px;
  const PageTitle page = page_title(title, width, pt + 7, pt + 2, 50);
  const int height = rows * panel_h + page.px;
  const double top = 1.0 - static_cast<double>(page.px) / height;
  const double pw = 1.0 / cols, ph = top / rows;
  std::string body = page.command;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    body += panel_origin(k, cols, pw, ph, top);
    body += fmt::format("set size {:.5f},{:.5f}\n", pw, ph);
    surface_panel(body, panels[k], static_cast<int>(k), zlo, zhi, panel_px, pt, true);
  }
  return render("surface_grid", png_path, width, height, body);
}

}  // namespace sa::plot
