// Flow diagrams (sa::plot::flow): each head's queries in a column on the
// left, its keys on the right, a line for each weight large enough, the
// wider and darker the larger; a legend band says what a line means.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace sa::plot {

using namespace detail;

namespace {

// What a multiplot panel set before, cleared for the next one.
constexpr const char* kBlankPanel =
    "unset label\nunset arrow\nunset object\nunset key\nunset border\nunset tics\nunset grid\n";

// How a line of weight w is drawn (`lw ... lc rgb ...`): the panels and the
// legend's samples both use this.
std::string weight_line(double w) {
  return fmt::format("lw {:.3g} lc rgb '{}'", 0.6 + 7.0 * w, rgb_hex(interpolate(blues(), 0.3 + 0.7 * w)));
}

}  // namespace

std::string flow(const std::string& png_path, const std::string& title, int rows, int cols,
                 const std::vector<FlowPanel>& panels, double min_weight, int panel_px) {
  check_grid("flow", rows, cols, panels.size());
  if (!(min_weight >= 0 && min_weight <= 1)) bad_input("flow", fmt::format("min_weight {} is not in [0, 1]", min_weight));
  std::size_t tokens = 1;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const FlowPanel& p = panels[k];
    const auto nq = static_cast<std::size_t>(p.weights.rows()), nk = static_cast<std::size_t>(p.weights.cols());
    if (nq == 0 || nk == 0) bad_input("flow", fmt::format("panel {}: empty weights", k));
    if (!p.query_labels.empty() && p.query_labels.size() != nq) {
      bad_input("flow", fmt::format("panel {}: {} query labels for {} queries", k, p.query_labels.size(), nq));
    }
    if (!p.key_labels.empty() && p.key_labels.size() != nk) {
      bad_input("flow", fmt::format("panel {}: {} key labels for {} keys", k, p.key_labels.size(), nk));
    }
    for (Eigen::Index i = 0; i < p.weights.size(); ++i) {
      const double w = p.weights.data()[i];
      if (!(w >= 0 && w <= 1)) bad_input("flow", fmt::format("panel {}: weight {} is not in [0, 1]", k, w));
    }
    tokens = std::max({tokens, nq, nk});
  }
  check_size("flow", panel_px, panel_px);
  if (!available()) return skipped();

  // Sizes: a row of tokens every 34 px (at least), labels at 11 pt down to 9.
  const double pt = std::clamp(panel_px / 30.0, 9.0, 11.0);
  // The labels, each column of them in at most a third of the panel less
  // its margins (longer ones are shortened in the middle), so the lines
  // keep at least a third: words of 64 letters pushed the columns
  // together and ran over the neighbouring panels.
  const auto max_chars = static_cast<std::size_t>(std::max(3.0, (panel_px / 3.0 - 12 - 16) / text_px(1, pt)));
  auto label = [&](const std::vector<std::string>& labels, std::size_t i) {
    return labels.empty() ? std::to_string(i) : shorten(labels[i], max_chars);
  };
  std::size_t label_chars = 1;
  for (const FlowPanel& p : panels) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(p.weights.rows()); ++i)
      label_chars = std::max(label_chars, text_width(label(p.query_labels, i)));
    for (std::size_t j = 0; j < static_cast<std::size_t>(p.weights.cols()); ++j)
      label_chars = std::max(label_chars, text_width(label(p.key_labels, j)));
  }
  const int panel_h = std::max(panel_px, static_cast<int>(34 * tokens) + 110);
  const int width = cols * panel_px;
  const PageTitle page = page_title(title, width, pt + 5, pt + 1, 46);
  const int legend_px = 56;  // the band at the bottom that says what a line means
  const int height = rows * panel_h + page.px + legend_px;
  const double top = 1.0 - static_cast<double>(page.px) / height;
  const double legend = static_cast<double>(legend_px) / height;
  const double pw = 1.0 / cols, ph = (top - legend) / rows;

  // x: the query column at 0, the key column at 1, with room for the
  // labels beyond them (in units of the distance between the columns).
  const double label_px = text_px(label_chars, pt) + 16;
  const double inner_px = std::max(40.0, panel_px - 2 * label_px - 24);
  const double side = (label_px + 10) / inner_px;

  std::string body = page.command;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const FlowPanel& p = panels[k];
    const auto nq = static_cast<std::size_t>(p.weights.rows()), nk = static_cast<std::size_t>(p.weights.cols());
    body += kBlankPanel;
    body += panel_origin(k, cols, pw, ph, top);
    body += fmt::format("set size {:.5f},{:.5f}\n", pw, ph);
    body += "set lmargin 0\nset rmargin 0\nset bmargin 0.5\nset tmargin 2.5\n";
    body += title_command(p.title, panel_px - 20.0, pt + 2, pt);
    // Row i at y = -i, the column headings above row 0.
    body += fmt::format("set xrange [{}:{}]\nset yrange [{}:1.1]\n", num(-side), num(1 + side),
                        num(-static_cast<double>(tokens - 1) - 0.6));
    body += fmt::format("set label 1 'query' at 0,0.75 center font ',{:.3g}' tc rgb '#555555'\n", pt);
    body += fmt::format("set label 2 'key' at 1,0.75 center font ',{:.3g}' tc rgb '#555555'\n", pt);
    int tag = 3;
    for (std::size_t i = 0; i < nq; ++i) {
      body += fmt::format("set label {} {} at {},{} right font ',{:.3g}' front\n", tag++,
                          gq(label(p.query_labels, i), false), num(-0.06), num(-static_cast<double>(i)), pt);
    }
    for (std::size_t j = 0; j < nk; ++j) {
      body += fmt::format("set label {} {} at {},{} left font ',{:.3g}' front\n", tag++,
                          gq(label(p.key_labels, j), false), num(1.06), num(-static_cast<double>(j)), pt);
    }
    // The lines, lightest first, so the strong ones are drawn on top.
    struct Edge {
      std::size_t i, j;
      double w;
    };
    std::vector<Edge> edges;
    for (std::size_t i = 0; i < nq; ++i) {
      for (std::size_t j = 0; j < nk; ++j) {
        const double w = p.weights(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
        if (w >= min_weight && w > 0) edges.push_back({i, j, w});
      }
    }
    std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.w < b.w; });
    int arrow = 1;
    for (const Edge& e : edges) {
      body += fmt::format("set arrow {} from 0,{} to 1,{} nohead back {}\n", arrow++, num(-static_cast<double>(e.i)),
                          num(-static_cast<double>(e.j)), weight_line(e.w));
    }
    std::string nodes;
    for (std::size_t i = 0; i < nq; ++i) nodes += fmt::format("0 {}\n", num(-static_cast<double>(i)));
    for (std::size_t j = 0; j < nk; ++j) nodes += fmt::format("1 {}\n", num(-static_cast<double>(j)));
    const std::string block = fmt::format("$nodes{}", k);
    datablock(body, block, nodes);
    body += "plot " + block + " using 1:2 with points pt 7 ps 1.2 lc rgb '#303030' notitle\n";
  }
  // The legend: sample lines drawn exactly as the panels draw a weight.
  body += kBlankPanel;
  body += "unset title\n";
  body += fmt::format("set origin 0,0\nset size 1,{:.5f}\n", legend);
  body += "set lmargin 0\nset rmargin 0\nset bmargin 0\nset tmargin 0\nset xrange [0:1]\nset yrange [0:1]\n";
  const std::vector<double> samples{std::max(min_weight, 0.1), 0.5, 1.0};
  const double x0 = width > 700 ? 0.30 : 0.05, step = (0.97 - x0) / static_cast<double>(samples.size());
  body += fmt::format("set label 1 'line width and colour: the weight (below {:g}: no line)' at {:.4f},0.78 left "
                      "font ',{:.3g}' tc rgb '#555555'\n",
                      min_weight, x0, pt - 1);
  for (std::size_t k = 0; k < samples.size(); ++k) {
    const double w = samples[k], a = x0 + step * static_cast<double>(k);
    body += fmt::format("set arrow {} from {:.4f},0.32 to {:.4f},0.32 nohead {}\n", k + 1, a, a + 0.45 * step,
                        weight_line(w));
    body += fmt::format("set label {} '{:g}' at {:.4f},0.32 left font ',{:.3g}' tc rgb '#555555'\n", k + 2, w,
                        a + 0.5 * step, pt - 1);
  }
  body += "plot NaN notitle\n";
  return render("flow", png_path, width, height, body);
}

}  // namespace sa::plot
