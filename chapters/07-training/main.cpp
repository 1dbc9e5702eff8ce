// Chapter 7: training a tiny transformer, every backward pass by hand.
//
// Trains the source material's model on sequence reversal: shows the task and the
// model, one training step taken apart (loss, every gradient, a
// finite-difference spot check, what Adam's first step does), the training
// run one line per epoch, and what the trained attention heads do: the
// reversal generated token by token, the per-head analysis, and the
// layers x heads heatmaps before and after training.
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/patterns.hpp"
#include "07-training/reversal.hpp"
#include "07-training/training.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

using namespace sa;

namespace {

struct Options {
  int64_t epochs = 100;
  int64_t batch = 128;
  double lr = 3e-4;
  int64_t train = 5000;
  int64_t test = 500;
  int64_t digits = 6;
  int64_t vocab = 16;
  int64_t d_model = 32;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t sample = 0;
  std::string task = "both";
  std::string corpus;  // default: chapters/07-training/corpus.txt
  std::string text = "the cat sat on the mat";
  int64_t corpus_epochs = 20;
  int64_t corpus_batch = 8;
  double corpus_lr = 3e-3;
  int64_t corpus_d_model = 64;
  int64_t corpus_heads = 4;
  std::string checkpoint_dir;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string token_label(int64_t id) {
  if (id == ReversalTask::kSep) return "SEP";
  if (id == ReversalTask::kPad) return "PAD";
  return std::to_string(id);
}

std::string join_tokens(std::span<const int64_t> ids) {
  std::string s;
  for (int64_t id : ids) {
    if (!s.empty()) s += ' ';
    s += token_label(id);
  }
  return s;
}

std::string bar(double fraction, int width) {
  const int n = int(std::lround(fraction * width));
  return std::string(size_t(std::max(0, n)), '#') + std::string(size_t(std::max(0, width - n)), '.');
}

// The progress line of an epoch, only on a terminal: redrawn in place.
class Progress {
 public:
  Progress(int64_t epochs, int64_t batches) : enabled_(isatty(fileno(stdout)) != 0), epochs_(epochs), batches_(batches) {}
  void update(int64_t epoch, int64_t batch_done, double run_elapsed, int64_t steps_done) {
    if (!enabled_) return;
    const double per_step = run_elapsed / double(std::max<int64_t>(1, steps_done));
    const double eta_epoch = per_step * double(batches_ - batch_done);
    const double eta_run = per_step * double(epochs_ * batches_ - steps_done);
    fmt::print("\r  epoch {:3}/{} [{}] {:2}/{} batches  ETA {:4.1f} s (run {:5.1f} s)\033[K", epoch, epochs_,
               bar(double(batch_done) / double(batches_), 24), batch_done, batches_, eta_epoch, eta_run);
    std::fflush(stdout);
  }
  void clear() {
    if (enabled_) fmt::print("\r\033[K");
  }

