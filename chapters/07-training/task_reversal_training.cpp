// Chapter 7, task 1, steps "One training step, taken apart" (on a twin of
// the model: the loss, every gradient, a finite-difference spot check, what
// Adam's first step does) and "Training" (the real run, one line per epoch).
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"
#include "07-training/task_reversal.hpp"

#include "sa/gradcheck.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa::ch7 {

namespace {

// Step "One training step, taken apart", part 1: the gradient backward
// left in each tensor (block 0 and the tensors outside the blocks).
void print_gradients(const TinyTransformer& demo) {
  say("backward: the forward's layers in reverse order, each one's gradient from its cache. Cross-entropy "
      "gives dlogits = (softmax - onehot) / n on the counted rows and 0 on the others; the residual "
      "stream adds each block's branch gradient to the gradient passing straight through.");
  fmt::print("  {:<20} {:>8} {:>12}\n", "gradient of", "values", "largest |g|");
  for_each_tensor(demo.grads, [&](const std::string& name, std::span<const float> g) {
    if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;
    float largest = 0;
    for (float x : g) largest = std::max(largest, std::abs(x));
    fmt::print("  {:<20} {:>8} {:>12.3e}\n", name, g.size(), largest);
  });
}

// Part 2: a finite-difference spot check: in a few tensors, the weight with
// the largest gradient.
void spot_check_gradients(TinyTransformer& demo, const std::vector<int64_t>& ids, const std::vector<int64_t>& targets,
                          int64_t B) {
  say("Spot check: move one weight by +-h (h = 1e-2) and compare the change of the loss with the "
      "gradient backward computed. In each tensor below, the weight with the largest gradient:");
  std::vector<std::string> names;
  std::vector<std::span<float>> weights, gradients;
  for_each_tensor(demo.params, [&](const std::string& n, std::span<float> t) {
    names.push_back(n);
    weights.push_back(t);
  });
  for_each_tensor(demo.grads, [&](const std::string&, std::span<float> t) { gradients.push_back(t); });
  demo.forward(ids, B);
  const float loss = demo.loss(targets);
  double largest_difference = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] != "tok" && names[k] != "blocks.0.qkv.W" && names[k] != "blocks.1.W_o.W" &&
        names[k] != "blocks.1.ln2.gamma" && names[k] != "head.b")
      continue;
    size_t at = 0;
    for (size_t i = 0; i < gradients[k].size(); ++i)
      if (std::abs(gradients[k][i]) > std::abs(gradients[k][at])) at = i;
    const double numeric = central_difference(weights[k][at], 1e-2f, [&] {
      demo.forward(ids, B);
      return double(demo.loss(targets));
    });
    fmt::print("  {:<20} entry {:4}  backward {:+.6f}   (L(w+h) - L(w-h)) / 2h = {:+.6f}\n", names[k], at,
               gradients[k][at], numeric);
    largest_difference = std::max(largest_difference, std::abs(numeric - double(gradients[k][at])));
  }
  // float32 numbers near the loss are `spacing` apart: each of the two
  // losses is off by up to half of it, and the difference is divided by 2h.
  const double spacing = double(std::nextafter(loss, INFINITY) - loss);
  const double loss_rounding = spacing / (2 * 1e-2);
  // Which digits of the differences come out depends on the CPU (the loss's
  // last bit does), so they are printed against the bound they meet.
  say(fmt::format("The loss, {:.3f}, is a float32 number, and float32 numbers near it are {:.1e} apart; that "
                  "rounding divided by 2h = 0.02 is {:.1e}. {} The hidden tests check every layer's gradients this "
                  "way, and the whole model's against PyTorch's autograd.",
                  loss, spacing, loss_rounding,
                  largest_difference <= 10 * loss_rounding
                      ? fmt::format("Every difference is below ten times that, {:.1e}: they are the loss's "
                                    "rounding, not the gradients' error.",
                                    10 * loss_rounding)
                      : fmt::format("The largest difference, {:.1e}, is more than ten times that: the rest is "
                                    "the loss's curvature over +-h (terms in h^2 that a central difference does "
                                    "not cancel).",
                                    largest_difference)));
}

