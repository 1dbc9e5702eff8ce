// Chapter 6: dropout on attention weights.
//
// Takes the attention weights of "the cat sat on the mat" (rebuilt with
// chapters 1 and 3) through one inverted-dropout draw: the mask, the weights
// before and after, row sums that no longer add up to 1; training against
// evaluation; many draws showing that the kept fraction tends to 1 - p and
// the mean to the original weights; why the mask is element by element and
// not whole rows or columns; the backward pass; and the edges p = 0, p = 1
// and p outside [0, 1]. The steps live in steps_*.cpp.
#include "06-dropout/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <vector>

using namespace sa;
using namespace sa::ch6;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("06-dropout",
          "Chapter 6: inverted dropout on the attention weights of the running example: the mask, the "
          "scaling by 1/(1-p), training against evaluation, the statistics over many draws, and the backward "
          "pass.");
  cli.add("--p", &o.p, "the drop probability p: each weight is zeroed with probability p", RealRange{0.0, 1.0});
  cli.add("--draws", &o.draws, "dropout draws averaged in step 4", IntRange{1, 1'000'000});
  cli.parse(argc, argv);
  cli.check_budget(estimate_run(o));

  Figures figures(cli);

  chapter_title("Chapter 6: dropout on attention weights");
  fmt::print("text \"the cat sat on the mat\", d_model {}, d_k {}, p {}, seed {}, draws {}\n", kDModel, kDK, o.p,
             cli.seed, o.draws);

  step(1, "The attention weights of the running example");
  Generator gen(cli.seed);
  const Example ex = running_example_weights(gen);

  step(2, fmt::format("One dropout draw in training, p = {}", o.p));
  const Draw draw = one_draw(ex, o, gen);

  step(3, "Training against evaluation");
  const Outputs outputs = training_against_evaluation(ex, o, draw);

  step(4, "Many draws: the kept fraction tends to 1 - p, the mean to the weights");
  // Steps 4 and 5 draw from a generator of their own (step 5 continues its
  // stream), so that --draws changes nothing in the other steps.
  Generator many(cli.seed);
  const std::vector<Checkpoint> curve = many_draws(ex, o, many);

  step(5, "The kept fraction against p");
  const std::vector<SweepPoint> sweep = kept_fraction_against_p(ex, many);

  step(6, "Why single weights, not whole rows or columns");
  const CoarseDrops coarse = rows_or_columns(ex, o, outputs);

  step(7, "The backward pass: the same mask, the same scale");
  backward_pass(ex, o, draw, gen);

  step(8, "The edges: p = 0, p = 1, and p outside [0, 1]");
  the_edges(ex, cli.seed);

  figures.heading();
  draw_figures(figures, o, ex, draw, coarse, sweep, curve);
  figures.summary();
  fmt::print("Next: chapter 7 trains a tiny transformer, every backward pass by hand. Its corpus models train\n"
             "with this chapter's dropout (p = 0.1) on the attention weights and are evaluated with it off.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("06-dropout", [&] { run(argc, argv); });
}
