// Chapter 5: masks — no peeking at the future, no attending to padding.
//
// Builds the causal (lower-triangular) mask of "the cat sat on the mat",
// puts -inf on the scores it forbids, and checks that softmax then gives
// weights exactly 0 above the diagonal; runs the same mask through every
// head of chapter 4's multi-head attention; shows again why zeroing weights
// after softmax is wrong; masks the padding of a batch of sequences of
// different lengths, alone and together with the causal mask; and settles
// what a query that may see nothing gets: zeros, where PyTorch 1.13 gives
// NaN. The steps live in steps_*.cpp.
#include "05-causal-mask/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <vector>

using namespace sa;
using namespace sa::ch5;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("05-causal-mask",
          "Chapter 5: the causal mask (-inf above the diagonal before softmax), in one head and in every head of "
          "multi-head attention; padding masks for a batch of sequences of different lengths; and what a query "
          "that may see nothing gets (zeros, never NaN).");
  cli.add_sentence(&o.text, "the sentence to attend over");
  cli.add("--lengths", &o.lengths,
          "comma-separated lengths of the padded batch, each from 0 to the number of tokens; auto = all, 2/3 "
          "and 1/3 of them (6,4,2 for the default text)");
  cli.add_width("--n-heads", &o.n_heads, "attention heads in the multi-head step");
  cli.add_width("--d-model", &o.d_model, "width of a token vector (divisible by --n-heads)");
  cli.parse(argc, argv);
  check_heads(o);
  // Refuse a bad text or bad lengths before anything prints.
  const auto tokens = tokenize_text(o.text);
  const std::vector<int64_t> lengths = batch_lengths(o, int64_t(tokens.size()));
  cli.check_budget(estimate_run(o));

  Figures figures(cli);
  FigureData fig;
  fig.tokens = tokens;
  fig.lengths = lengths;

  chapter_title("Chapter 5: masks, or what a query may not see");
  fmt::print("text \"{}\", d_model {}, n_heads {}, lengths {}, seed {}\n", printable(o.text), o.d_model, o.n_heads,
             fmt::join(lengths, ","), cli.seed);

  step(1, "The scores of the running example");
  const Example ex = running_example_scores(cli.seed, o, tokens);

  step(2, "The causal mask: query i may look at keys 0..i");
  const Mask causal = build_causal_mask(ex, fig);

  step(3, "Mask the scores: -inf where the mask is 0");
  mask_the_scores(ex, causal, fig);

  step(4, "Softmax: the upper triangle becomes exactly 0");
  const Attention causal_att = masked_softmax(ex, o, causal, fig);

  step(5, "The wrong way revisited: zeroing after softmax");
  const Matrix bidirectional = zeroing_after_softmax(ex, causal, causal_att.weights, fig);

  step(6, fmt::format("Multi-head causal attention: {} of d_k = {}", count_of(o.n_heads, "head"), o.d_model / o.n_heads));
  multi_head_causal(ex, o, causal, causal_att.weights, bidirectional, fig);

  step(7, fmt::format("Padding masks: a batch of {} of {} {}", count_of(int64_t(lengths.size()), "sequence"),
                      lengths.size() == 1 ? "length" : "lengths", fmt::join(lengths, ", ")));
  const PaddedBatch padded = padded_batch(ex, o, lengths, fig);

  step(8, "Padding and causal together: mask_and");
  padding_and_causal(ex, padded, causal, causal_att, fig);

  step(9, "A query that may see nothing");
  query_that_sees_nothing(ex, causal);

  figures.heading();
  draw_figures(figures, fig);
  figures.summary();
  fmt::print("Next: chapter 6 drops attention weights at random while training (dropout).\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("05-causal-mask", [&] { run(argc, argv); });
}