// Part 3: what Adam's first step does to the weights, and to the loss on
// the same batch (`loss`: before the step).
void show_adam_first_step(TinyTransformer& demo, Adam& demo_adam, const std::vector<int64_t>& ids,
                          const std::vector<int64_t>& targets, int64_t B, double lr, float loss) {
  demo.forward(ids, B);
  demo.loss(targets);
  demo.backward();
  const Params before = demo.params;
  demo_adam.step();
  // Sort the weights: moved, unmoved with a zero gradient, and unmoved
  // although their gradient was not zero (an lr so small that the step is
  // below half the float32 spacing at the weight: rounding gives it back).
  float largest_move = 0;
  int64_t moved = 0, total = 0, zero_gradient = 0, near_lr = 0;
  float largest_g_off_lr = 0;  // the largest |g| among the weights that moved, but not by lr
  std::vector<std::string> zero_in;  // the tensors holding zero-gradient weights
  std::vector<std::span<const float>> a, b, g;
  std::vector<std::string> names;
  for_each_tensor(before, [&](const std::string& n, std::span<const float> t) {
    names.push_back(n);
    a.push_back(t);
  });
  for_each_tensor(demo.params, [&](const std::string&, std::span<const float> t) { b.push_back(t); });
  for_each_tensor(demo.grads, [&](const std::string&, std::span<const float> t) { g.push_back(t); });
  for (size_t k = 0; k < a.size(); ++k) {
    int64_t zero_here = 0;
    for (size_t i = 0; i < a[k].size(); ++i) {
      const float move = std::abs(b[k][i] - a[k][i]);
      largest_move = std::max(largest_move, move);
      moved += move > 0;
      if (move > 0 && std::abs(move - lr) <= 0.01 * lr)
        ++near_lr;
      else if (move > 0)
        largest_g_off_lr = std::max(largest_g_off_lr, std::abs(g[k][i]));
      zero_here += move == 0 && g[k][i] == 0;
      ++total;
    }
    zero_gradient += zero_here;
    if (zero_here > 0) zero_in.push_back(fmt::format("{} in {}", zero_here, names[k]));
  }
  const int64_t rounded_away = total - moved - zero_gradient;
  fmt::print("  Adam step 1: {} of {} weights moved, the largest by {:.3e} (lr = {})\n", moved, total, largest_move,
             lr);
  say(fmt::format("At step 1 the bias corrections make m/(1-b1) = g and v/(1-b2) = g^2, so a weight moves by "
                  "lr g / (|g| + eps): by lr, whatever its gradient's size, unless |g| is not far above Adam's eps "
                  "= 1e-8. Here {} of the {} weights that moved moved by lr to within 1%{}.",
                  near_lr, moved,
                  near_lr == moved ? ""
                  // (Their |g| itself is not printed: at that size its digits depend on the CPU.)
                  // A step falls short of lr by eps / (|g| + eps): more than 1% below |g| = 99 eps.
                  // A |g| just above 99 eps can still land a hair outside 1% once the step is
                  // rounded to float32 (9.90092e-07 did on an AVX-512 core), so the bound
                  // checked is 100 eps, where eps takes 1% of the step.
                  : largest_g_off_lr < 100 * 1e-8
                      ? fmt::format("; the other {} have |g| below 100 eps = 1e-06, where eps takes 1% of the "
                                    "step or more",
                                    moved - near_lr)
                      : fmt::format("; the other {} moved by another amount, as float32 rounds a step of lr at "
                                    "their weight's size",
                                    moved - near_lr)));
  if (zero_gradient > 0)
    say(fmt::format("{} weights did not move because their gradient is exactly zero ({}): embedding rows of tokens "
                    "absent from the batch, position rows no input reaches, or parameters the loss does not depend "
                    "on.",
                    zero_gradient, fmt::join(zero_in, ", ")));
  if (rounded_away > 0)
    say(fmt::format("{} weights with a non-zero gradient did not move: their step, lr g / (|g| + eps) with "
                    "lr = {}, is less than half the float32 spacing at their value (a |g| far below eps, or a "
                    "tiny lr), so the update rounds back to the old weight.",
                    rounded_away, lr));
  demo.forward(ids, B);
  fmt::print("  loss on the same batch after the step: {:.4f} (was {:.4f})\n", demo.loss(targets), loss);
}

}  // namespace

// Step "One training step, taken apart": on a twin of the model (same seed,
// same weights), so the real training run stays step for step PyTorch's.
void show_one_training_step(const ReversalOptions& o, uint64_t seed, const ReversalSetup& setup,
                            const ReversalData& train) {
  const ReversalTask& task = setup.task;
  const int64_t T = task.input_len(), D = task.digits;
  Generator twin_gen(seed);
  TinyTransformer demo(setup.cfg, twin_gen);
  Adam demo_adam(demo.params, demo.grads, setup.adam_cfg);
  std::vector<int64_t> idx(size_t(std::min(o.batch, o.train))), ids, targets;
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
  make_batch(train, idx, task, ids, targets);
  const int64_t B = int64_t(idx.size());
  demo.forward(ids, B);
  const float loss = demo.loss(targets);
  fmt::print("  forward:  logits (batch, seq, vocab) = ({}, {}, {}), loss {:.4f} over {}\n", B,
             T, o.vocab, loss, count_of(B * D, "counted position"));
  demo.backward();
  print_gradients(demo);
  spot_check_gradients(demo, ids, targets, B);
  show_adam_first_step(demo, demo_adam, ids, targets, B, o.lr, loss);
}

