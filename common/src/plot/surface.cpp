// Surfaces (sa::plot::surface): a matrix as flat blocks in 3-D, one per
// cell at its value, so attention weights stand as they are.

#include "detail.hpp"

#include <fmt/format.h>

namespace sa::plot {

using namespace detail;

std::string surface(const std::string& png_path, const Surface& sf, int width, int height) {
  const auto rows = static_cast<std::size_t>(sf.z.rows()), cols = static_cast<std::size_t>(sf.z.cols());
  if (rows == 0 || cols == 0) bad_input("surface", "empty matrix");
  if (rows < 2 || cols < 2) {
    bad_input("surface", fmt::format("a {} x {} matrix has no surface (need 2 x 2)", rows, cols));
  }
  if (!sf.row_labels.empty() && sf.row_labels.size() != rows) {
    bad_input("surface", fmt::format("{} row labels for a {} x {} matrix", sf.row_labels.size(), rows, cols));
  }
  if (!sf.col_labels.empty() && sf.col_labels.size() != cols) {
    bad_input("surface", fmt::format("{} column labels for a {} x {} matrix", sf.col_labels.size(), rows, cols));
  }
  check_size("surface", width, height);
  if (!available()) return skipped();

  auto [mn, mx] = finite_range(sf.z);
  if (mn == mx) mx = mn + 1;
  const double zlo = mn >= 0 ? 0.0 : mn;  // weights stand on the floor at 0

  std::string s;
  s += title_command(sf.title, width - 60.0, 15, 11);
  // Looking down 55 degrees, turned 40 degrees: keys run along the front
  // left edge, the query axis goes into the picture with row 0 at the back
  // (like the top row of the heatmap).
  s += "set view 55, 40, 0.95, 1.05\n";
  s += "set xyplane at " + num(zlo) + "\n";
  // Cell (i, j) is a flat block over [j - 0.5, j + 0.5] x [i - 0.5, i + 0.5]
  // at its value: the weights are drawn as they are, one per (query, key),
  // with nothing interpolated between tokens. Ticks sit on the centres.
  // (The ranges include the ring of floor around the blocks.)
  s += fmt::format("set xrange [-1.5:{}]\nset yrange [{}:-1.5]\nset zrange [{}:{}]\n", cols + 0.5, rows + 0.5,
                   num(zlo), num(mx));
  s += fmt::format("set cbrange [{}:{}]\n", num(zlo), num(mx));
  s += ColourScale{&viridis(), zlo, mx, false}.command();
  // depthorder: draw far quadrangles first, so near blocks hide far ones.
  // A thin border separates the blocks; corners2color max gives a block's
  // top and its walls the block's own colour.
  s += "set pm3d depthorder border lw 0.5 lc rgb '#ffffff'\nset pm3d corners2color max\n";
  s += "set grid z back lt 1 lw 1 lc rgb '#e0e0e0'\nset border 1+2+4+8+16 lw 1 lc rgb '#404040'\n";
  // Offsets push the key and query tic labels apart at the front corner.
  s += fmt::format("set xtics {} scale 0 font ',10' offset -0.8,-0.6", tic_list(sf.col_labels, cols, 24));
  s += longest(sf.col_labels) > 4 ? " rotate by 30 right\n" : "\n";
  s += fmt::format("set ytics {} scale 0 font ',10' offset 1.5,-0.3\n", tic_list(sf.row_labels, rows, 24));
  s += "set ztics scale 0.5 font ',10'\nset format z '%g'\nset format cb '%g'\n";
  s += "set xlabel " + gq(sf.xlabel) + " font ',12' offset 0,-1.5\n";
  s += "set ylabel " + gq(sf.ylabel) + " font ',12' offset 2,0\n";
  s += "set zlabel " + gq(sf.zlabel) + " font ',12' rotate parallel offset 1,0\n";
  s += "set cblabel " + gq(sf.zlabel) + " font ',11' offset 1.5,0\n";
  s += "set colorbox vertical user origin 0.9,0.25 size 0.022,0.5\n";
  s += "unset key\n";

  // Scan lines "x y z", one blank line between them: the grid pm3d needs.
  // Each row of cells is two scan lines (its front and back edge), each cell
  // two points (its left and right edge), all at the cell's value; where two
  // neighbours meet, the repeated x or y makes the wall between them.
  std::string data;
  const double floor_z = zlo;
  for (std::size_t i = 0; i <= rows + 1; ++i) {
    // Row -1 and row `rows` are the floor around the blocks, so the outer
    // walls reach down to it.
    for (const double y : {static_cast<double>(i) - 1.5, static_cast<double>(i) - 0.5}) {
      for (std::size_t j = 0; j <= cols + 1; ++j) {
        const bool floor = i == 0 || i == rows + 1 || j == 0 || j == cols + 1;
        const double z =
            floor ? floor_z : double(sf.z(static_cast<Eigen::Index>(i - 1), static_cast<Eigen::Index>(j - 1)));
        const double x0 = static_cast<double>(j) - 1.5, x1 = static_cast<double>(j) - 0.5;
        data += fmt::format("{} {} {}\n{} {} {}\n", num(x0), num(y), num(z), num(x1), num(y), num(z));
      }
      data += "\n";
    }
  }
  datablock(s, "$surface", data);
  s += "splot $surface using 1:2:3 with pm3d notitle\n";
  return render("surface", png_path, width, height, s);
}

}  // namespace sa::plot
