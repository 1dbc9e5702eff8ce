// Chapter 1: from words to queries, keys and values.
//
// Starts with attention before any learned weight (six hand-written
// 3-number vectors, one query by hand, then all queries as matrices), then
// walks "the cat sat on the mat" through tokens -> ids -> embeddings ->
// + positional encoding -> Q, K, V, printing every shape and value, then
// the same steps at a toy size (d_model 8), the parameter count, a first look
// at the raw scores Q Kᵀ that chapter 2 will scale, how positions relate,
// and last one token's whole path to its attention output, as text and as
// a diagram (qkv_flow.png). The steps live in steps_*.cpp.
#include "01-qkv-projection/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

using namespace sa;
using namespace sa::ch1;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("01-qkv-projection",
          "Chapter 1: turn a sentence into token ids, embeddings with positional encoding, and the "
          "queries, keys and values of self-attention, printing every shape and value.");
  cli.add_sentence(&o.text, "the sentence to encode");
  cli.add_width("--d-model", &o.d_model, "width of a token vector");
  cli.add_width("--d-k", &o.d_k, "width of a query/key/value vector");
  cli.parse(argc, argv);
  o.plots = cli.plots;
  const auto tokens = tokenize_text(o.text);  // refuses an empty text before anything prints
  cli.check_budget(estimate_run(o));

  Generator gen(cli.seed);
  Figures figures(cli);

  chapter_title("Chapter 1: from words to queries, keys and values");
  fmt::print("text \"{}\", d_model {}, d_k {}, seed {}\n", printable(o.text), o.d_model, o.d_k, cli.seed);

  step(1, "Attention without weights: one query, by hand");
  const Matrix X_toy = one_query_by_hand();

  step(2, "Attention without weights: every query at once, as matrices");
  every_query_at_once(X_toy);

  step(3, "Split the text into tokens and number them");
  const TokenIds text = number_tokens(tokens);

  step(4, "Look up an embedding vector for every token");
  const Matrix E = look_up_embeddings(gen, o, text);

  step(5, "Add the sinusoidal positional encoding");
  const Positioned pos = add_positional_encoding(o, text, E);

  step(6, "Project X into queries, keys and values");
  const Projections proj = project_to_qkv(gen, o, text, E, pos);

  step(7, "Count the parameters");
  count_parameters(o, proj, text.vocab);

  step(8, "A first look at the scores Q K^T (chapter 2 scales them)");
  const Matrix scores = first_look_at_scores(o, tokens, proj.qkv);

  step(9, "The same steps at toy size: d_model 8, d_k 4");
  toy_size_example(cli.seed);

  step(10, "How two positions relate: PE similarity and relative offsets");
  const Matrix similarity = show_position_similarity(o, 64);

  step(11, "Follow one token from its word to its attention output");
  const TokenPath path = show_token_path(o, text, E, pos, proj.qkv, scores);

  figures.heading();
  draw_figures(figures, o, tokens, scores, similarity, path);
  figures.summary();
  fmt::print("Next: chapter 2 divides these scores by sqrt(d_k) and measures why.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("01-qkv-projection", [&] { run(argc, argv); });
}
