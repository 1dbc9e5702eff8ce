// Chapter 7's run, estimated from its options before it starts: the time on
// one core and the most memory in use at once, for sa::Cli::check_budget.
// A run of --layers 16 --d-model 1024 --batch 100000 once printed for 20 s
// and then died of std::bad_alloc; such a run is now refused in its first
// millisecond, naming the options that make it big.
//
// The model of the work: a training step over B sequences of L tokens costs,
// per token, about 3 x (layers x (24 d² + 4 L d) + 2 d vocab) operations
// (forward: Q, K, V, W_o and the 4d-wide feed-forward are 24 d², the scores
// and their use 4 L d, the output layer 2 d vocab; the backward twice that),
// plus a fixed cost per token that dominates at the book's small widths,
// plus the first touch of the memory the model's work spaces take (it keeps
// one per batch shape, and generation makes a shape per length). The
// constants were measured on the book's machine (an AMD EPYC, family 25,
// with AVX2, one core) and rounded up: the default reversal run is
// estimated at 48 s and took 41 s of CPU; --d-model 256 --epochs 2 74 s
// against 57 s (3.8 GB against 3.0 GB measured); --digits 32 --epochs 2,
// whose generation keeps 9.4 GB of work spaces, 48 s against 37 s and
// 12 GB.
#pragma once

#include "07-training/corpus.hpp"
#include "07-training/program.hpp"

#include "sa/cli.hpp"
#include "sa/print.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch7 {

// Seconds per token of a training step: a fixed part, and operations at the
// rate one core reaches on these (small) matrix products.
inline constexpr double kSecondsPerToken = 2.5e-6;
inline constexpr double kOperationsPerSecond = 5e10;
// New memory: page faults and zeroing, per byte (work spaces are new
// memory the first time a shape is seen).
inline constexpr double kSecondsPerNewByte = 3e-9;
// A training step's own cost, whatever its batch: Adam updates every
// parameter (3 ns each measured, with the gradients' zeroing), plus a fixed
// part. It dominates with --batch 1: 5 s of CPU for a run of 3 s of tokens.
inline constexpr double kSecondsPerStep = 2e-5;
inline constexpr double kSecondsPerParameterUpdate = 4e-9;

inline double parameter_count(double d, double layers, double L, double vocab) {
  return layers * 12.0 * d * d + (vocab + L) * d + d * vocab;
}

inline double step_seconds(double steps, double d, double layers, double L, double vocab) {
  return steps * (kSecondsPerStep + kSecondsPerParameterUpdate * parameter_count(d, layers, L, vocab));
}

// Operations of one training step per token (forward and backward).
inline double train_operations_per_token(double d, double layers, double L, double vocab) {
  return 3.0 * (layers * (24.0 * d * d + 4.0 * L * d) + 2.0 * d * vocab);
}

// Seconds of `tokens` tokens trained (an evaluation is a third: forward only).
inline double train_seconds(double tokens, double d, double layers, double L, double vocab) {
  return tokens * (kSecondsPerToken + train_operations_per_token(d, layers, L, vocab) / kOperationsPerSecond);
}

// Bytes a forward and backward over B sequences of L tokens keeps: about 30
// floats a token and layer of width d (inputs, normalised inputs, Q, K, V,
// the 4d-wide hidden layer before and after GELU, their gradients), the
// attention weights (B x heads x L x L a layer, and the dropout mask), and
// the logits with their gradient.
inline double activation_bytes(double B, double L, double d, double heads, double layers, double vocab) {
  return 4.0 * B * L * (layers * (30.0 * d + 3.0 * heads * L) + 3.0 * vocab);
}

// The parameters with their gradients and Adam's two moments, of `models`
// models alive at once.
inline double parameter_bytes(double d, double layers, double L, double vocab, double models) {
  return 4.0 * 4.0 * parameter_count(d, layers, L, vocab) * models;
}