namespace {

// The training run's record: one line per epoch, and when held-out
// accuracy first reached 99%.
struct TrainingRun {
  std::vector<EpochRecord> history;
  std::optional<int64_t> reached_99;
  double reached_99_seconds = 0;
  int64_t steps = 0;
  double seconds = 0;
};

// The real run: o.epochs passes over the training set, each in a fresh
// order drawn from `gen` (the PyTorch twin's), printing one line per epoch.
TrainingRun train_reversal_model(const ReversalOptions& o, const ReversalSetup& setup, Generator& gen,
                                 TinyTransformer& model, const ReversalData& train, const ReversalData& test) {
  const ReversalTask& task = setup.task;
  const int64_t batches = (o.train + o.batch - 1) / o.batch;
  // A fresh Adam for the real run.
  Adam adam(model.params, model.grads, setup.adam_cfg);
  Progress progress(o.epochs, batches);
  TrainingRun run;
  std::vector<int64_t> ids, targets, test_ids, test_targets;
  const auto start = Clock::now();
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    const std::vector<int64_t> perm = gen.randperm(o.train);
    double loss_sum = 0;
    int64_t correct = 0, counted = 0;
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t begin = b * o.batch, end = std::min(o.train, begin + o.batch);
      make_batch(train, std::span<const int64_t>(perm).subspan(size_t(begin), size_t(end - begin)), task, ids,
                 targets);
      const StepStats s = train_step(model, adam, ids, targets, end - begin, {.p = o.dropout, .gen = &gen});
      if (!std::isfinite(s.loss))
        throw std::runtime_error(fmt::format("the loss became {} at epoch {}: training diverged", s.loss, epoch));
      loss_sum += s.loss;
      correct += s.correct;
      counted += s.counted;
      ++run.steps;
      progress.update(epoch, b + 1, seconds_since(start), run.steps);
    }
    const Score held = evaluate(model, test, task, test_ids, test_targets);
    const double elapsed = seconds_since(start);
    run.history.push_back(
        {loss_sum / double(batches), held.loss, 100.0 * double(correct) / double(counted), held.percent(), elapsed});
    progress.clear();
    fmt::print("  epoch {:3}/{}  loss {:.4f}  train {:6.2f}%  held-out {:6.2f}%  {:6.2f} s\n", epoch, o.epochs,
               run.history.back().loss, run.history.back().train_acc, held.percent(), elapsed);
    if (!run.reached_99 && held.percent() >= 99.0) {
      run.reached_99 = epoch;
      run.reached_99_seconds = elapsed;
    }
  }
  run.seconds = seconds_since(start);
  return run;
}

}  // namespace

// Step "Training". Returns the per-epoch record, for the figures.
std::vector<EpochRecord> step_training(const ReversalOptions& o, const ReversalSetup& setup, Generator& gen,
                                       TinyTransformer& model, const ReversalData& train, const ReversalData& test) {
  const int64_t batches = (o.train + o.batch - 1) / o.batch;
  say(fmt::format("{} of {} (the last batch of an epoch has {}). Loss is the mean over "
                  "the epoch's steps; train accuracy is measured on each batch before its update, held-out "
                  "accuracy after the epoch. Token accuracy counts the {}.{}",
                  count_of(o.epochs, "epoch"), count_of(batches, "step"),
                  count_of(o.train - (batches - 1) * o.batch, "sample"),
                  count_of(setup.task.digits, "reversed position"),
                  o.dropout > 0
                      ? fmt::format(" Every step drops attention weights with p = {} (chapter 6), so its loss and "
                                    "train accuracy are those of the model with weights missing; held-out "
                                    "accuracy is measured with dropout off.",
                                    o.dropout)
                      : ""));
  TrainingRun run = train_reversal_model(o, setup, gen, model, train, test);
  if (run.reached_99)
    fmt::print("  held-out accuracy reached 99% at epoch {} ({:.2f} s); {} steps in {:.2f} s, {:.2f} ms a step\n",
               *run.reached_99, run.reached_99_seconds, run.steps, run.seconds, 1e3 * run.seconds / double(run.steps));
  else
    fmt::print("  held-out accuracy did not reach 99% in {}; {} in {:.2f} s\n", count_of(o.epochs, "epoch"),
               count_of(run.steps, "step"), run.seconds);
  return std::move(run.history);
}

}  // namespace sa::ch7