 private:
  bool enabled_;
  int64_t epochs_, batches_;
};

struct EpochRecord {
  double loss, test_loss, train_acc, test_acc, seconds;
};

std::vector<plot::Heatmap> heatmap_panels(const TinyTransformer& model, int64_t b, const std::vector<std::string>& labels) {
  std::vector<plot::Heatmap> panels;
  for (int64_t l = 0; l < model.config().n_layers; ++l)
    for (int64_t h = 0; h < model.config().n_heads; ++h) {
      plot::Heatmap p =
          plot::weights_heatmap(fmt::format("layer {}, head {}", l, h), head_weights(model, l, b, h), labels);
      p.xlabel = "key (attended to)";
      p.ylabel = "query (position)";
      p.annotate = false;
      panels.push_back(std::move(p));
    }
  return panels;
}

// Numbered steps across both tasks.
struct Steps {
  int n = 0;
  void operator()(std::string_view title) { step(++n, title); }
};

std::string percent_change(double before, double after) {
  if (before == 0) return "   n/a";
  return fmt::format("{:+6.1f}%", 100.0 * (after - before) / before);
}

// Saves a checkpoint, reads it back and checks that the model read back is
// the model saved: the same bits in every parameter, the same logits.
void save_and_verify(const Checkpoint& ckpt, const std::string& path, TinyTransformer& model,
                     const std::vector<int64_t>& ids, int64_t batch) {
  save_checkpoint(path, ckpt);
  const Checkpoint back = load_checkpoint(path);
  std::vector<std::span<const float>> a, b;
  for_each_tensor(ckpt.params, [&](const std::string&, std::span<const float> t) { a.push_back(t); });
  for_each_tensor(back.params, [&](const std::string&, std::span<const float> t) { b.push_back(t); });
  int64_t same = 0, total = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      same += std::bit_cast<uint32_t>(a[k][i]) == std::bit_cast<uint32_t>(b[k][i]);
      ++total;
    }
  const Matrix before = model.forward(ids, batch);
  auto reloaded = model_from(back);
  const Matrix after = reloaded->forward(ids, batch);
  const bool logits_same = before.rows() == after.rows() && (before.array() == after.array()).all();
  std::error_code ec;
  fmt::print("  saved  {}  ({} bytes: header, {} token strings, {} float32 parameters, CRC-32)\n", shown_path(path),
             std::filesystem::file_size(path, ec), back.tokens.size(), parameter_count(back.params));
  fmt::print("  read back: {} of {} parameters identical bit for bit; logits of {} sequence{} {}\n", same, total, batch,
             batch == 1 ? "" : "s", logits_same ? "identical" : "DIFFERENT");
  if (same != total || !logits_same) throw std::runtime_error("the checkpoint read back is not the model saved");
}

// One line of the pattern analyzer's table: the source material's four numbers with a
// window of 3 and the class they give, then the window-1 variant.
void print_analyzer_row(const std::string& who, const std::string& when, const Matrix& P) {
  const PatternStats st = attention_pattern(P, 3), near = attention_pattern(P, 1);
  fmt::print("  {:<18} {:<9}  {:7.3f} {:6.3f} {:8.3f} {:8.3f}  {:<15}  {:8.3f}  {}\n", who, when, st.entropy, st.focus,
             st.diagonal, st.local, pattern_name(classify_pattern(st)), near.local,
             pattern_name(classify_pattern(near)));
}

void run_reversal(const Options& o, const Cli& cli, Figures& figures, Steps& next_step);
// Task 2's input, read and checked before anything runs: a bad --corpus or
// --text must not wait for task 1's 25 seconds to be refused.
struct CorpusInput {
  Corpus corpus;
  std::vector<int64_t> text_ids;  // --text in the corpus's vocabulary
};

CorpusInput read_corpus_input(const Options& o) {
  CorpusInput in{load_corpus(o.corpus), {}};
  std::vector<std::string> words;
  for (int64_t i = 0; i < in.corpus.vocab.size(); ++i) words.push_back(in.corpus.vocab.word(i));
  in.text_ids = encode_text(o.text, words);
  const int64_t n = int64_t(in.text_ids.size());
  if (n < 2) throw UsageError(fmt::format("--text '{}' has {} token; give at least two", o.text, n));
  if (n > in.corpus.max_len() - 1)
    throw UsageError(fmt::format("--text has {} tokens, but the models are trained on inputs of at most {}", n,
                                 in.corpus.max_len() - 1));
  if (int64_t(in.corpus.sentences.size()) < 16)
    throw UsageError(fmt::format("corpus '{}' has {} sentences; task 2 needs at least 16 (every 8th is held out)",
                                 o.corpus, in.corpus.sentences.size()));
  return in;
}

void run_corpus(const Options& o, const CorpusInput& input, const Cli& cli, Figures& figures, Steps& next_step);

void run(int argc, char** argv) {
  Options o;
  Cli cli("07-training",
          "Chapter 7: train a tiny transformer (token + position embeddings, pre-norm blocks with multi-head "
          "attention and a GELU feed-forward, Adam) with every backward pass written by hand, on two tasks: "
          "sequence reversal, and next-token prediction on a small sentence corpus (single-head, multi-head "
          "bidirectional and multi-head causal); then look at what the attention heads learned, and save "
          "checkpoints for 07-training-analyze.");
  cli.add("--task", &o.task, "reversal, corpus or both");
  cli.add("--epochs", &o.epochs, "reversal: passes over the training set", IntRange{1, 100000});
  cli.add("--batch", &o.batch, "reversal: sequences per training step", IntRange{1, 100000});
  cli.add("--lr", &o.lr, "reversal: Adam's learning rate", RealRange{0.0, 1.0, true, false});
  cli.add("--train", &o.train, "reversal: training samples", IntRange{1, 1000000});
  cli.add("--test", &o.test, "reversal: held-out samples", IntRange{1, 100000});
  cli.add("--digits", &o.digits, "reversal: tokens to reverse in a sample", IntRange{1, 64});
  cli.add("--vocab", &o.vocab, "reversal: vocabulary size (0 = PAD and 1 = SEP are reserved)", IntRange{3, 1000});
  cli.add("--d-model", &o.d_model, "reversal: width of a token vector", IntRange{1, 1024});
  cli.add("--heads", &o.heads, "reversal: attention heads per layer (must divide d_model)", IntRange{1, 64});
  cli.add("--layers", &o.layers, "reversal: transformer blocks", IntRange{1, 16});
  cli.add("--sample", &o.sample, "reversal: held-out sample shown and drawn", IntRange{0, 100000});
  cli.add("--corpus", &o.corpus,
          "corpus: the sentence file, one sentence a line; a text file of at most 1 MiB, 10000 sentences "
          "and 32 words a sentence (default: chapters/07-training/corpus.txt)");
  cli.add("--text", &o.text, "corpus: the sentence whose attention is shown and drawn");
  cli.add("--corpus-epochs", &o.corpus_epochs, "corpus: passes over the training sentences", IntRange{1, 100000});
  cli.add("--corpus-batch", &o.corpus_batch, "corpus: sentences per training step (at most)", IntRange{1, 100000});
  cli.add("--corpus-lr", &o.corpus_lr, "corpus: Adam's learning rate", RealRange{0.0, 1.0, true, false});
  cli.add("--corpus-d-model", &o.corpus_d_model, "corpus: width of a token vector", IntRange{1, 1024});
  cli.add("--corpus-heads", &o.corpus_heads, "corpus: heads of the two multi-head models (must divide d_model)",
          IntRange{2, 64});
  o.checkpoint_dir = default_checkpoint_dir();
  cli.add("--checkpoint-dir", &o.checkpoint_dir, "folder the checkpoints are saved to");
  cli.parse(argc, argv);
  require_writable_dir("--checkpoint-dir", o.checkpoint_dir);  // before 20 s of training, not after
  if (o.task != "reversal" && o.task != "corpus" && o.task != "both")
    throw UsageError(fmt::format("--task must be reversal, corpus or both, got '{}'", o.task));
  if (o.corpus.empty()) o.corpus = std::string(SA_SOURCE_DIR) + "/chapters/07-training/corpus.txt";
  if (o.corpus_d_model % o.corpus_heads != 0)
    throw UsageError(fmt::format("--corpus-d-model {} is not divisible by --corpus-heads {}", o.corpus_d_model,
                                 o.corpus_heads));

  std::optional<CorpusInput> corpus_input;
  if (o.task != "reversal") corpus_input = read_corpus_input(o);

  Figures figures(cli);
  Steps steps;
  chapter_title("Chapter 7: training a tiny transformer, every backward pass by hand");
  if (o.task != "corpus") run_reversal(o, cli, figures, steps);
  if (corpus_input) run_corpus(o, *corpus_input, cli, figures, steps);
  figures.summary();
}

void run_reversal(const Options& o, const Cli& cli, Figures& figures, Steps& next_step) {
  ReversalTask task;
  task.digits = o.digits;
  task.vocab = o.vocab;
  ModelConfig cfg;
  cfg.vocab = o.vocab;
  cfg.max_seq = task.sample_len();
  cfg.d_model = o.d_model;
  cfg.n_heads = o.heads;
  cfg.n_layers = o.layers;
  cfg.d_ff = 4 * o.d_model;
  cfg.validate();  // refuses d_model not divisible by heads, before anything prints
  if (o.sample >= o.test)
    throw UsageError(fmt::format("--sample {} but there are only {} held-out samples", o.sample, o.test));
  AdamConfig adam_cfg;
  adam_cfg.lr = o.lr;

  const int64_t T = task.input_len(), D = task.digits;
  fmt::print("Task 1: reversal of {} tokens, vocabulary {}, d_model {}, {} heads, {} layers, batch {}, Adam lr {}, "
             "{} epochs, seed {}\n",
             D, o.vocab, o.d_model, o.heads, o.layers, o.batch, o.lr, o.epochs, cli.seed);

  // One generator, used in the PyTorch twin's order: model, training data,
  // held-out data, then one permutation per epoch.
  Generator gen(cli.seed);
  TinyTransformer model(cfg, gen);
  const ReversalData train = make_reversal_data(gen, o.train, task);
  const ReversalData test = make_reversal_data(gen, o.test, task);

  // ---------------------------------------------------------------------
  next_step("The task: reverse a sequence");
  say(fmt::format("A sample is {} random tokens from 2..{}, the separator SEP (token 1), and the same tokens "
                  "reversed. The model reads all but the last token and predicts the next one at every "
                  "position; only the {} predictions after SEP count.",
                  D, o.vocab - 1, D));
  for (int64_t i = 0; i < std::min<int64_t>(3, o.train); ++i) {
    const auto s = train.sample(i);
    fmt::print("  sample {}  {}\n", i, join_tokens(s));
  }
  std::vector<int64_t> ids, targets;
  {
    const std::vector<int64_t> first{0};
    make_batch(train, first, task, ids, targets);
    std::vector<std::string> shown_targets;
    for (int64_t t : targets) shown_targets.push_back(t == kIgnore ? "-" : token_label(t));
    fmt::print("  input     {}\n", join_tokens(ids));
    fmt::print("  target    {}    (- = kIgnore: not in the loss)\n", fmt::join(shown_targets, " "));
  }
  print_shape("training set", {o.train, task.sample_len()});
  print_shape("held-out set", {o.test, task.sample_len()});
  print_shape("one batch of inputs", {o.batch, T}, "(batch, seq)");

  // ---------------------------------------------------------------------
  next_step("The model and its parameters");
  fmt::print("  ids -> token embedding + position embedding   (batch, {}, {})\n", T, o.d_model);
  fmt::print("  {} x pre-norm block:\n", o.layers);
  fmt::print("        x = x + W_o attention(LayerNorm(x) [W_q | W_k | W_v])   causal, {} heads of d_k {}\n", o.heads,
             cfg.d_k());
  fmt::print("        x = x + W2 GELU(W1 LayerNorm(x) + b1) + b2               d_ff {}\n", cfg.d_ff);
  fmt::print("  -> LayerNorm -> linear head                        logits (batch, {}, {})\n", T, o.vocab);
  {
    const std::vector<Shape> shapes = tensor_shapes(model.params);
    size_t k = 0;
    for_each_tensor(model.params, [&](const std::string& name, std::span<const float> t) {
      const Shape& shape = shapes[k++];
      if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;  // one block is enough
      fmt::print("  {:<20} {:<10} {:>6}\n", name, shape_str(shape), t.size());
    });
  }
  if (o.layers == 2) fmt::print("  (blocks.1 the same)\n");
  if (o.layers > 2) fmt::print("  (blocks.1 .. blocks.{} the same)\n", o.layers - 1);
  fmt::print("  {:<31} {:>6} parameters\n", "total", parameter_count(model.params));
  say("Drawn from the generator in the order the PyTorch twin (tests/reference/ch07_training.py) creates "
      "them: same seed, same initial weights, bit for bit. Attention weights start as N(0, 0.02^2), so "
      "every score is near 0 and every head starts out almost uniform.");

  // ---------------------------------------------------------------------
  next_step("Before training");
  const Score untrained = evaluate(model, test, task, ids, targets);
  const std::vector<plot::Heatmap> untrained_panels = [&] {
    std::vector<std::string> labels;
    for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(o.sample)[size_t(p)]));
    return heatmap_panels(model, o.sample, labels);
  }();
  print_shape("logits", {o.test, D, o.vocab}, "(batch, reversed positions, vocab), the held-out set in one forward");
  fmt::print("  held-out loss {:.4f}   (a uniform guess over the {} tokens: ln {} = {:.4f})\n", untrained.loss,
             o.vocab, o.vocab, std::log(double(o.vocab)));
  fmt::print("  held-out token accuracy {:.2f}%   (chance: {:.2f}%)\n", untrained.percent(), 100.0 / double(o.vocab - 2));
  {
    const Matrix w = head_weights(model, 0, o.sample, 0);
    fmt::print("  layer 0, head 0, query {} (the first reversed prediction) attends to keys 0..{}:\n", D, D);
    fmt::print("    [{}]\n", fmt::join(std::vector<float>(w.row(D).data(), w.row(D).data() + D + 1), ", "));
    say(fmt::format("Close to 1/{} = {:.4f} each: the causal mask lets query {} see {} keys, and the scores "
                    "are all near zero.",
                    D + 1, 1.0 / double(D + 1), D, D + 1));
  }

  // ---------------------------------------------------------------------
  next_step("One training step, taken apart");
  {
    // A twin of the model (same seed, same weights), so the real training
    // run below stays step for step the same as PyTorch's.
    Generator twin_gen(cli.seed);
    TinyTransformer demo(cfg, twin_gen);
    Adam demo_adam(demo.params, demo.grads, adam_cfg);
    std::vector<int64_t> idx(size_t(std::min(o.batch, o.train)));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
    make_batch(train, idx, task, ids, targets);
    const int64_t B = int64_t(idx.size());
    demo.forward(ids, B);
    const float loss = demo.loss(targets);
    fmt::print("  forward:  logits (batch, seq, vocab) = ({}, {}, {}), loss {:.4f} over {} counted positions\n", B,
               T, o.vocab, loss, B * D);
    demo.backward();
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

    // A finite-difference spot check: in a few tensors, the weight with the
    // largest gradient.
    say("Spot check: move one weight by +-h (h = 1e-2) and compare the change of the loss with the "
        "gradient backward computed. In each tensor below, the weight with the largest gradient:");
    std::vector<std::string> names;
    std::vector<std::span<float>> weights, gradients;
    for_each_tensor(demo.params, [&](const std::string& n, std::span<float> t) {
      names.push_back(n);
      weights.push_back(t);
    });
    for_each_tensor(demo.grads, [&](const std::string&, std::span<float> t) { gradients.push_back(t); });
    for (size_t k = 0; k < names.size(); ++k) {
      if (names[k] != "tok" && names[k] != "blocks.0.qkv.W" && names[k] != "blocks.1.W_o.W" &&
          names[k] != "blocks.1.ln2.gamma" && names[k] != "head.b")
        continue;
      size_t at = 0;
      for (size_t i = 0; i < gradients[k].size(); ++i)
        if (std::abs(gradients[k][i]) > std::abs(gradients[k][at])) at = i;
      float& w = weights[k][at];
      const float old = w, h = 1e-2f;
      w = old + h;
      demo.forward(ids, B);
      const double plus = demo.loss(targets);
      w = old - h;
      demo.forward(ids, B);
      const double minus = demo.loss(targets);
      w = old;
      fmt::print("  {:<20} entry {:4}  backward {:+.6f}   (L(w+h) - L(w-h)) / 2h = {:+.6f}\n", names[k], at,
                 gradients[k][at], (plus - minus) / (2.0 * h));
    }
    say("They agree to about 1e-5: the loss is a float32 number near 3 (steps of 2.4e-7), and dividing "
        "its rounding by 2h = 0.02 leaves differences of that size. The hidden tests check every layer's "
        "gradients this way, and the whole model's against PyTorch's autograd.");
    demo.forward(ids, B);
    demo.loss(targets);
    demo.backward();
    const Params before = demo.params;
    demo_adam.step();
    float largest_move = 0;
    int64_t moved = 0, total = 0;
    std::vector<std::span<const float>> a, b;
    for_each_tensor(before, [&](const std::string&, std::span<const float> t) { a.push_back(t); });
    for_each_tensor(demo.params, [&](const std::string&, std::span<const float> t) { b.push_back(t); });
    for (size_t k = 0; k < a.size(); ++k)
      for (size_t i = 0; i < a[k].size(); ++i) {
        const float move = std::abs(b[k][i] - a[k][i]);
        largest_move = std::max(largest_move, move);
        moved += move > 0;
        ++total;
      }
    fmt::print("  Adam step 1: {} of {} weights moved, the largest by {:.3e} (lr = {})\n", moved, total, largest_move,
               o.lr);
    say("At step 1 the bias corrections make m/(1-b1) = g and v/(1-b2) = g^2, so every weight with a "
        "non-zero gradient moves by almost exactly lr, whatever its gradient's size. The weights that did "
        "not move had exactly zero gradient: embedding rows of tokens absent from the batch, and the "
        "position row the inputs never reach.");
    demo.forward(ids, B);
    fmt::print("  loss on the same batch after the step: {:.4f} (was {:.4f})\n", demo.loss(targets), loss);
  }

  // ---------------------------------------------------------------------
  next_step("Training");
  const int64_t batches = (o.train + o.batch - 1) / o.batch;
  say(fmt::format("{} epochs of {} steps (the last batch of an epoch has {} samples). Loss is the mean over "
                  "the epoch's steps; train accuracy is measured on each batch before its update, held-out "
                  "accuracy after the epoch. Token accuracy counts the {} reversed positions.",
                  o.epochs, batches, o.train - (batches - 1) * o.batch, D));
  // A fresh Adam for the real run.
  Adam adam(model.params, model.grads, adam_cfg);
  Progress progress(o.epochs, batches);
  std::vector<EpochRecord> history;
  std::optional<int64_t> reached_99;
  double reached_99_seconds = 0;
  std::vector<int64_t> test_ids, test_targets;
  const auto start = Clock::now();
  int64_t steps = 0;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    const std::vector<int64_t> perm = gen.randperm(o.train);
    double loss_sum = 0;
    int64_t correct = 0, counted = 0;
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t begin = b * o.batch, end = std::min(o.train, begin + o.batch);
      make_batch(train, std::span<const int64_t>(perm).subspan(size_t(begin), size_t(end - begin)), task, ids,
                 targets);
      const StepStats s = train_step(model, adam, ids, targets, end - begin);
      if (!std::isfinite(s.loss))
        throw std::runtime_error(fmt::format("the loss became {} at epoch {}: training diverged", s.loss, epoch));
      loss_sum += s.loss;
      correct += s.correct;
      counted += s.counted;
      ++steps;
      progress.update(epoch, b + 1, seconds_since(start), steps);
    }
    const Score held = evaluate(model, test, task, test_ids, test_targets);
    const double elapsed = seconds_since(start);
    history.push_back(
        {loss_sum / double(batches), held.loss, 100.0 * double(correct) / double(counted), held.percent(), elapsed});
    progress.clear();
    fmt::print("  epoch {:3}/{}  loss {:.4f}  train {:6.2f}%  held-out {:6.2f}%  {:6.2f} s\n", epoch, o.epochs,
               history.back().loss, history.back().train_acc, held.percent(), elapsed);
    if (!reached_99 && held.percent() >= 99.0) {
      reached_99 = epoch;
      reached_99_seconds = elapsed;
    }
  }
  const double train_seconds = seconds_since(start);
  if (reached_99)
    fmt::print("  held-out accuracy reached 99% at epoch {} ({:.2f} s); {} steps in {:.2f} s, {:.2f} ms a step\n",
               *reached_99, reached_99_seconds, steps, train_seconds, 1e3 * train_seconds / double(steps));
  else
    fmt::print("  held-out accuracy did not reach 99% in {} epochs; {} steps in {:.2f} s\n", o.epochs, steps,
               train_seconds);

  // ---------------------------------------------------------------------
  next_step("The trained model on unseen sequences");
  {
    // Greedy generation, one token at a time: SEP and everything after it
    // come from the model itself, not from the data.
    std::vector<int64_t> prompt;
    for (int64_t i = 0; i < o.test; ++i) {
      const auto s = test.sample(i);
      prompt.insert(prompt.end(), s.begin(), s.begin() + D + 1);
    }
    std::vector<int64_t> seqs = prompt;
    for (int64_t k = 0; k < D; ++k) {
      const int64_t len = D + 1 + k;
      const Matrix& logits = model.forward(seqs, o.test);
      std::vector<int64_t> next;
      for (int64_t i = 0; i < o.test; ++i) {
        Eigen::Index best = 0;
        logits.row(i * len + len - 1).maxCoeff(&best);
        next.push_back(int64_t(best));
      }
      std::vector<int64_t> grown;
      for (int64_t i = 0; i < o.test; ++i) {
        grown.insert(grown.end(), seqs.begin() + i * len, seqs.begin() + (i + 1) * len);
        grown.push_back(next[size_t(i)]);
      }
      seqs = std::move(grown);
    }
    int64_t exact = 0;
    const int64_t full = D * 2 + 1;
    for (int64_t i = 0; i < o.test; ++i) {
      const auto s = test.sample(i);
      exact += std::equal(s.begin(), s.end(), seqs.begin() + i * full);
    }
    for (int64_t i = o.sample; i < std::min(o.test, o.sample + 3); ++i) {
      const auto s = test.sample(i);
      const std::span<const int64_t> mine(seqs.data() + i * full, size_t(full));
      fmt::print("  held-out {:3}: {}  ->  {}   {}\n", i, join_tokens(s.first(size_t(D + 1))),
                 join_tokens(mine.subspan(size_t(D + 1))),
                 std::equal(s.begin(), s.end(), mine.begin()) ? "right" : "WRONG");
    }
    fmt::print("  {} of {} held-out sequences reversed exactly ({:.1f}%), generating one token at a time\n", exact,
               o.test, 100.0 * double(exact) / double(o.test));
  }

  // ---------------------------------------------------------------------
  next_step("What each head learned");
  const Score trained = evaluate(model, test, task, test_ids, test_targets);
  const std::vector<HeadScore> heads = analyze_heads(model, o.test, task);
  say(fmt::format("For every query p after SEP, where does the head put its largest weight? On the mirror "
                  "position {} - p (the input token equal to the query's own, the source material's check), or on the "
                  "source position {} - p (the token the query has to write next)? Over all {} held-out "
                  "samples:",
                  2 * D, 2 * D - 1, o.test));
  fmt::print("  {:<16} {:>8}  {:<20}  {:>8}  {:<20}\n", "", "mirror", "", "source", "");
  for (const HeadScore& s : heads)
    fmt::print("  layer {}, head {}  {:7.1f}%  {}  {:7.1f}%  {}\n", s.layer, s.head, 100 * s.mirror,
               bar(s.mirror, 20), 100 * s.source, bar(s.source, 20));
  {
    const HeadScore* best = &heads.front();
    for (const HeadScore& s : heads)
      if (s.source > best->source) best = &s;
    fmt::print("  held-out token accuracy {:.2f}%\n", trained.percent());
    // A head that finds the source most of the time has learned to copy;
    // after too few epochs none has, and the heatmap shows no anti-diagonal.
    if (best->source >= 0.9)
      say(fmt::format("Layer {}, head {} is the copying head: it attends to the source position {:.1f}% of "
                      "the time. In the heatmap below it draws the anti-diagonal that reversal needs.",
                      best->layer, best->head, 100 * best->source));
    else
      say(fmt::format("No head copies yet: the best, layer {}, head {}, attends to the source position only "
                      "{:.1f}% of the time, and the heatmap below has no clear anti-diagonal. More epochs "
                      "(--epochs) let the heads learn it.",
                      best->layer, best->head, 100 * best->source));
    const Matrix w = head_weights(model, best->layer, o.sample, best->head);
    std::vector<std::string> labels;
    for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(o.sample)[size_t(p)]));
    print_labelled(fmt::format("layer {}, head {}, held-out sample {}", best->layer, best->head, o.sample), w,
                   labels, labels, {.precision = 2, .max_rows = 16, .max_cols = 16});
    say(fmt::format("The pattern analyzer on the same sample, every head (the numbers and classes are "
                    "explained with task 2's table; 'uniform' is a head that learned nothing):"));
    fmt::print("  {:<18} {:<9}  {:>7} {:>6} {:>8} {:>8}  {:<15}  {:>8}  {}\n", "head", "", "entropy", "focus",
               "diagonal", "local 3", "class", "local 1", "class (window 1)");
    print_analyzer_row("uniform, causal", "", uniform_weights(T, true));
    for (int64_t l = 0; l < o.layers; ++l)
      for (int64_t h = 0; h < o.heads; ++h)
        print_analyzer_row(fmt::format("layer {}, head {}", l, h), "trained",
                           head_weights(model, l, o.sample, h));
  }

  // ---------------------------------------------------------------------
  next_step("Save the trained model: a checkpoint");
  {
    Checkpoint ckpt;
    ckpt.config = cfg;
    for (int64_t id = 0; id < o.vocab; ++id) ckpt.tokens.push_back(token_label(id));
    ckpt.note = fmt::format("task 1, reversal of {} tokens: {} epochs from seed {}, held-out token accuracy {:.2f}%", D,
                            o.epochs, cli.seed, trained.percent());
    ckpt.params = model.params;
    say("A versioned binary file: magic number, format version, file size, the configuration, a note, the "
        "vocabulary, the parameters as little-endian float32, and a CRC-32 of everything before it. Reading "
        "it back checks each of those before it trusts a single size (checkpoint.hpp).");
    save_and_verify(ckpt, o.checkpoint_dir + "/reversal.ckpt", model, test_ids, o.test);
    const auto s = test.sample(o.sample);
    fmt::print("  look at it:  {} --checkpoint {} --text \"{}\" --layer 0 --head 0\n",
               shown_path(sibling_program("07-training-analyze")), shown_path(o.checkpoint_dir + "/reversal.ckpt"),
               join_tokens(s.first(size_t(T))));
  }

  gap();
  fmt::print("Drawing figures\n");
  std::vector<std::string> labels;
  for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(o.sample)[size_t(p)]));
  figures.draw("attention_untrained.png", [&](const std::string& path) {
    return plot::heatmap_grid(path, fmt::format("Attention before training, held-out sample {} (rows: layers)", o.sample),
                              int(o.layers), int(o.heads), untrained_panels, 360);
  });
  figures.draw("attention_trained.png", [&](const std::string& path) {
    return plot::heatmap_grid(path,
                              fmt::format("Attention after {} epochs, held-out sample {} (rows: layers)", o.epochs,
                                          o.sample),
                              int(o.layers), int(o.heads), heatmap_panels(model, o.sample, labels), 360);
  });
  figures.draw("loss.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Training loss (mean cross-entropy over the reversed half)";
    p.xlabel = "epoch";
    p.ylabel = "loss (log scale)";
    p.logy = true;
    plot::Series tr{"train (mean over the epoch's steps)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series he{"held-out (after the epoch)", {}, {}, plot::Series::Style::LinesPoints};
    for (size_t e = 0; e < history.size(); ++e) {
      tr.x.push_back(double(e + 1));
      tr.y.push_back(history[e].loss);
      he.x.push_back(double(e + 1));
      he.y.push_back(history[e].test_loss);
    }
    p.series = {tr, he};
    return plot::lines(path, p);
  });
  figures.draw("accuracy.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Token accuracy on the reversed half";
    p.xlabel = "epoch (log scale: the climb happens in the first ten)";
    p.logx = true;
    p.ylabel = "accuracy (%)";
    p.ymin = 0;
    p.ymax = 101;
    plot::Series tr{"train (before each update)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series he{"held-out (after the epoch)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series goal{"99%", {1.0, double(history.size())}, {99.0, 99.0}, plot::Series::Style::Dashed};
    for (size_t e = 0; e < history.size(); ++e) {
      tr.x.push_back(double(e + 1));
      tr.y.push_back(history[e].train_acc);
      he.x.push_back(double(e + 1));
      he.y.push_back(history[e].test_acc);
    }
    p.series = {tr, he, goal};
    return plot::lines(path, p);
  });
  figures.draw("heads.png", [&](const std::string& path) {
    plot::BarChart c;
    c.title = "Where each head puts its largest weight, queries after SEP";
    c.ylabel = "fraction of queries (%)";
    plot::BarGroup mirror{fmt::format("mirror position {} - p", 2 * D), {}},
        source{fmt::format("source position {} - p", 2 * D - 1), {}};
    for (const HeadScore& s : heads) {
      c.categories.push_back(fmt::format("L{} H{}", s.layer, s.head));
      mirror.values.push_back(std::round(1000 * s.mirror) / 10);  // one decimal on the bar labels
      source.values.push_back(std::round(1000 * s.source) / 10);
    }
    c.groups = {mirror, source};
    return plot::bars(path, c);
  });

}


