// Chapter 7, task 1: the chapter's model trained to reverse a
// sequence: the task and the model, one training step taken apart (loss,
// every gradient, a finite-difference spot check, what Adam's first step
// does), the training run one line per epoch, and what the trained heads do.
//
// This file sets the task up from the options and runs its steps in order
// (run_reversal); task_reversal.hpp lists which file holds which step.
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"
#include "07-training/task_reversal.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch7 {

namespace {

// ===========================================================================
// Task 1's steps, in the order run_reversal calls them (this file holds
// the first three and the saving; task_reversal.hpp lists the others).
// ===========================================================================

// The task, the model's shape and Adam's settings, from the options;
// refuses bad ones before anything prints.
ReversalSetup reversal_setup(const ReversalOptions& o) {
  ReversalSetup s;
  s.task.digits = o.digits;
  s.task.vocab = o.vocab;
  s.cfg.vocab = o.vocab;
  s.cfg.max_seq = s.task.sample_len();
  s.cfg.d_model = o.d_model;
  s.cfg.n_heads = o.heads;
  s.cfg.n_layers = o.layers;
  s.cfg.d_ff = 4 * o.d_model;
  s.cfg.validate();  // refuses d_model not divisible by heads, before anything prints
  if (o.sample >= o.test)
    throw UsageError(fmt::format("--sample {} but there {} only {}", o.sample, o.test == 1 ? "is" : "are",
                                 count_of(o.test, "held-out sample")));
  s.adam_cfg.lr = o.lr;
  return s;
}

}  // namespace

void check_reversal_options(const ReversalOptions& o) { reversal_setup(o); }

std::vector<CheckpointTarget> reversal_checkpoints(const ReversalOptions& o) {
  const ReversalSetup setup = reversal_setup(o);
  uint64_t token_bytes = 0;
  for (int64_t id = 0; id < o.vocab; ++id) token_bytes += token_label(id).size() + 1;
  return {{o.checkpoint_dir + "/reversal.safetensors", checkpoint_size_bound(setup.cfg, token_bytes)}};
}

// The tokens of held-out sample `sample`, as the figures and tables label them.
std::vector<std::string> sample_labels(int64_t sample, const ReversalData& test, int64_t T) {
  std::vector<std::string> labels;
  for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(sample)[size_t(p)]));
  return labels;
}

