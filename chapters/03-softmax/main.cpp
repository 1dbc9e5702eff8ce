// Chapter 3: from scores to attention weights, and attention itself.
//
// Takes the scaled scores of "the cat sat on the mat" through softmax to
// attention weights and the attention output; then looks at softmax itself:
// why the row maximum is subtracted, what a temperature does, its Jacobian
// and backward pass, how the gradient vanishes without the 1/sqrt(d_k) of
// chapter 2, the wrong way to mask, and the entropy and focus metrics that
// the later chapters report. The steps live in steps_*.cpp.
#include "03-softmax/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <string>
#include <vector>

using namespace sa;
using namespace sa::ch3;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("03-softmax",
          "Chapter 3: turn scaled scores into attention weights with a numerically stable softmax, compute "
          "attention(Q, K, V), and look at softmax's temperature, gradient and the entropy and focus metrics.");
  cli.add_sentence(&o.text, "the sentence to attend over");
  cli.add_width("--d-model", &o.d_model, "width of a token vector");
  cli.add_width("--d-k", &o.d_k, "width of a query/key/value vector");
  cli.add("--temperature", &o.temperature, "the temperature T highlighted in step 6 (softmax(x / T))",
          RealRange{0.0, 1e6, true, false});
  cli.add("--samples", &o.samples, "random score rows per d_k in the gradient experiment (step 8)",
          IntRange{1, 1'000'000});
  cli.parse(argc, argv);
  check_options(o);

  // Refuse a text without words before printing anything.
  const auto tokens = tokenize_text(o.text);
  cli.check_budget(estimate_run(o));

  Figures figures(cli);

  chapter_title("Chapter 3: from scores to attention weights");
  fmt::print("text \"{}\", d_model {}, d_k {}, seed {}, temperature {:g}, samples {}\n",
             printable(o.text), o.d_model, o.d_k, cli.seed, o.temperature, o.samples);

  step(1, "The scaled scores of the running example");
  const ExampleScores ex = scores_of_example(cli.seed, o, tokens);

  step(2, "Softmax along the key dimension (the last one)");
  const Matrix weights = softmax_of_scores(ex);

  step(3, "The output: weights times values");
  const Matrix output = weights_times_values(o, ex, weights);

  step(4, "All of it in one call: attention(Q, K, V)");
  attention_in_one_call(ex, weights, output);

  step(5, "Why softmax subtracts the row maximum first");
  subtract_the_maximum();

  step(6, "Temperature: softmax(x / T)");
  const std::vector<double> temperatures = show_temperatures(o);

  step(7, "The gradient of softmax");
  softmax_gradient();

  step(8, "Chapter 2's vanishing gradient, measured");
  const std::vector<NormRow> norms = vanishing_gradient(cli.seed, o);

  step(9, "The wrong way to hide keys: zeroing weights after softmax");
  zero_after_softmax(ex, weights);

  step(10, "Two numbers to describe attention: entropy and focus");
  const std::vector<double> entropy = entropy_and_focus(ex, weights);

  step(11, "Without softmax: nothing keeps the output's size");
  show_without_softmax(cli.seed);

  figures.heading();
  draw_figures(figures, o, tokens, weights, entropy, temperatures, norms);
  figures.summary();
  fmt::print("Next: chapter 4 runs several of these attentions side by side (multi-head).\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("03-softmax", [&] { run(argc, argv); });
}
