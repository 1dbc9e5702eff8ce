// Every kind of figure draws a complete PNG (when gnuplot is installed), and
// bad input is refused before gnuplot is started. Whether a figure *looks*
// right is judged by opening it; this checks that it exists and is whole.
#include "sa/plot.hpp"
#include "support/scratch.hpp"

#include "support/catch2_compat.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace sa;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTokens = {"the", "cat", "sat", "on", "the", "mat"};

fs::path scratch_dir() { return sa::test::scratch_dir("sa_test_plot"); }

// A PNG starts with its 8-byte signature and ends with the IEND chunk: a file
// gnuplot had not finished writing fails the second check.
bool is_complete_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string signature = "\x89PNG\r\n\x1a\n";
  return bytes.size() > 100 && bytes.compare(0, 8, signature) == 0 &&
         bytes.find("IEND", bytes.size() - 12) != std::string::npos;
}

// x fanning out into q, k and v, which meet again in the output: the shape
// of chapter 1's flow figure, small.
plot::Diagram fan_diagram() {
  plot::Diagram d;
  d.title = "x into q, k and v";
  d.boxes = {{"x", {"(1, 64)"}, 0, 1, 0},         {"q", {"(1, 32)"}, 1, 0, 0}, {"k", {"(1, 32)"}, 1, 1, 0},
             {"v", {"(1, 32)"}, 1, 2, 0},         {"output", {"(1, 32)", "later"}, 2, 1, 1}};
  d.arrows = {{0, 1, "× W_q + b_q\nW_q (64, 32)"}, {0, 2, "× W_k"}, {0, 3, "× W_v"}, {1, 4, ""}, {2, 4, "K"},
              {3, 4, "V"}};
  d.legend = {"this chapter", "later chapters"};
  return d;
}

Matrix causal_weights() {
  Matrix w = Matrix::Zero(6, 6);
  for (int i = 0; i < 6; ++i) w.row(i).head(i + 1).setConstant(1.0f / float(i + 1));
  return w;
}

// Draws through `draw`; with gnuplot the PNG must be complete, without it
// the function must return "" and write nothing.
template <typename Draw>
void require_drawn(const std::string& name, Draw draw) {
  const std::string path = (scratch_dir() / name).string();
  fs::remove(path);
  const std::string written = draw(path);
  if (plot::available()) {
    REQUIRE(written == path);
    CHECK(is_complete_png(path));
  } else {
    CHECK(written.empty());
    CHECK_FALSE(fs::exists(path));
  }
}

}  // namespace

TEST_CASE("plot: every kind of figure draws a complete PNG", "[common][plot]") {
  plot::Heatmap h;
  h.title = "causal weights";
  h.values = causal_weights();
  h.row_labels = h.col_labels = kTokens;
  require_drawn("heatmap.png", [&](const std::string& p) { return plot::heatmap(p, h); });

  plot::Heatmap masked = h;  // -inf cells, as masked scores have
  for (int i = 0; i < 6; ++i)
    for (int j = i + 1; j < 6; ++j) masked.values(i, j) = -std::numeric_limits<float>::infinity();
  masked.diverging = true;
  require_drawn("masked.png", [&](const std::string& p) { return plot::heatmap(p, masked); });

  require_drawn("grid.png", [&](const std::string& p) { return plot::heatmap_grid(p, "grid", 1, 2, {h, masked}); });

  plot::Heatmap kinds;  // categories: a legend of names instead of a colour bar
  kinds.title = "causal tiles";
  kinds.values = Matrix::Zero(3, 3);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j <= i; ++j) kinds.values(i, j) = j < i ? 2.0f : 1.0f;
  kinds.categories = {"skipped", "masked", "computed"};
  require_drawn("categories.png", [&](const std::string& p) { return plot::heatmap(p, kinds); });
  kinds.category_colours = {"#f2f2f2", "#9ecae1", "#2171b5"};
  require_drawn("categories_coloured.png", [&](const std::string& p) { return plot::heatmap(p, kinds); });

  plot::LinePlot lp;
  lp.title = "variance";
  lp.logx = lp.logy = true;
  plot::Series s{"measured", {4, 8, 16, 32}, {4.1, 7.9, 16.2, 31.8}};
  lp.series = {s};
  lp.hlines = {{1.0, "theory: 1"}};
  require_drawn("lines.png", [&](const std::string& p) { return plot::lines(p, lp); });

  plot::BarChart bc;
  bc.title = "entropy";
  bc.categories = {"head 0", "head 1"};
  bc.groups = {{"untrained", {1.7, 1.8}}, {"trained", {0.6, 1.1}}};
  require_drawn("bars.png", [&](const std::string& p) { return plot::bars(p, bc); });
  plot::BarChart focus;  // one unnamed group: no legend
  focus.title = "focus";
  focus.categories = bc.categories;
  focus.groups = {{"", {0.3, 0.5}}};
  focus.hlines = {{0.25, ""}};
  require_drawn("bars_row.png", [&](const std::string& p) { return plot::bars_row(p, "two measures", {bc, focus}); });

  plot::Histogram hist;
  hist.title = "scores";
  hist.series = {{"raw", {-2, -1, 0, 0, 1, 2, 3}, {}}};
  require_drawn("hist.png", [&](const std::string& p) { return plot::histogram(p, hist); });

  plot::Surface surf;
  surf.title = "surface";
  surf.z = causal_weights();
  surf.row_labels = surf.col_labels = kTokens;
  require_drawn("surface.png", [&](const std::string& p) { return plot::surface(p, surf); });

  plot::Surface flat = surf;  // uniform over every key: 1/6 everywhere
  flat.z = Matrix::Constant(6, 6, 1.0f / 6.0f);
  require_drawn("surface_grid.png",
                [&](const std::string& p) { return plot::surface_grid(p, "surfaces", 1, 2, {flat, surf}, 300); });

  plot::FlowPanel fp{"head 1", causal_weights(), kTokens, kTokens};
  require_drawn("flow.png", [&](const std::string& p) { return plot::flow(p, "flow", 1, 1, {fp}); });

  require_drawn("diagram.png", [&](const std::string& p) { return plot::diagram(p, fan_diagram()); });
}

