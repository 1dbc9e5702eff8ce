// Chapter 2: why attention divides the scores by sqrt(d_k).
//
// Rebuilds chapter 1's Q and K of "the cat sat on the mat", prints the raw
// scores Q K^T and the scaled scores Q K^T / sqrt(d_k), then measures the
// argument: the variance of q.k for random vectors grows like d_k, the
// variance of q.k / sqrt(d_k) stays at 1, and unscaled score rows make
// softmax nearly one-hot as d_k grows. The steps live in steps_*.cpp.
#include "02-scaling/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <algorithm>

using namespace sa;
using namespace sa::ch2;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("02-scaling",
          "Chapter 2: the scores Q K^T and why attention divides them by sqrt(d_k), measured on random "
          "vectors for d_k = 4 ... max-d-k, with a preview of what unscaled scores do to softmax.");
  cli.add_sentence(&o.text, "the sentence of the running example");
  cli.add_width("--d-model", &o.d_model, "width of a token vector in the running example");
  cli.add_width("--d-k", &o.d_k, "width of a query/key vector in the running example");
  cli.add("--samples", &o.samples, "dot products drawn per d_k in the experiment", IntRange{2, 10'000'000});
  cli.add("--max-d-k", &o.max_d_k, "largest d_k of the experiment, a power of two", IntRange{4, 8192});
  cli.add("--keys", &o.keys, "scores per row in the softmax preview", IntRange{2, 1024});
  cli.parse(argc, argv);
  check_options(o);
  cli.check_budget(estimate_run(o));

  // Before any output, so a text without words is one line, not half a page.
  const auto tokens = tokenize_text(o.text);
  Figures figures(cli);

  chapter_title("Chapter 2: why the scores are divided by sqrt(d_k)");
  // (--max-d-k 4: one d_k, not a range "4 ... 4")
  const std::vector<int64_t> d_ks = d_k_values(o.max_d_k);
  const std::string experiment = d_ks.size() == 1 ? fmt::format("d_k {}", d_ks.front())
                                                  : fmt::format("d_k {} ... {}", d_ks.front(), d_ks.back());
  fmt::print("text \"{}\", d_model {}, d_k {}, seed {}; experiment: {}, {} samples each\n", printable(o.text),
             o.d_model, o.d_k, cli.seed, experiment, o.samples);

  step(1, "Rebuild Q and K of the running example (chapter 1)");
  const ExampleQK ex = rebuild_q_and_k(cli.seed, o, tokens);

  step(2, "Raw scores: every query against every key");
  const Matrix raw = show_raw_scores(o, ex);

  step(3, "Scaled scores: divide by sqrt(d_k)");
  const Matrix scaled = show_scaled_scores(o, ex, raw);

  step(4, "Why sqrt(d_k): the variance of a dot product, measured");
  Measured m = measure_variance(cli.seed, o);

  const int64_t hist_d_k = std::min(kHistogramDk, o.max_d_k);
  step(5, fmt::format("What the spread looks like at d_k = {}", hist_d_k));
  const HistogramScores hist = spread_at_d_k(cli.seed, hist_d_k);

  step(6, "The consequence for softmax (a preview of chapter 3)");
  softmax_preview(cli.seed, o, m);
  largest_weights_of_example(o, ex, raw, scaled);

  step(7, "Length against angle: q . k = |q| |k| cos(theta)");
  const Geometry geometry = show_dot_product_geometry(ex.qkv, tokens);

  figures.heading();
  draw_figures(figures, o, tokens, scaled, m, hist.raw, hist.scaled, hist_d_k, geometry);
  figures.summary();
  fmt::print("Next: chapter 3 turns the scaled scores into attention weights with softmax.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("02-scaling", [&] { run(argc, argv); });
}
