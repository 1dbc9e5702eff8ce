// Figures over gnuplot-iostream, written as PNG through pngcairo.
//
// Every function writes one PNG and returns only once gnuplot has closed the
// file. When gnuplot is not installed the functions do nothing and the first
// call prints one line saying that figures are skipped, so chapter programs
// still run.
//
// Layout is automatic: axis ranges get a little air beyond the data (log
// axes too, as a factor), the legend goes in a free corner of the plot or,
// when every corner is busy, under it, and a title too long for the figure
// is set smaller or broken into two lines.
//
// Debugging a figure: with the environment variable SA_PLOT_KEEP_SCRIPT set,
// the gnuplot script of each figure is kept next to it as <png>.gp.
#pragma once

#include "sa/tensor.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sa::plot {

// True when a gnuplot executable with the pngcairo terminal is on PATH.
bool available();

struct Heatmap {
  std::string title;
  Matrix values;                        // row i is drawn as the i-th row from the top
  std::vector<std::string> row_labels;  // y axis (queries), may be empty
  std::vector<std::string> col_labels;  // x axis (keys), may be empty
  std::string xlabel = "key";
  std::string ylabel = "query";
  std::string cblabel;                  // colour bar label
  std::optional<double> vmin, vmax;     // colour range; default: data range
  // Write values in the cells: default when the matrix is at most 12 x 12.
  // Only where they can be read: cells too small for them at 8.5 pt stay
  // blank even when asked for.
  std::optional<bool> annotate;
  int decimals = 2;
  bool diverging = false;               // blue-white-red palette centred on 0
  // Categories instead of a scale: each value is an index 0..n-1 into these
  // names, drawn in the category's colour, with a legend of the names in
  // place of the colour bar. For data such as "skipped / masked / computed",
  // whose numbers are labels that no gradient would read.
  std::vector<std::string> categories;
  std::vector<std::string> category_colours;  // "#rrggbb", one per category; default: the line colours
};

// An attention-weights panel, the book's most common figure: token labels on
// both axes (query rows, key columns), the colour range fixed to [0, 1]
// so panels side by side compare, and the colour bar titled "weight".
// Adjust the other fields as needed.
Heatmap weights_heatmap(std::string title, Matrix weights, const std::vector<std::string>& labels);

struct Series {
  std::string name;  // legend entry
  std::vector<double> x, y;
  enum class Style { Lines, Points, LinesPoints, Dashed } style = Style::LinesPoints;
};

// A horizontal reference line across the whole plot ("uniform 1/n",
// "log n", "theory: 1"), drawn dashed grey with its label at the right end
// (or, when data is in the way there, below the line or at the left end).
struct RefLine {
  double y = 0;
  std::string label;  // may be empty: the line alone
};

struct LinePlot {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  // A log axis's label gets " (log scale)" unless it says "log scale".
  bool logx = false, logy = false;
  // The y range drawn. Unset ends follow the data (and the hlines) with a
  // little air. Series points outside are clipped; hlines outside are not drawn.
  std::optional<double> ymin, ymax;
  std::vector<RefLine> hlines;
};

struct BarGroup {
  std::string name;            // legend entry (no legend when no group has a name)
  std::vector<double> values;  // one per category
};

struct BarChart {
  std::string title, ylabel;
  std::vector<std::string> categories;  // x axis
  std::vector<BarGroup> groups;         // drawn side by side per category
  std::vector<RefLine> hlines;          // labels go right of the last bars
};

struct Histogram {
  std::string title, xlabel, ylabel = "count";
  std::vector<Series> series;  // only name and x are used: the samples
  int bins = 60;
  // Each series in a panel of its own, side by side, with its own bins and
  // axes (the series' names become the panel titles). For samples of very
  // different spreads, which shared bins would squeeze into a spike.
  bool own_axes = false;
};

struct Surface {
  std::string title;
  Matrix z;
  std::vector<std::string> row_labels, col_labels;
  std::string xlabel = "key", ylabel = "query", zlabel = "weight";
};

// One attention head as a flow diagram: its queries in a column on the left,
// its keys in a column on the right, and a line from query i to key j for
// every weight of at least the figure's min_weight, the wider and darker
// the larger the weight. Weights must lie in [0, 1].
struct FlowPanel {
  std::string title;
  Matrix weights;                         // (queries, keys): row i holds query i's weights
  std::vector<std::string> query_labels;  // one per row (left column), may be empty
  std::vector<std::string> key_labels;    // one per column (right column), may be empty
};