TEST_CASE("plot: a diagram's script holds every box, arrow and label, all on the canvas", "[common][plot]") {
  if (!plot::available()) return;
  const std::string path = (scratch_dir() / "diagram_script.png").string();
  ::setenv("SA_PLOT_KEEP_SCRIPT", "1", 1);
  const plot::Diagram d = fan_diagram();
  const std::string written = plot::diagram(path, d);
  ::unsetenv("SA_PLOT_KEEP_SCRIPT");
  REQUIRE(written == path);
  std::ifstream in(path + ".gp");
  std::string script, line;
  int rects = 0, arrows = 0;
  double width = 0, height = 0;
  std::vector<std::pair<double, double>> placed;  // every label, arrow end and rectangle corner
  while (std::getline(in, line)) {
    script += line + "\n";
    double a, b, c, e;
    if (std::sscanf(line.c_str(), "set xrange [0:%lf]", &a) == 1) width = a;
    if (std::sscanf(line.c_str(), "set yrange [0:%lf]", &a) == 1) height = a;
    const auto at = line.find(" at "), from = line.find(" from ");
    if (line.rfind("set label", 0) == 0 && at != std::string::npos &&
        std::sscanf(line.c_str() + at, " at %lf,%lf", &a, &b) == 2)
      placed.emplace_back(a, b);
    if (from != std::string::npos &&
        std::sscanf(line.c_str() + from, " from %lf,%lf to %lf,%lf", &a, &b, &c, &e) == 4) {
      placed.emplace_back(a, b);
      placed.emplace_back(c, e);
      (line.rfind("set arrow", 0) == 0 ? arrows : rects) += 1;
    }
  }
  // Each box and legend entry is a rectangle; each arrow one `set arrow`.
  CHECK(rects == int(d.boxes.size() + d.legend.size()));
  CHECK(arrows == int(d.arrows.size()));
  for (const auto& b : d.boxes) {
    CHECK(script.find("'" + b.name + "'") != std::string::npos);
    for (const auto& l : b.lines) CHECK(script.find("'" + l + "'") != std::string::npos);
  }
  CHECK(script.find("'× W_q + b_q'") != std::string::npos);  // a two-line label, one label per line
  CHECK(script.find("'W_q (64, 32)'") != std::string::npos);
  CHECK(script.find("'this chapter'") != std::string::npos);
  REQUIRE(width > 0);
  REQUIRE(height > 0);
  for (auto [x, y] : placed) {
    CHECK(x >= 0);
    CHECK(x <= width);
    CHECK(y >= 0);
    CHECK(y <= height);
  }
}