namespace {

void print_reversal_title(const ReversalOptions& o, uint64_t seed) {
  fmt::print("Task 1: reversal of {}, vocabulary {}, d_model {}, {}, {}, batch {}, Adam lr {}, {}, seed {}{}\n",
             count_of(o.digits, "token"), o.vocab, o.d_model, count_of(o.heads, "head"), count_of(o.layers, "layer"),
             o.batch, o.lr, count_of(o.epochs, "epoch"), seed,
             o.dropout > 0 ? fmt::format(", attention dropout {}", o.dropout) : "");
}

// Step "The task: reverse a sequence".
void step_the_task(const ReversalOptions& o, const ReversalTask& task, const ReversalData& train) {
  const int64_t T = task.input_len(), D = task.digits;
  say(fmt::format("A sample is {} from 2..{}, the separator SEP (token 1), and the same tokens "
                  "reversed. The model reads all but the last token and predicts the next one at every "
                  "position; {}.",
                  count_of(D, "random token"), o.vocab - 1,
                  D == 1 ? std::string("only the prediction after SEP counts")
                         : fmt::format("only the {} predictions after SEP count", D)));
  for (int64_t i = 0; i < std::min<int64_t>(3, o.train); ++i) {
    const auto s = train.sample(i);
    fmt::print("  sample {}  {}\n", i, join_tokens(s));
  }
  std::vector<int64_t> ids, targets;
  const std::vector<int64_t> first{0};
  make_batch(train, first, task, ids, targets);
  std::vector<std::string> shown_targets;
  for (int64_t t : targets) shown_targets.push_back(t == kIgnore ? "-" : token_label(t));
  fmt::print("  input     {}\n", join_tokens(ids));
  fmt::print("  target    {}    (- = kIgnore: not in the loss)\n", fmt::join(shown_targets, " "));
  print_shape("training set", {o.train, task.sample_len()});
  print_shape("held-out set", {o.test, task.sample_len()});
  print_shape("one batch of inputs", {std::min(o.batch, o.train), T}, "(batch, seq)");
}

// Step "The model and its parameters".
void step_the_model(const ReversalOptions& o, const ReversalSetup& setup, const TinyTransformer& model) {
  const ModelConfig& cfg = setup.cfg;
  const int64_t T = setup.task.input_len();
  fmt::print("  ids -> token embedding + position embedding   (batch, {}, {})\n", T, o.d_model);
  fmt::print("  {} x pre-norm block:\n", o.layers);
  fmt::print("        x = x + W_o attention(LayerNorm(x) [W_q | W_k | W_v])   causal, {} of d_k {}\n",
             count_of(o.heads, "head"), cfg.d_k());
  fmt::print("        x = x + W2 GELU(W1 LayerNorm(x) + b1) + b2               d_ff {}\n", cfg.d_ff);
  fmt::print("  -> LayerNorm -> linear head                        logits (batch, {}, {})\n", T, o.vocab);
  const std::vector<Shape> shapes = tensor_shapes(model.params);
  size_t k = 0;
  for_each_tensor(model.params, [&](const std::string& name, std::span<const float> t) {
    const Shape& shape = shapes[k++];
    if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;  // one block is enough
    fmt::print("  {:<20} {:<10} {:>6}\n", name, shape_str(shape), t.size());
  });
  if (o.layers == 2) fmt::print("  (blocks.1 the same)\n");
  if (o.layers > 2) fmt::print("  (blocks.1 .. blocks.{} the same)\n", o.layers - 1);
  fmt::print("  {:<31} {:>6} parameters\n", "total", parameter_count(model.params));
  say("Drawn from the generator in the order the PyTorch twin (tests/reference/ch07_training.py) creates "
      "them: same seed, same initial weights, bit for bit. Attention weights start as N(0, 0.02^2), so "
      "every score is near 0 and every head starts out almost uniform.");
}

// Step "Before training": the untrained model on the held-out set. Returns
// the heads' weights on the shown sample, for the before/after figure.
std::vector<plot::Heatmap> step_before_training(const ReversalOptions& o, const ReversalTask& task,
                                                TinyTransformer& model, const ReversalData& test) {
  const int64_t T = task.input_len(), D = task.digits;
  std::vector<int64_t> ids, targets;
  const Score untrained = evaluate(model, test, task, ids, targets);
  const std::vector<plot::Heatmap> untrained_panels = heatmap_panels(model, o.sample, sample_labels(o.sample, test, T));
  print_shape("logits", {o.test, D, o.vocab}, "(batch, reversed positions, vocab), the held-out set in one forward");
  fmt::print("  held-out loss {:.4f}   (a uniform guess over the {} tokens: ln {} = {:.4f})\n", untrained.loss,
             o.vocab, o.vocab, std::log(double(o.vocab)));
  fmt::print("  held-out token accuracy {:.2f}%   (chance: {:.2f}%{})\n", untrained.percent(), 100.0 / double(o.vocab - 2),
             o.vocab == 3 ? ", one digit value to write" : "");
  const Matrix w = head_weights(model, 0, o.sample, 0);
  fmt::print("  layer 0, head 0, query {} (the first reversed prediction) attends to keys 0..{}:\n", D, D);
  fmt::print("    {}\n", format_row(w.leftCols(D + 1), D));
  say(fmt::format("Close to 1/{} = {:.4f} each: the causal mask lets query {} see {} keys, and the scores "
                  "are all near zero.",
                  D + 1, 1.0 / double(D + 1), D, D + 1));
  return untrained_panels;
}

// Step "Save the trained model: a checkpoint".
void step_save_checkpoint(const ReversalOptions& o, uint64_t seed, const ReversalSetup& setup, TinyTransformer& model,
                          const ReversalData& test, const Score& trained) {
  const ReversalTask& task = setup.task;
  Checkpoint ckpt;
  ckpt.config = setup.cfg;
  for (int64_t id = 0; id < o.vocab; ++id) ckpt.tokens.push_back(token_label(id));
  ckpt.note = fmt::format("task 1, reversal of {}: {} from seed {}, held-out token accuracy {:.2f}%",
                          count_of(task.digits, "token"), count_of(o.epochs, "epoch"), seed, trained.percent());
  ckpt.params = model.params;
  say("A safetensors file, which PyTorch and the Hugging Face tools read: the length of a JSON header that "
      "gives each tensor's name, dtype, shape and place, and holds the configuration, the vocabulary, a note "
      "and CRC-32s; then the parameters as little-endian float32. Reading it back checks each of those "
      "before it trusts a single size (checkpoint.hpp).");
  // The held-out set as one batch, as evaluate lays it out: the logits of
  // the model saved and of the model read back are compared on it.
  std::vector<int64_t> all(size_t(o.test)), test_ids, test_targets;
  for (int64_t i = 0; i < o.test; ++i) all[size_t(i)] = i;
  make_batch(test, all, task, test_ids, test_targets);
  save_and_verify(ckpt, o.checkpoint_dir + "/reversal.safetensors", model, test_ids, o.test);
  const auto s = test.sample(o.sample);
  fmt::print("  look at it:  {} --checkpoint {} --text \"{}\" --layer 0 --head 0\n",
             shown_path(sibling_program("07-training-analyze")),
             shown_path(o.checkpoint_dir + "/reversal.safetensors"), join_tokens(s.first(size_t(task.input_len()))));
}

}  // namespace