// A block diagram: boxes on a grid of columns (left to right) and rows (top
// to bottom), each with a name and a few lines under it, and labelled
// arrows from box to box. The sizes follow the text: columns are as wide as
// their widest box, and the gaps between them grow until every arrow label
// fits on its arrow with some arrow showing at both ends, clear of the
// boxes, the other labels and the other arrows. The figure's size follows.
struct DiagramBox {
  std::string name;                // the first line, in bold: "x = e + PE[5]"
  std::vector<std::string> lines;  // under the name, smaller: "(1, 64)"
  int column = 0, row = 0;         // one box per cell
  std::size_t colour = 0;          // fill and border: colour i of the line colour cycle
};

struct DiagramArrow {
  std::size_t from = 0, to = 0;  // indices into the boxes
  std::string label;             // on the arrow (the operation); '\n' breaks lines; may be empty
};

struct Diagram {
  std::string title;
  std::vector<DiagramBox> boxes;
  std::vector<DiagramArrow> arrows;
  // Entry i, when given, says what box colour i means (a band at the bottom).
  std::vector<std::string> legend;
};

// Each returns the path written (empty when figures are skipped) and throws
// std::runtime_error with one line if gnuplot fails.
//
// Heatmaps have square cells, and their margins are sized from the labels
// they hold: key labels too long to stand upright under their cell are
// turned by 45 degrees (90 when the cells are narrow), and labels too
// close together are thinned to every k-th (numbers in round steps).
//
// A heatmap fills a canvas of width x height with the largest cells that
// fit; labels so long that the plot would shrink below 160 px make the
// canvas larger.
std::string heatmap(const std::string& png_path, const Heatmap& h, int width = 800, int height = 700);
// A rows x cols grid of heatmaps (for example layers x heads), one title.
// panel_px sets the cell size: the largest matrix's cells take about
// panel_px - 160 px (a panel of panel_px with short labels), but rows are
// kept a line of text high and columns of words wide enough for slanted
// labels while that at most doubles it. Panels with long labels make the
// figure larger rather than their cells smaller. Panels on one colour
// scale (same range and colour-bar title) share one colour bar, right of
// the grid.
std::string heatmap_grid(const std::string& png_path, const std::string& title, int rows, int cols,
                         const std::vector<Heatmap>& panels, int panel_px = 420);
std::string lines(const std::string& png_path, const LinePlot& p, int width = 900, int height = 600);
// Values are written on the bars in one number of decimals, as large as
// the bars are wide; too narrow for 8.5 pt, they get fewer decimals (down to
// 2), then none. A value that a reference line would run through is
// written just beyond the line instead.
std::string bars(const std::string& png_path, const BarChart& c, int width = 900, int height = 600);
// Bar charts side by side under one title, each on its own y axis and
// headed by its own title: for measures in different units (a head's
// entropy in nats and its largest weight), which one axis would squeeze.
std::string bars_row(const std::string& png_path, const std::string& title, const std::vector<BarChart>& charts,
                     int panel_width = 520, int height = 600);
std::string histogram(const std::string& png_path, const Histogram& h, int width = 900, int height = 600);
std::string surface(const std::string& png_path, const Surface& s, int width = 900, int height = 700);
// A block diagram, its size following the text. Refuses
// (std::invalid_argument) an arrow to a box that does not exist or from a
// box to itself, two boxes in one cell, and an arrow that would pass through
// a third box: the grid must leave every arrow a clear path.
std::string diagram(const std::string& png_path, const Diagram& d);
// A rows x cols grid of surfaces (for example untrained and trained x
// heads), one title. Every panel is drawn over the same z range, from the
// lowest floor (0 unless a value is negative) to the highest value of any
// panel, so heights compare across panels; the panels have no colour bar of
// their own (their z axes give the values). panel_px is a panel's width,
// its height is 0.9 of it.
std::string surface_grid(const std::string& png_path, const std::string& title, int rows, int cols,
                         const std::vector<Surface>& panels, int panel_px = 420);
// A rows x cols grid of flow diagrams, one title. Lines for weights below
// min_weight are left out (a near-uniform head would otherwise be a grey
// mesh); panel_px is the width of a panel, its height follows the tokens.
std::string flow(const std::string& png_path, const std::string& title, int rows, int cols,
                 const std::vector<FlowPanel>& panels, double min_weight = 0.05, int panel_px = 320);

}  // namespace sa::plot