// Heights compare across a surface grid's panels only if every panel is
// drawn over the same z range: the script (kept with SA_PLOT_KEEP_SCRIPT)
// must give the flat panel the causal panel's range, [0, 1], not its own.
TEST_CASE("plot: surface_grid draws every panel over one z range", "[common][plot]") {
  if (!plot::available()) return;  // no gnuplot, no script
  plot::Surface flat, peaked;
  flat.z = Matrix::Constant(6, 6, 1.0f / 6.0f);
  peaked.z = causal_weights();
  const std::string path = (scratch_dir() / "one_range.png").string();
  ::setenv("SA_PLOT_KEEP_SCRIPT", "1", 1);
  const std::string written = plot::surface_grid(path, "one range", 1, 2, {flat, peaked}, 300);
  ::unsetenv("SA_PLOT_KEEP_SCRIPT");
  REQUIRE(written == path);
  std::ifstream in(path + ".gp");
  const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto count = [&](const std::string& what) {
    int n = 0;
    for (auto at = script.find(what); at != std::string::npos; at = script.find(what, at + 1)) ++n;
    return n;
  };
  const bool one_range = count("set zrange [0:1]\n") == 2;
  CHECK(one_range);
  CHECK(count("set zrange") == 2);
  if (one_range) fs::remove(path + ".gp");  // else kept, to read
}

