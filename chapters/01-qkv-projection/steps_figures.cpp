// Chapter 1's figures, drawn after the last step: the positional encoding
// (as a heatmap, as waves, and as the similarity of two positions), the raw
// scores, and one token's path (qkv_flow.png).
#include "01-qkv-projection/steps.hpp"

#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace sa::ch1 {

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& scores,
                  const Matrix& similarity, const TokenPath& path) {
  // Six positions make a dull picture of the encoding; 64 show its waves.
  const int64_t positions = 64;
  const Matrix PE = positional_encoding(positions, o.d_model);
  figures.draw("positional_encoding.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("Sinusoidal positional encoding, {} positions x d_model {}", positions, o.d_model);
    h.values = PE;
    // Cells are square, so past 256 columns they shrink below 3 px: the fast
    // columns alias into false bands, and at d_model 4096 the 64 rows were
    // a strip 12 px high. Then every k-th (sin, cos) pair is drawn, each
    // column labelled with its j.
    const int64_t every = (o.d_model + 255) / 256;
    if (every > 1) {
      std::vector<int64_t> js;
      for (int64_t j = 0; j < o.d_model; j += 2 * every) {
        js.push_back(j);
        if (j + 1 < o.d_model) js.push_back(j + 1);
      }
      h.values.resize(positions, int64_t(js.size()));
      for (size_t c = 0; c < js.size(); ++c) {
        h.values.col(int64_t(c)) = PE.col(js[c]);
        h.col_labels.push_back(std::to_string(js[c]));
      }
      h.title += fmt::format(", one (sin, cos) pair in {} drawn", every);
    }
    h.xlabel = "dimension j (even: sin, odd: cos)";
    h.ylabel = "position";
    h.cblabel = "PE[pos, j]";
    h.diverging = true;
    h.vmin = -1;
    h.vmax = 1;
    h.annotate = false;
    return plot::heatmap(path, h, 900, 750);
  });

  figures.draw("positional_waves.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.xlabel = "position";
    p.ylabel = "PE[pos, j]";
    // A fast pair (6 and 7) and two slower columns, each once and in the
    // order of j, which is the order of the title (a small d_model makes
    // d_model / 4 and d_model / 2 the smaller ones: 6, 1, 3 for 7).
    std::vector<int64_t> columns;
    for (int64_t j : {int64_t(6), int64_t(7), o.d_model / 4, o.d_model / 2})
      if (j < o.d_model) columns.push_back(j);
    std::sort(columns.begin(), columns.end());
    columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
    // Columns 2i and 2i+1 share one frequency. Below d_model 4 the columns
    // drawn are one such pair (or the one column): one speed, not fast and
    // slow waves.
    if (columns.front() / 2 != columns.back() / 2) {
      p.title = "A few columns of the positional encoding: fast waves first, slow waves later";
    } else if (columns.size() == 1) {
      p.title = fmt::format("The one column of the positional encoding at d_model {}: sin(pos), a single wave",
                            o.d_model);
    } else {
      p.title = fmt::format(
          "Columns 0 and 1 of the positional encoding at d_model {}: one frequency, as sine and cosine", o.d_model);
    }
    for (int64_t j : columns) {
      plot::Series s;
      s.name = fmt::format("j = {} ({})", j, j % 2 == 0 ? "sin" : "cos");
      s.style = plot::Series::Style::Lines;
      for (int64_t pos = 0; pos < positions; ++pos) {
        s.x.push_back(double(pos));
        s.y.push_back(PE(pos, j));
      }
      p.series.push_back(s);
    }
    p.ymin = -1.15;
    p.ymax = 1.15;
    return plot::lines(path, p);
  });

  figures.draw("pe_similarity.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("PE(p) . PE(q) over {} positions, d_model {}{}", similarity.rows(), o.d_model,
                          o.d_model % 2 == 0 ? ": constant along each diagonal (offset p - q)" : "");
    h.values = similarity;
    h.xlabel = "position q";
    h.ylabel = "position p";
    h.cblabel = "PE(p) . PE(q)";
    // Negative dot products only appear with few pairs (d_model 2: cos k);
    // then the diverging palette shows the sign, otherwise a plain one the range.
    h.diverging = similarity.minCoeff() < 0;
    h.annotate = false;
    return plot::heatmap(path, h, 900, 750);
  });

  figures.draw("raw_scores.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("Raw scores Q K^T (not yet scaled), d_k = {}", o.d_k);
    h.values = scores;
    h.row_labels = tokens;
    h.col_labels = tokens;
    h.cblabel = "q . k";
    h.diverging = true;
    // One decimal for scores of size 1 and more, as the default text has;
    // more for small ones, so that a 0.05 is not labelled 0.1.
    const double largest = scores.cwiseAbs().maxCoeff();
    h.decimals = largest >= 1 ? 1 : largest >= 0.1 ? 2 : 3;
    return plot::heatmap(path, h);
  });

  figures.draw("qkv_flow.png", [&](const std::string& file) {
    const TokenPath& p = path;
    auto shape = [](int64_t rows, int64_t cols) { return shape_str(Shape{rows, cols}); };
    plot::Diagram d;
    d.title = fmt::format("One token's path through self-attention: \"{}\" at position {} ({}), d_model {}, d_k {}",
                          p.word, p.t, p.seq_len == 1 ? "the only one" : "the last", p.d_model, p.d_k);
    // Chapter 1's tensors in colour 0, what chapters 2 and 3 add in colour 1.
    auto box = [&](std::string name, std::vector<std::string> lines, int column, int row, std::size_t colour = 0) {
      d.boxes.push_back({std::move(name), std::move(lines), column, row, colour});
      return d.boxes.size() - 1;
    };
    auto arrow = [&](std::size_t from, std::size_t to, std::string label) {
      d.arrows.push_back({from, to, std::move(label)});
    };
    // Row 0 takes the word to x, and q, k and v fan out below it. Each lane
    // goes down: K joins the scores from the side, and the bottom row runs
    // from the scaled scores to the output, which V joins from above.
    const auto word = box(fmt::format("\"{}\"", p.word), {fmt::format("position {}, id {}", p.t, p.id)}, 0, 0);
    const auto e = box(fmt::format("e = table[{}]", p.id), {shape(1, p.d_model)}, 1, 0);
    const auto x = box(fmt::format("x = e + PE[{}]", p.t), {shape(1, p.d_model)}, 2, 0);
    const auto pe = box(fmt::format("PE[{}]", p.t), {shape(1, p.d_model), fmt::format("position {}", p.t)}, 3, 0);
    const auto q = box("q", {shape(1, p.d_k)}, 1, 1);
    const auto k = box("k", {shape(1, p.d_k)}, 2, 1);
    const auto v = box("v", {shape(1, p.d_k)}, 3, 1);
    const auto s = box("scores = q K^T", {shape(1, p.seq_len)}, 1, 2);
    const auto K = box("K", {shape(p.seq_len, p.d_k), "one row per token"}, 2, 2);
    const auto V = box("V", {shape(p.seq_len, p.d_k), "one row per token"}, 3, 2);
    const auto scaled = box("scaled scores", {shape(1, p.seq_len), "chapter 2"}, 1, 3, 1);
    const auto w = box("weights", {shape(1, p.seq_len), "chapter 3"}, 2, 3, 1);
    const auto out = box("output", {shape(1, p.d_k), "chapter 3"}, 3, 3, 1);
    arrow(word, e, fmt::format("row {} of\ntable {}", p.id, shape(p.vocab, p.d_model)));
    arrow(e, x, "+");
    arrow(pe, x, "+");
    const struct {
      std::size_t to;
      const char *W, *b;
    } projections[] = {{q, "W_q", "b_q"}, {k, "W_k", "b_k"}, {v, "W_v", "b_v"}};
    for (const auto& [to, W, b] : projections)
      arrow(x, to, fmt::format("× {} + {}\n{} {}", W, b, W, shape(p.d_model, p.d_k)));
    arrow(k, K, fmt::format("row {} of K", p.t));
    arrow(v, V, fmt::format("row {} of V", p.t));
    arrow(q, s, "× K^T");
    arrow(K, s, "K^T " + shape(p.d_k, p.seq_len));
    arrow(s, scaled, fmt::format("/ sqrt({})", p.d_k));
    arrow(scaled, w, "softmax");
    arrow(w, out, "× V");
    arrow(V, out, "V " + shape(p.seq_len, p.d_k));
    d.legend = {"chapter 1 computes these", "chapters 2 and 3 add these"};
    return plot::diagram(file, d);
  });
}

}  // namespace sa::ch1
