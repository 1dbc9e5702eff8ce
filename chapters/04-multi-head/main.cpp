// Chapter 4: several attention heads side by side.
//
// Follows "the cat sat on the mat" through multi-head attention one shape at
// a time: project, split into heads (a view of the same numbers), scores,
// weights and outputs per head, combine, W_o. Then what the heads do
// differently (entropy and focus), the parameter count, the einsum reading of
// the same computation, cross-attention of 10 queries over 50 keys, and a
// batch of sequences. The steps live in steps_*.cpp.
#include "04-multi-head/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

using namespace sa;
using namespace sa::ch4;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("04-multi-head",
          "Chapter 4: multi-head attention, one shape at a time: split Q, K and V into heads, attend in each head, "
          "combine, project with W_o; then the parameter count, the einsum reading, cross-attention and a batch.");
  cli.add_sentence(&o.text, "the sentence to attend over");
  cli.add_width("--d-model", &o.d_model, "width of a token vector (divisible by --n-heads)");
  cli.add_width("--n-heads", &o.n_heads, "number of attention heads; each gets d_k = d_model / n_heads");
  cli.add("--batch", &o.batch, "sequences in the batch of the last step (the sentence plus random ones)",
          IntRange{1, 64});
  cli.parse(argc, argv);
  check_heads(o);
  const auto tokens = tokenize_text(o.text);  // refuses an empty text before anything prints
  cli.check_budget(estimate_run(o, int64_t(tokens.size())));

  Generator gen(cli.seed);
  Figures figures(cli);

  chapter_title("Chapter 4: multi-head attention");
  fmt::print("text \"{}\", d_model {}, n_heads {}, d_k = d_model / n_heads = {}, batch {}, seed {}\n",
             printable(o.text), o.d_model, o.n_heads, o.d_model / o.n_heads, o.batch, cli.seed);

  step(1, "The input and the four projections");
  const Input in = input_and_layers(gen, o, tokens);

  step(2, "Project once for all heads: Q, K and V");
  const QKV qkv = project_once(in);

  step(3, "Split into heads: a view of the same numbers");
  const Heads heads = split_into_heads(in, qkv);

  step(4, "Scores per head: Q_h K_h^T / sqrt(d_k)");
  const Tensor4 scores = scores_per_head(in, heads);

  step(5, "Weights per head: softmax along the keys");
  const Tensor4 weights = weights_per_head(in, scores);

  step(6, "Per-head outputs: weights_h V_h");
  const Tensor4 head_out = outputs_per_head(in, heads, weights);

  step(7, "Combine the heads: back to one row per token");
  const Matrix combined = combine(in, qkv, heads, head_out);

  step(8, "The output projection W_o");
  const Matrix output = output_projection(in, combined);

  step(9, "All of it in one call: multi_head_attention");
  const MultiHead mh = in_one_call(in, weights, output);

  step(10, "What each head does: entropy and focus");
  const std::vector<HeadStats> stats = what_each_head_does(in, qkv, mh);

  step(11, "Counting the parameters: more heads cost nothing");
  count_parameters(in);

  step(12, "The einsum reading: name every index");
  einsum_reading(in, qkv, scores, head_out, output);

  step(13, fmt::format("Cross-attention: {} queries over {} keys from another sequence", kCrossQueries, kCrossKeys));
  const MultiHead cross = cross_attention(gen, in);

  step(14, fmt::format("A batch of {} sequence{}", o.batch, o.batch == 1 ? "" : "s"));
  batch_of_sequences(gen, in, o, mh);

  figures.heading();
  draw_figures(figures, o, tokens, mh.weights, stats, cross.weights);
  figures.summary();
  fmt::print("Next: chapter 5 hides the future from every head with a causal mask.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("04-multi-head", [&] { run(argc, argv); });
}