// The gnuplot script of a figure drawn by `draw` into `name` (kept with
// SA_PLOT_KEEP_SCRIPT), for what a test cannot see in the PNG.
template <typename Draw>
std::string script_of(const std::string& name, Draw draw) {
  const std::string path = (scratch_dir() / name).string();
  ::setenv("SA_PLOT_KEEP_SCRIPT", "1", 1);
  const std::string written = draw(path);
  ::unsetenv("SA_PLOT_KEEP_SCRIPT");
  REQUIRE(written == path);
  std::ifstream in(path + ".gp");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// gnuplot draws no line through a single point, though the legend names
// it: a theory line at one d_k, a curve of one checkpoint.
TEST_CASE("plot: a line of one point is drawn as a marked point", "[common][plot]") {
  if (!plot::available()) return;  // no gnuplot, no script
  plot::LinePlot lp;
  lp.series = {{"theory: d_k", {4}, {4}, plot::Series::Style::Lines},
               {"theory: 1", {4}, {1}, plot::Series::Style::Dashed},
               {"measured", {4, 8}, {4.2, 7.9}, plot::Series::Style::Lines}};
  const std::string script = script_of("one_point.png", [&](const std::string& p) { return plot::lines(p, lp); });
  CHECK(script.find("$series0 using 1:2 with linespoints") != std::string::npos);
  CHECK(script.find("$series1 using 1:2 with linespoints lw 2.2 pt 7 ps 1.0 dt (9,6)") != std::string::npos);
  CHECK(script.find("$series2 using 1:2 with lines lw 2.2 ") != std::string::npos);  // two points: a line
}

// Two epochs drew tics at 1.2, 1.4, ..., 1.8: x values no point can have.
TEST_CASE("plot: x values that are whole numbers over a short range get whole tics", "[common][plot]") {
  if (!plot::available()) return;
  plot::LinePlot lp;
  lp.series = {{"accuracy", {1, 2}, {30, 45}}};
  CHECK(script_of("epochs.png", [&](const std::string& p) { return plot::lines(p, lp); }).find("set xtics 1\n") !=
        std::string::npos);
  lp.series = {{"accuracy", {0.5, 1, 1.5}, {30, 45, 50}}};  // halves: gnuplot's own tics
  CHECK(script_of("halves.png", [&](const std::string& p) { return plot::lines(p, lp); }).find("set xtics 1\n") ==
        std::string::npos);
  lp.series = {{"loss", {0, 200, 400}, {4, 3, 2}}};  // a long range: gnuplot's whole steps already
  CHECK(script_of("long.png", [&](const std::string& p) { return plot::lines(p, lp); }).find("set xtics 1\n") ==
        std::string::npos);
}

// A title's width was estimated at 0.52 em a character, which a word of
// x's (0.59 em each) passes: such a title ran past the canvas edge.
TEST_CASE("plot: a title of wide letters is set small enough to fit", "[common][plot]") {
  if (!plot::available()) return;
  const std::string word(75, 'x');
  plot::LinePlot lp;
  lp.title = word + " " + word;  // two lines of 75 x's
  lp.series = {{"", {0, 1}, {0, 1}, plot::Series::Style::Lines}};
  const std::string script = script_of("wide_title.png", [&](const std::string& p) { return plot::lines(p, lp, 900); });
  const auto at = script.find("set title '" + word);
  REQUIRE(at != std::string::npos);
  const auto font = script.find("font ',", at);
  REQUIRE(font != std::string::npos);
  const double pt = std::stod(script.substr(font + 7));
  // DejaVu Sans's x is 0.592 em; lines() gives the title the width less
  // 90 px, and writes its size to 3 digits (13.68 as 13.7).
  CHECK(75 * 0.592 * pt * 96 / 72 <= (900 - 90) * 1.01);
}

// A category of 64 letters, turned, took half the canvas; 64 categories'
// labels, turned, ran into each other.
TEST_CASE("plot: a bar chart shortens long category labels and thins crowded ones", "[common][plot]") {
  if (!plot::available()) return;
  const std::string word(64, 'a');
  plot::BarChart c;
  c.categories = {word + " (0)", "cat (1)"};
  c.groups = {{"", {1.0, 0.5}}};
  std::string script = script_of("long_category.png", [&](const std::string& p) { return plot::bars(p, c); });
  CHECK(script.find(word) == std::string::npos);
  CHECK(script.find("'aaaaaaaaaaa…aaaaaaaa (0)' 0") != std::string::npos);  // 24 characters, the index kept
  CHECK(script.find("'cat (1)' 1") != std::string::npos);

  c.categories.clear();
  c.groups = {{"", {}}};
  for (int i = 0; i < 64; ++i) {
    c.categories.push_back("w" + std::to_string(i) + " (" + std::to_string(i) + ")");
    c.groups[0].values.push_back(4.0);
  }
  script = script_of("crowded_categories.png", [&](const std::string& p) { return plot::bars(p, c); });
  CHECK(script.find("'w0 (0)' 0") != std::string::npos);
  CHECK(script.find("'w1 (1)' 1") == std::string::npos);  // turned labels every few bars
  CHECK(script.find("'w2 (2)' 2") == std::string::npos);
}

// Words of 64 letters pushed a flow diagram's columns together and ran
// over the next panel, and over a surface's axis titles.
TEST_CASE("plot: flow diagrams and surfaces shorten long token labels", "[common][plot]") {
  if (!plot::available()) return;
  const std::string word(64, 'x');
  const std::vector<std::string> tokens{"the", word, "cat"};
  const Matrix w = Matrix::Constant(3, 3, 1.0f / 3.0f);
  plot::FlowPanel fp{"head 0", w, tokens, tokens};
  std::string script = script_of("long_flow.png", [&](const std::string& p) {
    return plot::flow(p, "flow", 1, 2, {fp, fp}, 0.05, 300);
  });
  CHECK(script.find(word) == std::string::npos);
  CHECK(script.find("xxxx…xxxxx") != std::string::npos);
  CHECK(script.find("'the'") != std::string::npos);
  plot::Surface sf;
  sf.z = w;
  sf.row_labels = sf.col_labels = tokens;
  script = script_of("long_surface.png", [&](const std::string& p) { return plot::surface(p, sf); });
  CHECK(script.find(word) == std::string::npos);
  CHECK(script.find("'xxxxxxx…xxxxxxxx' 1") != std::string::npos);
}

// A linear axis over a range far narrower than its values (chapter 9's loss
// after one iteration, 4.14314 to 4.14318) needs more than gnuplot's 6
// significant digits, or several tics read the same label; a usual range
// keeps gnuplot's labels.
TEST_CASE("plot: a narrow linear y range gets tic labels with enough digits to differ", "[common][plot]") {
  if (!plot::available()) return;  // no gnuplot, no script
  const auto line_script = [](const std::string& name, std::vector<double> y) {
    plot::LinePlot p;
    p.series = {{"loss", {0, 1}, std::move(y)}};
    const std::string path = (scratch_dir() / name).string();
    ::setenv("SA_PLOT_KEEP_SCRIPT", "1", 1);
    const std::string written = plot::lines(path, p);
    ::unsetenv("SA_PLOT_KEEP_SCRIPT");
    REQUIRE(written == path);
    std::ifstream in(path + ".gp");
    const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(path + ".gp");
    return script;
  };
  CHECK(line_script("narrow_y.png", {4.143135, 4.143178}).find("set format y '%.7g'") != std::string::npos);
  CHECK(line_script("usual_y.png", {1.4, 4.2}).find("set format y") == std::string::npos);
}

// Width and height of a PNG, from its IHDR chunk (bytes 16 to 23, big-endian).
std::pair<int, int> png_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char b[24] = {};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  const auto be = [&](int at) { return (b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]; };
  return {be(16), be(20)};
}