// ===========================================================================
// Task 2: next-token prediction on a small sentence corpus, and
// the source material's pattern analyzer over every head.
// ===========================================================================

// One of the three models of task 2, with what the tables and figures need.
struct CorpusModel {
  std::string name;   // in the tables: "single-head, bidirectional"
  std::string tag;    // in figure labels and file names: "single", "bi", "causal"
  ModelConfig cfg;
  std::unique_ptr<Generator> gen;  // draws the model, then every epoch's batches
  std::unique_ptr<TinyTransformer> model;
  std::vector<Matrix> untrained, trained;  // each head's weights on --text, before and after
  std::vector<double> epoch_loss, epoch_held;
  Score train_score, held_score, prefix_score;
};

// Each head's (seq, seq) weights on one sentence.
std::vector<Matrix> weights_on(TinyTransformer& model, const std::vector<int64_t>& ids) {
  model.forward(ids, 1);
  std::vector<Matrix> heads;
  for (int64_t h = 0; h < model.config().n_heads; ++h) heads.push_back(head_weights(model, 0, 0, h));
  return heads;
}

double mean_entropy(const Matrix& P) { return attention_pattern(P).entropy; }

void run_corpus(const Options& o, const CorpusInput& input, const Cli& cli, Figures& figures, Steps& next_step) {
  const Corpus& corpus = input.corpus;
  const std::vector<int64_t>& text_ids = input.text_ids;
  const int64_t n = int64_t(text_ids.size());
  const CorpusSplit split = split_corpus(corpus, 8);
  std::vector<std::string> labels;
  for (int64_t id : text_ids) labels.push_back(corpus.vocab.word(id));
  const std::string quoted = fmt::format("\"{}\"", fmt::join(labels, " "));

  gap();
  fmt::print("Task 2: next-token prediction on {} ({} sentences), d_model {}, 1 layer, batch {}, Adam lr {}, "
             "{} epochs, seed {}\n",
             shown_path(o.corpus), corpus.sentences.size(), o.corpus_d_model, o.corpus_batch, o.corpus_lr,
             o.corpus_epochs, cli.seed);

  // ---------------------------------------------------------------------
  next_step("The corpus: predict every next word");
  {
    std::map<size_t, int64_t> lengths;
    for (const auto& s : corpus.sentences) ++lengths[s.size()];
    std::string length_list;
    for (const auto& [len, count] : lengths) length_list += fmt::format("{}{} x {}", length_list.empty() ? "" : ", ", count, len);
    fmt::print("  {} sentences of {} to {} tokens with the end token '.' (count x tokens: {})\n",
               corpus.sentences.size(), lengths.begin()->first, lengths.rbegin()->first, length_list);
    std::vector<std::string> words;
    for (int64_t i = 0; i < corpus.vocab.size(); ++i) words.push_back(corpus.vocab.word(i));
    fmt::print("  vocabulary ({} words, ids by first appearance): {}\n", corpus.vocab.size(), fmt::join(words, " "));
    fmt::print("  training {} sentences, held-out {} (every 8th: {}, ...)\n", split.train.size(),
               split.held_out.size(), [&] {
                 std::vector<std::string> w;
                 for (int64_t id : corpus.sentences[size_t(split.held_out[0])]) w.push_back(corpus.vocab.word(id));
                 return fmt::format("\"{}\"", fmt::join(w, " "));
               }());
    const auto& first = corpus.sentences[0];
    std::vector<std::string> in, out;
    for (size_t p = 0; p + 1 < first.size(); ++p) {
      in.push_back(fmt::format("{:>5}", corpus.vocab.word(first[p])));
      out.push_back(fmt::format("{:>5}", corpus.vocab.word(first[p + 1])));
    }
    fmt::print("  input   {}\n  target  {}\n", fmt::join(in, " "), fmt::join(out, " "));
    const int64_t T0 = int64_t(first.size()) - 1;
    print_shape(fmt::format("a batch of {} such sentences, inputs", o.corpus_batch), {o.corpus_batch, T0},
                "(batch, seq): all of one length");
    print_shape("its targets", {o.corpus_batch, T0});
    say("Every position predicts the word after it, and every prediction counts. A batch holds sentences of one "
        "length, so no padding is needed. Some of the next words can be known (after 'sat' comes 'on'), some "
        "cannot (after 'the' comes one of six animals or an adjective, anyone's guess): no model reaches 100% "
        "here, unless it cheats.");
  }

  // ---------------------------------------------------------------------
  next_step("Three models: one head or four, bidirectional or causal");
  std::vector<CorpusModel> models(3);
  {
    const int64_t d = o.corpus_d_model, H = o.corpus_heads;
    models[0].name = "single-head, bidirectional";
    models[0].tag = "single";
    models[1].name = fmt::format("{} heads, bidirectional", H);
    models[1].tag = "bi";
    models[2].name = fmt::format("{} heads, causal", H);
    models[2].tag = "causal";
    for (size_t k = 0; k < 3; ++k) {
      ModelConfig& c = models[k].cfg;
      c.vocab = corpus.vocab.size();
      c.max_seq = corpus.max_len();
      c.d_model = d;
      c.n_heads = k == 0 ? 1 : H;
      c.n_layers = 1;
      c.d_ff = 4 * d;
      c.causal = k == 2;
      // Every model from its own generator with the same seed: the two
      // multi-head models start from the same weights and see the same
      // batches, so the mask is their only difference.
      models[k].gen = std::make_unique<Generator>(cli.seed);
      models[k].model = std::make_unique<TinyTransformer>(c, *models[k].gen);
      fmt::print("  {:<26} d_k {:>2}  mask {:<15}  {} parameters\n", models[k].name, c.d_k(),
                 c.causal ? "causal" : "none (all keys)", parameter_count(models[k].model->params));
    }
    say(fmt::format("The source material's three setups, on the model of task 1 with one block: token and position "
                    "embeddings, one pre-norm block (attention, then the feed-forward), the head. The two "
                    "{}-head models start from identical weights and see identical batches; only the mask "
                    "differs. For a sentence of {} tokens the masks are:",
                    H, n));
    Matrix full = Matrix::Ones(n, n), lower = Matrix::Zero(n, n);
    const Mask cm = causal_mask(n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) lower(i, j) = cm(i, j) ? 1.0f : 0.0f;
    print_labelled("bidirectional: every query sees every key", full, labels, labels, {.precision = 0});
    print_labelled("causal: query i sees keys 0..i (chapter 5)", lower, labels, labels, {.precision = 0});
    say("With a next-token loss, the bidirectional mask hands position i the very word it must predict: it sits "
        "at key i + 1. The source material trains bidirectional models this way; we do the same, and then check what they "
        "learned.");
  }
  for (CorpusModel& m : models) m.untrained = weights_on(*m.model, text_ids);

  // ---------------------------------------------------------------------
  next_step("Training the three models");
  say(fmt::format("{} epochs each over the {} training sentences, batches of at most {} sentences of one length, "
                  "Adam lr {}. Loss: mean over the epoch's steps; held-out accuracy: every next word of the {} "
                  "held-out sentences, the whole sentence in the input (as in training).",
                  o.corpus_epochs, split.train.size(), o.corpus_batch, o.corpus_lr, split.held_out.size()));
  AdamConfig adam_cfg;
  adam_cfg.lr = o.corpus_lr;
  for (CorpusModel& m : models) {
    fmt::print("  {}\n", m.name);
    Generator& gen = *m.gen;
    Adam adam(m.model->params, m.model->grads, adam_cfg);
    std::vector<int64_t> ids, targets;
    const auto start = Clock::now();
    for (int64_t epoch = 1; epoch <= o.corpus_epochs; ++epoch) {
      const auto batches = corpus_batches(gen, corpus, split.train, o.corpus_batch);
      double loss_sum = 0;
      for (const auto& b : batches) {
        make_next_token_batch(corpus, b, ids, targets);
        const StepStats s = train_step(*m.model, adam, ids, targets, int64_t(b.size()));
        if (!std::isfinite(s.loss))
          throw std::runtime_error(fmt::format("the loss became {} at epoch {}: training diverged", s.loss, epoch));
        loss_sum += s.loss;
      }
      const Score held = evaluate_next_token(*m.model, corpus, split.held_out);
      m.epoch_loss.push_back(loss_sum / double(batches.size()));
      m.epoch_held.push_back(held.percent());
      if (epoch == 1 || epoch % 5 == 0 || epoch == o.corpus_epochs)
        fmt::print("    epoch {:3}/{}  loss {:.4f}  held-out {:6.2f}%  {:5.2f} s\n", epoch, o.corpus_epochs,
                   m.epoch_loss.back(), held.percent(), seconds_since(start));
    }
    m.train_score = evaluate_next_token(*m.model, corpus, split.train);
    m.held_score = evaluate_next_token(*m.model, corpus, split.held_out);
    m.prefix_score = evaluate_prefixes(*m.model, corpus, split.held_out);
    m.trained = weights_on(*m.model, text_ids);
  }

  // ---------------------------------------------------------------------
  next_step("Bidirectional next-word prediction cheats");
  fmt::print("  {:<26} {:>7}   {:>24}   {:>24}\n", "", "train", "held-out, whole sentence", "held-out, prefix only");
  fmt::print("  {:<26} {:>7}   {:>10} {:>13}   {:>10} {:>13}\n", "model", "loss", "loss", "accuracy", "loss",
             "accuracy");
  for (const CorpusModel& m : models)
    fmt::print("  {:<26} {:>7.4f}   {:>10.4f} {:>12.2f}%   {:>10.4f} {:>12.2f}%\n", m.name, m.train_score.loss,
               m.held_score.loss, m.held_score.percent(), m.prefix_score.loss, m.prefix_score.percent());
  fmt::print("  for scale, a lookup table of the training sentences (the most frequent next word after the same "
             "last k words):\n  k = 1: {:.2f}%   k = 2: {:.2f}%   k = 3: {:.2f}%   the whole prefix: {:.2f}%\n",
             ngram_accuracy(corpus, split.train, split.held_out, 1), ngram_accuracy(corpus, split.train, split.held_out, 2),
             ngram_accuracy(corpus, split.train, split.held_out, 3),
             ngram_accuracy(corpus, split.train, split.held_out, corpus.max_len()));
  say("'whole sentence': the model reads the sentence and predicts every next word at once, as in training. "
      "'prefix only': the word at position t + 1 is predicted from words 0..t alone, as a model that writes "
      "text must. For the causal model the two are the same numbers by construction.");
  say("With the sentence in view the bidirectional models score far above anything an honest predictor reaches "
      "on this corpus (the lookup tables show the range): the word to predict is in their input, at key t + 1, "
      "and their heads learned to look there. Without it (prefix only) their accuracy drops back into the "
      "honest range, kept there by what the current word alone says (after 'sat' comes 'on': the residual "
      "path carries that without any attention), and their loss is worse than the causal model's: they are "
      "confidently wrong where they used to read the answer. The mean weight their queries put on the next "
      "token, the answer (uniform attention would give 1/n):");
  for (const CorpusModel& m : models) {
    if (m.cfg.causal) continue;
    for (size_t h = 0; h < m.trained.size(); ++h)
      fmt::print("  {:<26} head {}  untrained {:.3f}  trained {:.3f}\n", h == 0 ? m.name : "", h,
                 next_token_weight(m.untrained[h]), next_token_weight(m.trained[h]));
  }
  fmt::print("  {:<26} every head 0: the mask gives the next token weight exactly 0\n", models[2].name);
  say("What a bidirectional model can learn honestly is a task whose answer is not in its input: fill in a "
      "hidden word from both sides (BERT's masked words), classify a whole sentence. Predicting the next word "
      "needs the causal mask, which is why the entropy and focus tables below are worth reading for the causal "
      "model, and a warning for the other two.");

  // ---------------------------------------------------------------------
  next_step(fmt::format("What training did to each head, on {}", quoted));
  say("Entropy (mean over the queries of -sum_j a_j ln a_j, nats) and focus (mean of each query's largest "
      "weight), before and after training, as in the source material's tables:");
  fmt::print("  {:<26} {:>4}   {:^26}   {:^26}\n", "", "", "entropy (nats)", "focus");
  fmt::print("  {:<26} {:>4}   {:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}\n", "model", "head", "before", "after", "change",
             "before", "after", "change");
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h) {
      const PatternStats a = attention_pattern(m.untrained[h]), b = attention_pattern(m.trained[h]);
      fmt::print("  {:<26} {:>4}   {:8.3f} {:8.3f} {:>8}   {:8.3f} {:8.3f} {:>8}\n", h == 0 ? m.name : "", h,
                 a.entropy, b.entropy, percent_change(a.entropy, b.entropy), a.focus, b.focus,
                 percent_change(a.focus, b.focus));
    }
  fmt::print("  uniform weights over {} tokens: entropy {:.3f} bidirectional, {:.3f} causal; focus {:.3f} "
             "bidirectional, {:.3f} causal\n",
             n, mean_entropy(uniform_weights(n, false)), mean_entropy(uniform_weights(n, true)),
             attention_pattern(uniform_weights(n, false)).focus, attention_pattern(uniform_weights(n, true)).focus);
  say("The strongest learned links of each head (query -> key, weight; for the causal model the first query, "
      "which can only see itself, is left out):");
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h) {
      std::vector<std::string> shown;
      for (const Link& l : strongest_links(m.trained[h], 3, m.cfg.causal))
        shown.push_back(fmt::format("'{}' -> '{}' {:.2f} ({})", labels[size_t(l.query)], labels[size_t(l.key)],
                                    l.weight, link_direction(l)));
      fmt::print("  {:<8} head {}  {}\n", m.tag, h, fmt::join(shown, ",  "));
    }
  {
    // What the table says, counted from it: how far each head moved from a
    // uniform head's entropy, and how many bidirectional links point at the
    // next token (the answer they can read).
    double least = 1.0, most = 0.0;
    int ahead = 0, links = 0;
    for (const CorpusModel& m : models) {
      const double uniform = attention_pattern(uniform_weights(n, m.cfg.causal)).entropy;
      for (const Matrix& P : m.trained) {
        const double drop = uniform > 0 ? 1.0 - attention_pattern(P).entropy / uniform : 0.0;
        least = std::min(least, drop), most = std::max(most, drop);
        if (m.cfg.causal) continue;
        for (const Link& l : strongest_links(P, 3, false)) ++links, ahead += l.key == l.query + 1;
      }
    }
    say(fmt::format("Trained, the heads' entropy is {:.0f}% to {:.0f}% below a uniform head's on this sentence. "
                    "{} of the {} strongest bidirectional links point one token ahead, at the word to predict; "
                    "the causal links can only look back, at the words that decide what comes next.",
                    100 * least, 100 * most, ahead, links));
  }

  // ---------------------------------------------------------------------
  next_step("The pattern analyzer over every head");
  say("Four numbers per head on the same sentence, and a class from the source material's thresholds, tested in this "
      "order: self-focused if diagonal > 0.7; locally focused if local > 0.8 (local: the weight within 3 "
      "positions of the query); concentrated if focus > 0.5 and entropy < 1.0; distributed if entropy > 2.0; "
      "mixed otherwise. The last two columns repeat local and the class with a window of 1. The uniform rows "
      "are what a head that learned nothing scores on this input:");
  fmt::print("  {:<18} {:<9}  {:>7} {:>6} {:>8} {:>8}  {:<15}  {:>8}  {}\n", "head", "", "entropy", "focus",
             "diagonal", "local 3", "class", "local 1", "class (window 1)");
  print_analyzer_row("uniform, bidir.", "", uniform_weights(n, false));
  print_analyzer_row("uniform, causal", "", uniform_weights(n, true));
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h) {
      print_analyzer_row(fmt::format("{} head {}", m.tag, h), "untrained", m.untrained[h]);
      print_analyzer_row("", "trained", m.trained[h]);
    }
  {
    const bool uniform_local = classify_pattern(attention_pattern(uniform_weights(n, false))) ==
                               PatternClass::LocallyFocused;
    int local = 0, rows = 0;
    for (const CorpusModel& m : models)
      for (size_t h = 0; h < m.trained.size(); ++h)
        for (const Matrix* P : {&m.untrained[h], &m.trained[h]}) {
          ++rows;
          local += classify_pattern(attention_pattern(*P)) == PatternClass::LocallyFocused;
        }
    std::string text =
        uniform_local
            ? fmt::format("With a window of 3, {} of the {} head rows are 'locally focused', and so is the uniform "
                          "head that learned nothing: on a sentence of {} tokens the band |j - i| <= 3 holds most "
                          "of the keys of every query, so local focus is near 1 whatever a head does, and that "
                          "class says little here. A window of 1 separates the heads better.",
                          local, rows, n)
            : fmt::format("With a window of 3, {} of the {} head rows are 'locally focused'; the uniform head is "
                          "not, so on {} tokens the class does tell heads apart.",
                          local, rows, n);
    if (n <= 7)
      text += " No head can be 'distributed' here: an entropy above 2 needs more than e^2 = 7.4 keys.";
    text += " The thresholds are absolute; read the numbers against the uniform rows.";
    say(text);
  }

  // ---------------------------------------------------------------------
  next_step("Save the three models");
  for (CorpusModel& m : models) {
    Checkpoint ckpt;
    ckpt.config = m.cfg;
    for (int64_t i = 0; i < corpus.vocab.size(); ++i) ckpt.tokens.push_back(corpus.vocab.word(i));
    ckpt.note = fmt::format("task 2, next-word prediction on {}: {}, {} epochs from seed {}, held-out accuracy "
                            "{:.2f}% (whole sentence), {:.2f}% (prefix only)",
                            std::filesystem::path(o.corpus).filename().string(), m.name, o.corpus_epochs, cli.seed,
                            m.held_score.percent(), m.prefix_score.percent());
    ckpt.params = m.model->params;
    save_and_verify(ckpt, fmt::format("{}/corpus-{}.ckpt", o.checkpoint_dir, m.tag), *m.model, text_ids, 1);
  }
  fmt::print("  look at one:  {} --checkpoint {} --text \"{}\" --layer 0 --head 1\n",
             shown_path(sibling_program("07-training-analyze")), shown_path(o.checkpoint_dir + "/corpus-causal.ckpt"),
             fmt::join(labels, " "));

  // ---------------------------------------------------------------------
  gap();
  fmt::print("Drawing figures\n");
  const auto panel = [&](const Matrix& P, const std::string& title) {
    plot::Heatmap p = plot::weights_heatmap(title, P, labels);
    p.xlabel = "key (attended to)";
    return p;
  };
  const auto stats_title = [&](const Matrix& P, const std::string& who) {
    const PatternStats st = attention_pattern(P);
    return fmt::format("{}: entropy {:.2f}, focus {:.2f}", who, st.entropy, st.focus);
  };
  const CorpusModel &single = models[0], &bi = models[1], &causal = models[2];
  const int H = int(o.corpus_heads);
  figures.draw("corpus_single_head.png", [&](const std::string& path) {
    return plot::heatmap_grid(path, fmt::format("Single head, bidirectional, on {}: before and after {} epochs", quoted,
                                                o.corpus_epochs),
                              1, 2,
                              {panel(single.untrained[0], stats_title(single.untrained[0], "untrained")),
                               panel(single.trained[0], stats_title(single.trained[0], "trained"))},
                              460);
  });
  figures.draw("corpus_untrained_vs_trained.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (int h = 0; h < H; ++h) panels.push_back(panel(causal.untrained[size_t(h)], stats_title(causal.untrained[size_t(h)], fmt::format("head {} untrained", h))));
    for (int h = 0; h < H; ++h) panels.push_back(panel(causal.trained[size_t(h)], stats_title(causal.trained[size_t(h)], fmt::format("head {} trained", h))));
    return plot::heatmap_grid(path, fmt::format("{} heads, causal, on {}: before (top) and after {} epochs (bottom)", H,
                                                quoted, o.corpus_epochs),
                              2, H, panels, 340);
  });
  figures.draw("corpus_bidirectional_vs_causal.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (int h = 0; h < H; ++h) panels.push_back(panel(bi.trained[size_t(h)], stats_title(bi.trained[size_t(h)], fmt::format("bidirectional head {}", h))));
    for (int h = 0; h < H; ++h) panels.push_back(panel(causal.trained[size_t(h)], stats_title(causal.trained[size_t(h)], fmt::format("causal head {}", h))));
    return plot::heatmap_grid(path, fmt::format("Trained {} epochs from the same weights: bidirectional (top) reads the "
                                                "next word, causal (bottom) cannot",
                                                o.corpus_epochs),
                              2, H, panels, 340);
  });
  const auto metric_bars = [&](const std::string& file, const std::string& what, const std::string& ylabel,
                               auto metric, double uniform_bi, double uniform_causal) {
    figures.draw(file, [&](const std::string& path) {
      plot::BarChart c;
      c.title = fmt::format("{} of each head on {}, before and after training", what, quoted);
      c.ylabel = ylabel;
      plot::BarGroup before{"untrained", {}}, after{"trained", {}};
      for (const CorpusModel& m : models)
        for (size_t h = 0; h < m.trained.size(); ++h) {
          c.categories.push_back(fmt::format("{} {}", m.tag, h + 1));
          before.values.push_back(std::round(100 * metric(m.untrained[h])) / 100);
          after.values.push_back(std::round(100 * metric(m.trained[h])) / 100);
        }
      c.groups = {before, after};
      c.hlines = {{uniform_bi, "uniform, bidirectional"}, {uniform_causal, "uniform, causal"}};
      return plot::bars(path, c);
    });
  };
  metric_bars("corpus_entropy.png", "Entropy", "mean entropy of a query's weights (nats)",
              [](const Matrix& P) { return attention_pattern(P).entropy; }, mean_entropy(uniform_weights(n, false)),
              mean_entropy(uniform_weights(n, true)));
  metric_bars("corpus_focus.png", "Focus", "mean of each query's largest weight",
              [](const Matrix& P) { return attention_pattern(P).focus; }, attention_pattern(uniform_weights(n, false)).focus,
              attention_pattern(uniform_weights(n, true)).focus);
  {
    // The causal head with the sharpest pattern, as a surface.
    size_t best = 0;
    for (size_t h = 1; h < causal.trained.size(); ++h)
      if (attention_pattern(causal.trained[h]).focus > attention_pattern(causal.trained[best]).focus) best = h;
    figures.draw("corpus_surface.png", [&](const std::string& path) {
      plot::Surface sf;
      sf.title = fmt::format("Causal head {} after training, on {}: one peak per query", best, quoted);
      sf.z = causal.trained[best];
      sf.row_labels = labels;
      sf.col_labels = labels;
      sf.xlabel = "key";
      sf.ylabel = "query";
      sf.zlabel = "weight";
      return plot::surface(path, sf);
    });
  }
  figures.draw("corpus_accuracy.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Held-out next-word accuracy, the whole sentence in the input";
    p.xlabel = "epoch";
    p.ylabel = "accuracy (%)";
    p.ymin = 0;
    p.ymax = 100;
    for (const CorpusModel& m : models) {
      plot::Series se{m.name, {}, {}, plot::Series::Style::LinesPoints};
      for (size_t e = 0; e < m.epoch_held.size(); ++e) {
        se.x.push_back(double(e + 1));
        se.y.push_back(m.epoch_held[e]);
      }
      p.series.push_back(std::move(se));
    }
    p.hlines = {{ngram_accuracy(corpus, split.train, split.held_out, 2), "lookup table of the last 2 words"}};
    return plot::lines(path, p);
  });
  figures.draw("corpus_flow.png", [&](const std::string& path) {
    std::vector<plot::FlowPanel> panels;
    for (int h = 0; h < H; ++h) panels.push_back({fmt::format("bidirectional, head {}", h), bi.trained[size_t(h)], labels, labels});
    for (int h = 0; h < H; ++h) panels.push_back({fmt::format("causal, head {}", h), causal.trained[size_t(h)], labels, labels});
    return plot::flow(path,
                      fmt::format("Who attends to whom in {} after training (line width and darkness: the weight; "
                                  "below 0.05 not drawn)",
                                  quoted),
                      2, H, panels, 0.05, 300);
  });
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("07-training", [&] { run(argc, argv); });
}