void run_reversal(const ReversalOptions& o, const Cli& cli, Figures& figures, Steps& next_step) {
  const ReversalSetup setup = reversal_setup(o);
  const int64_t T = setup.task.input_len(), D = setup.task.digits;
  print_reversal_title(o, cli.seed);

  // One generator, used in the PyTorch twin's order: model, training data,
  // held-out data, then one permutation per epoch.
  Generator gen(cli.seed);
  TinyTransformer model(setup.cfg, gen);
  const ReversalData train = make_reversal_data(gen, o.train, setup.task);
  const ReversalData test = make_reversal_data(gen, o.test, setup.task);

  next_step("The task: reverse a sequence");
  step_the_task(o, setup.task, train);
  next_step("The model and its parameters");
  step_the_model(o, setup, model);
  next_step("Before training");
  const std::vector<plot::Heatmap> untrained_panels = step_before_training(o, setup.task, model, test);
  next_step("One training step, taken apart");
  show_one_training_step(o, cli.seed, setup, train);
  next_step("Training");
  const std::vector<EpochRecord> history = step_training(o, setup, gen, model, train, test);
  next_step("The trained model on unseen sequences");
  show_generation(model, test, o.test, o.sample, D);
  next_step("What each head learned");
  const LearnedHeads learned = step_what_each_head_learned(o, setup.task, model, test);
  next_step("Save the trained model: a checkpoint");
  step_save_checkpoint(o, cli.seed, setup, model, test, learned.trained);
  next_step("Three ways to say where a token is");
  const std::vector<PositionRun> position_runs = step_position_encodings(o, cli.seed, setup, train, test);

  figures.heading();
  draw_reversal_figures(figures, o, model, test, T, D, untrained_panels, history, learned.heads);
  draw_ablation_and_position_figures(figures, o.vocab, learned.trained, learned.ablations, position_runs);
}

}  // namespace sa::ch7