// Square cells left a matrix far from square as a thin strip in the middle
// of an empty canvas (chapter 1's positional encoding at d_model 2 or 1024):
// the side it fills less than half of shrinks to it; a matrix that fills
// the canvas keeps the size asked for.
TEST_CASE("plot: a heatmap far from square gets a canvas its shape, others the size asked for", "[common][plot]") {
  if (!plot::available()) return;
  const auto drawn = [&](const std::string& name, Matrix m) {
    plot::Heatmap h;
    h.title = "a title of some length, as the chapters write them";
    h.values = std::move(m);
    const std::string path = (scratch_dir() / name).string();
    REQUIRE(plot::heatmap(path, h, 900, 750) == path);
    return png_size(path);
  };
  const auto [column_w, column_h] = drawn("column.png", Matrix::Ones(64, 2));
  CHECK(column_w <= 450);
  CHECK(column_h == 750);
  const auto [band_w, band_h] = drawn("band.png", Matrix::Ones(4, 256));
  CHECK(band_w == 900);
  CHECK(band_h < 375);
  const auto [square_w, square_h] = drawn("square.png", Matrix::Ones(6, 6));
  CHECK(square_w == 900);
  CHECK(square_h == 750);
}

TEST_CASE("plot: bad input is refused with std::invalid_argument", "[common][plot]") {
  const std::string path = (scratch_dir() / "refused.png").string();
  plot::Heatmap empty;
  CHECK_THROWS_AS(plot::heatmap(path, empty), std::invalid_argument);
  plot::Heatmap wrong_labels;
  wrong_labels.values = Matrix::Ones(3, 3);
  wrong_labels.row_labels = {"a", "b"};
  CHECK_THROWS_AS(plot::heatmap(path, wrong_labels), std::invalid_argument);
  plot::Heatmap ok;
  ok.values = Matrix::Ones(2, 2);
  CHECK_THROWS_AS(plot::heatmap_grid(path, "t", 2, 2, {ok}), std::invalid_argument);
  CHECK_THROWS_AS(plot::bars_row(path, "t", {}), std::invalid_argument);
  plot::BarChart short_group;
  short_group.categories = {"a", "b"};
  short_group.groups = {{"g", {1.0}}};
  CHECK_THROWS_AS(plot::bars_row(path, "t", {short_group}), std::invalid_argument);
  plot::Heatmap categories = ok;  // values 1: index 1 of two names
  categories.categories = {"no", "yes"};
  categories.values(0, 0) = 2.0f;  // no third category
  CHECK_THROWS_AS(plot::heatmap(path, categories), std::invalid_argument);
  categories.values(0, 0) = 0.5f;  // not an index
  CHECK_THROWS_AS(plot::heatmap(path, categories), std::invalid_argument);
  categories.values(0, 0) = 0.0f;
  categories.category_colours = {"#ffffff"};  // one colour for two categories
  CHECK_THROWS_AS(plot::heatmap(path, categories), std::invalid_argument);
  categories.category_colours = {"#ffffff", "blue"};  // not #rrggbb
  CHECK_THROWS_AS(plot::heatmap(path, categories), std::invalid_argument);
  plot::LinePlot uneven;
  uneven.series = {{"s", {1, 2, 3}, {1, 2}}};
  CHECK_THROWS_AS(plot::lines(path, uneven), std::invalid_argument);
  plot::LinePlot log_of_zero;
  log_of_zero.logy = true;
  log_of_zero.series = {{"s", {1, 2}, {0, 1}}};
  CHECK_THROWS_AS(plot::lines(path, log_of_zero), std::invalid_argument);
  plot::FlowPanel above_one{"w > 1", Matrix::Constant(2, 2, 2.0f), {}, {}};
  CHECK_THROWS_AS(plot::flow(path, "t", 1, 1, {above_one}), std::invalid_argument);
  CHECK_THROWS_AS(plot::flow(path, "t", 1, 2, {above_one}), std::invalid_argument);
  plot::Diagram to_nowhere = fan_diagram();
  to_nowhere.arrows.push_back({0, 5, "no box 5"});
  CHECK_THROWS_AS(plot::diagram(path, to_nowhere), std::invalid_argument);
  plot::Diagram to_itself = fan_diagram();
  to_itself.arrows.push_back({2, 2, "loop"});
  CHECK_THROWS_AS(plot::diagram(path, to_itself), std::invalid_argument);
  plot::Diagram shared_cell = fan_diagram();
  shared_cell.boxes.push_back({"k again", {}, 1, 1, 0});
  CHECK_THROWS_AS(plot::diagram(path, shared_cell), std::invalid_argument);
  plot::Diagram through_k = fan_diagram();  // x -> output runs straight through k
  through_k.arrows.push_back({0, 4, "skip"});
  CHECK_THROWS_AS(plot::diagram(path, through_k), std::invalid_argument);
  CHECK_THROWS_AS(plot::diagram(path, plot::Diagram{}), std::invalid_argument);
  plot::Surface surf;
  surf.z = Matrix::Ones(3, 3);
  CHECK_THROWS_AS(plot::surface_grid(path, "t", 1, 2, {surf}), std::invalid_argument);
  plot::Surface thin;
  thin.z = Matrix::Ones(1, 3);  // a 1 x 3 matrix has no surface
  CHECK_THROWS_AS(plot::surface_grid(path, "t", 1, 2, {surf, thin}), std::invalid_argument);
  CHECK_FALSE(fs::exists(path));
}