// Task 1, reversal. The main run trains --epochs epochs and evaluates the
// held-out set after each; the comparison of position encodings trains three
// more models for --position-epochs; the head ablation evaluates the held-out
// set once per head. Evaluations run the whole held-out set as one batch, and
// generation runs it at every length from digits + 1 to 2 digits, each length
// a work space of its own in the model: with --digits 32 and the 500
// held-out samples that is 9 GB.
inline RunEstimate reversal_cost(const ReversalOptions& o) {
  const double L = double(2 * o.digits), d = double(o.d_model), layers = double(o.layers), V = double(o.vocab),
               heads = double(o.heads), test = double(o.test);
  const double passes = double(o.epochs) + 3.0 * double(std::min(o.position_epochs, o.epochs));
  const double trained = passes * double(o.train) * L;
  const double evaluated = (passes + layers * heads) * test * L / 3.0;
  const auto work_space = [&](double batch, double len) { return activation_bytes(batch, len, d, heads, layers, V); };
  // Four models train (the main one and three encodings), each with the
  // shapes of a full batch, the last partial one and the held-out set.
  const double batch = double(std::min(o.batch, o.train)), last = double(o.train % std::min(o.batch, o.train));
  double bytes = 4.0 * (work_space(batch, L) + work_space(last, L) + work_space(test, L));
  for (int64_t len = o.digits + 1; len <= 2 * o.digits; ++len) bytes += work_space(test, double(len));
  bytes += parameter_bytes(d, layers, L, V, 5.0) + 8.0 * 3.0 * double(o.train + o.test) * (L + 1);
  RunEstimate e;
  const double steps = passes * std::ceil(double(o.train) / double(o.batch));
  e.seconds = train_seconds(trained + evaluated, d, layers, L, V) + step_seconds(steps, d, layers, L, V) +
              bytes * kSecondsPerNewByte;
  e.bytes = bytes;
  e.options = fmt::format("--epochs {} --train {} --test {} --batch {} --digits {} --d-model {} --layers {}",
                          o.epochs, o.train, o.test, o.batch, o.digits, o.d_model, o.layers);
  return e;
}

// Task 2 and 3 on the corpus: six one-layer models (three, and the same three
// again with the other dropout setting) each train --corpus-epochs epochs over
// the training sentences and are evaluated after each; attention pooling
// (task 3) is small beside them. Batches hold sentences of one length.
inline RunEstimate corpus_cost(const CorpusOptions& o, const Corpus& c) {
  double tokens = 0;
  for (const auto& s : c.sentences) tokens += double(s.size());
  const double L = double(c.max_len()), d = double(o.corpus_d_model), V = double(c.vocab.size()),
               heads = double(o.corpus_heads), epochs = double(o.corpus_epochs);
  RunEstimate e;
  // 7/8 of the sentences train, 1/8 are evaluated (a third of the cost),
  // and every model is evaluated a few more times at the end.
  // A batch holds sentences of one length: at most 32 lengths each epoch
  // end a batch early.
  const double steps = epochs * (std::ceil(double(c.sentences.size()) * 7.0 / 8.0 / double(o.corpus_batch)) + 32.0);
  e.seconds = 6.0 * (train_seconds(epochs * tokens * (7.0 / 8.0 + 1.0 / 24.0) + 4.0 * tokens, d, 1.0, L, V) +
                     step_seconds(steps, d, 1.0, L, V));
  // Evaluation runs all the sentences of one length as one batch (bounded
  // here by all of them at the longest length), in each of the six models;
  // the logits alone are a vocabulary-wide row per token.
  const double all = double(c.sentences.size());
  e.bytes = parameter_bytes(d, 1.0, L, V, 6.0) + 6.0 * activation_bytes(all, L, d, heads, 1.0, V);
  e.seconds += e.bytes * kSecondsPerNewByte;
  // (The memory grows with sentences x vocabulary, which no option but a
  // smaller --corpus changes: the estimate names both.)
  e.options = fmt::format("--corpus-epochs {} --corpus-d-model {} on the corpus's {} and {} of vocabulary",
                          o.corpus_epochs, o.corpus_d_model, count_of(int64_t(c.sentences.size()), "sentence"),
                          count_of(c.vocab.size(), "word"));
  return e;
}

// The whole run, from the estimates of the tasks it runs: they run one after
// the other, so times add up and the memory is the larger task's.
inline RunEstimate run_cost(const std::vector<RunEstimate>& tasks) {
  RunEstimate total;
  std::vector<std::string> parts;
  for (const RunEstimate& e : tasks) {
    total.seconds += e.seconds;
    total.bytes = std::max(total.bytes, e.bytes);
    parts.push_back(e.options);
  }
  total.options = fmt::format("{}", fmt::join(parts, " and "));
  return total;
}

}  // namespace sa::ch7