namespace {
// The files of `dir` whose name marks a figure's temporary (".NAME.tmp-...").
int temporaries_in(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().filename().string().find(".tmp-") != std::string::npos;
  return n;
}
}  // namespace

TEST_CASE("plot: a figure is written under a temporary name and renamed once complete", "[common][plot]") {
  if (!plot::available()) return;  // nothing is drawn without gnuplot
  const fs::path dir = scratch_dir() / "rename";
  fs::remove_all(dir);
  const std::string path = (dir / "w.png").string();
  REQUIRE(plot::heatmap(path, plot::weights_heatmap("w", causal_weights(), kTokens)) == path);
  CHECK(is_complete_png(path));
  CHECK(temporaries_in(dir) == 0);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
}

// A gnuplot that stops at an error while the script is still being written
// (here cairo refuses the canvas that a label of 100,000 characters asks
// for, at `set multiplot`, the fourth line, with every panel still to come):
// the write's SIGPIPE ended the program, status 141 and no message, its
// unfinished figure left behind. Now the figure fails with gnuplot's error,
// and leaves nothing.
TEST_CASE("plot: a gnuplot that stops before the end of its script is an error, not a SIGPIPE", "[common][plot]") {
  if (!plot::available()) return;
  const fs::path dir = scratch_dir() / "sigpipe";
  fs::remove_all(dir);
  std::vector<std::string> labels = kTokens;
  labels[0] = std::string(100000, 'w');
  const plot::Heatmap hm = plot::weights_heatmap("long", causal_weights(), labels);
  CHECK_THROWS_WITH(plot::heatmap_grid((dir / "long.png").string(), "long", 1, 2, {hm, hm}),
                    sa::test::ContainsText("gnuplot failed drawing"));
  CHECK(temporaries_in(dir) == 0);
}

// Ctrl-C while gnuplot draws (here sent by a thread once the unfinished
// figure is there) ends the program as Ctrl-C does, and leaves neither that
// figure nor gnuplot's log in the temporary folder (both stayed for good).
//
// A terminal sends Ctrl-C to the whole foreground process group: the
// program, the shell popen starts and gnuplot. The child below makes a group
// of its own and signals all of it, and the test waits for every process of
// the group before it looks at the folder (it is their subreaper, so the
// orphaned shell and gnuplot are its children to wait for, not init's).
// Without that wait the check raced gnuplot, which notes Ctrl-C and reads
// on: it created the figure by its name after the handler had removed it
// (57 failures in 200 runs on a loaded machine), until gnuplot was given
// files the program had created instead of names.
TEST_CASE("plot: Ctrl-C while a figure is drawn leaves neither the figure's temporary file nor gnuplot's log",
          "[common][plot]") {
  if (!plot::available()) return;
  const fs::path dir = scratch_dir() / "interrupted";
  fs::remove_all(dir);
  fs::create_directories(dir);
  int was_subreaper = 0;
  ::prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
  REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);               // the group Ctrl-C reaches: this process, its shell and gnuplot
    std::signal(SIGINT, SIG_DFL);  // a program's own disposition, not the suite's handler
    std::thread interrupt([&] {
      for (int i = 0; i < 20000 && temporaries_in(dir) == 0; ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
      ::kill(0, SIGINT);
    });
    Matrix big = Matrix::Constant(64, 64, 0.5f);
    std::vector<plot::Heatmap> panels(16, plot::weights_heatmap("w", big, std::vector<std::string>(64, "w")));
    plot::heatmap_grid((dir / "grid.png").string(), "grid", 4, 4, panels);
    interrupt.join();
    ::_exit(0);
  }
  REQUIRE(child > 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  while (::waitpid(-child, nullptr, 0) > 0) {
  }  // the shell and gnuplot, orphaned to this process
  ::prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT));
  std::string left;  // named in the failure: the figure, or gnuplot's log (.grid.png.tmp-PID-N.log)
  for (const auto& entry : fs::directory_iterator(dir)) left += " " + entry.path().filename().string();
  INFO("left in the folder:" << left);
  CHECK(temporaries_in(dir) == 0);
  CHECK(fs::is_empty(dir));
}

// gnuplot's log is kept beside the figure, not in the system's temporary
// folder: a TMPDIR naming no folder ended a chapter after its work
// ("temp_directory_path: No such file or directory", status 1).
TEST_CASE("plot: a figure is drawn whatever TMPDIR names", "[common][plot]") {
  if (!plot::available()) return;
  const fs::path dir = scratch_dir() / "tmpdir";
  fs::remove_all(dir);
  const char* was = std::getenv("TMPDIR");
  const std::string kept = was ? was : "";
  ::setenv("TMPDIR", (dir / "no such folder").string().c_str(), 1);
  const std::string path = (dir / "line.png").string();
  plot::LinePlot lp;
  lp.title = "one line";
  lp.series = {{"y", {0, 1, 2}, {1, 2, 3}}};
  std::string drawn = "threw";
  CHECK_NOTHROW(drawn = plot::lines(path, lp));
  CHECK(drawn == path);
  was ? ::setenv("TMPDIR", kept.c_str(), 1) : ::unsetenv("TMPDIR");
  CHECK(is_complete_png(path));
  CHECK(temporaries_in(dir) == 0);
}

// Hidden from the normal run ([.]): it needs a small disk of its own, which
// tests/inputs/full_disk.sh mounts (a tmpfs in a user namespace) and names
// in SA_FULL_DISK_DIR.
TEST_CASE("plot: on a full disk a figure fails saying so, and the old figure stays whole", "[.][full-disk]") {
  const char* env = std::getenv("SA_FULL_DISK_DIR");
  REQUIRE(env != nullptr);
  REQUIRE(plot::available());
  const fs::path dir = env;
  const std::string path = (dir / "old.png").string();
  REQUIRE(plot::heatmap(path, plot::weights_heatmap("old", causal_weights(), kTokens)) == path);
  const auto old_size = fs::file_size(path);
  {  // fill the disk
    std::ofstream filler(dir / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    for (int i = 0; i < 1 << 20 && filler.write(block.data(), long(block.size())); ++i) filler.flush();
  }
  try {
    plot::heatmap(path, plot::weights_heatmap("new", causal_weights(), kTokens));
    FAIL("a figure was drawn on a full disk");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), sa::test::ContainsText("the disk is full"));
  }
  CHECK(is_complete_png(path));
  CHECK(fs::file_size(path) == old_size);
  CHECK(temporaries_in(dir) == 0);
}

// A dashed reference line ran through the value label of a bar ending just
// under it (chapter 3's entropy 1.777 under log 6 = 1.792): the label now
// stands beyond the line, at the line's height, and a bar far from the line
// keeps its label at its own end.
TEST_CASE("plot: a bar's value label stands beyond a reference line that would cross it", "[common][plot]") {
  if (!plot::available()) return;
  plot::BarChart c;
  c.categories = {"the (0)", "cat (1)"};
  c.groups = {{"H of the row", {1.777, 1.0}}};
  c.hlines = {{1.792, ""}};
  const std::string script = script_of("crossed_label.png", [&](const std::string& p) { return plot::bars(p, c); });
  INFO(script);
  CHECK(script.find("'1.777' at 0,1.792 ") != std::string::npos);
  CHECK(script.find("'1.000' at 1,1 ") != std::string::npos);
}

// Two bars of one category with equal values had labels that ran together
// ("0.350.35"): side by side at one height, each label gets at most its
// bar's width.
TEST_CASE("plot: value labels of level bars side by side fit their bars", "[common][plot]") {
  if (!plot::available()) return;
  // Six words, four heads: bars about 30 px wide, a label as wide as one.
  plot::BarChart level, apart;
  level.categories = apart.categories = {"a (0)", "dog (1)", "ran (2)", "far (3)", "and (4)", "hid (5)"};
  for (int h = 0; h < 4; ++h) {
    level.groups.push_back({"head " + std::to_string(h), std::vector<double>(6, 0.35)});
    apart.groups.push_back({"head " + std::to_string(h), std::vector<double>(6, 0.35 + 0.15 * h)});
  }
  // The font of the label '0.35' (0 when it is left out).
  auto font_of = [](const std::string& script) {
    const size_t at = script.find("'0.35' at");
    if (at == std::string::npos) return 0.0;
    const size_t font = script.find("font ',", at);
    return std::stod(script.substr(font + 7));
  };
  const double level_pt =
      font_of(script_of("level_bars.png", [&](const std::string& p) { return plot::bars(p, level); }));
  const double apart_pt =
      font_of(script_of("apart_bars.png", [&](const std::string& p) { return plot::bars(p, apart); }));
  INFO("font of level labels " << level_pt << " pt, of labels at different heights " << apart_pt << " pt");
  CHECK(apart_pt > 0);
  CHECK(level_pt < apart_pt);
}

// Two reference lines 0.1 apart ("chance" at 7.1%, "every head" at 7.0%)
// had their labels one on the other: the second goes below its line.
TEST_CASE("plot: labels of two close reference lines do not overlap", "[common][plot]") {
  if (!plot::available()) return;
  plot::BarChart c;
  c.categories = {"none", "head 0", "head 1"};
  c.groups = {{"", {7.0, 6.5, 30.0}}};
  c.hlines = {{7.1, "chance"}, {7.0, "every head"}};
  const std::string script = script_of("close_lines.png", [&](const std::string& p) { return plot::bars(p, c); });
  INFO(script);
  // Each label is set at its line's right end, shifted up or down by
  // 0.75 of a line of text ("offset -1,0.75"): at lines 0.1 apart, one
  // must go above its line and the other below.
  auto shift_of = [&](const std::string& label) {
    const size_t at = script.find("'" + label + "' at ");
    REQUIRE(at != std::string::npos);
    const size_t offset = script.find("offset ", at);
    return std::stod(script.substr(script.find(',', offset) + 1));
  };
  CHECK(shift_of("chance") * shift_of("every head") < 0);
}

// gnuplot set the legend across the ends of turned category labels
// (chapter 2's "d_k=1024" into the legend under it): with turned labels the
// bottom margin is measured, and leaves more room the more legend rows
// there are.
TEST_CASE("plot: turned category labels get a bottom margin above the legend", "[common][plot]") {
  if (!plot::available()) return;
  plot::BarChart c;
  for (int d = 1; d <= 8192; d *= 2) c.categories.push_back("d_k=" + std::to_string(d));
  c.groups = {{"softmax(q . k / sqrt(d_k))", std::vector<double>(c.categories.size(), 0.5)}};
  auto margin_of = [](const std::string& script) {
    const size_t at = script.find("set bmargin at screen ");
    return at == std::string::npos ? 0.0 : std::stod(script.substr(at + 22));
  };
  const std::string one = script_of("turned_one_row.png", [&](const std::string& p) { return plot::bars(p, c); });
  CHECK(one.find("rotate by 30") != std::string::npos);
  const double one_row = margin_of(one);
  for (int g = 1; g < 6; ++g)
    c.groups.push_back({"a long name for group " + std::to_string(g), std::vector<double>(c.categories.size(), 0.2)});
  const double rows = margin_of(script_of("turned_rows.png", [&](const std::string& p) { return plot::bars(p, c); }));
  INFO("bottom margin with one legend entry " << one_row << ", with six " << rows << " (fractions of the canvas)");
  CHECK(one_row > 0);
  CHECK(rows > one_row);
}
