// Chapter 7: training a tiny transformer, every backward pass by hand.
//
// Trains the chapter's model on sequence reversal: shows the task and the
// model, one training step taken apart (loss, every gradient, a
// finite-difference spot check, what Adam's first step does), the training
// run one line per epoch, and what the trained attention heads do: the
// reversal generated token by token, the per-head analysis, and the
// layers x heads heatmaps before and after training.
//
// main.cpp reads the options and runs the tasks in order; the steps of each
// task are in task_reversal*.cpp, task_corpus*.cpp and task_pooling.cpp
// (program.hpp lists them).
#include "07-training/program.hpp"
#include "07-training/run_cost.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/paths.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>

using namespace sa;
using namespace sa::ch7;

namespace {

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
  cli.add("--d-model", &o.d_model,
          "reversal: width of a token vector (at least 2: LayerNorm of a single number is always 0)",
          IntRange{2, 1024});
  cli.add("--heads", &o.heads, "reversal: attention heads per layer (must divide d_model)", IntRange{1, 64});
  cli.add("--layers", &o.layers, "reversal: transformer blocks", IntRange{1, 16});
  cli.add("--sample", &o.sample, "reversal: held-out sample shown and drawn", IntRange{0, 100000});
  cli.add("--position-epochs", &o.position_epochs,
          "reversal: epochs of each model in the comparison of position encodings (at most --epochs; when not "
          "given, 10 or --epochs if fewer)",
          IntRange{1, 100000});
  cli.add("--corpus", &o.corpus,
          "corpus: the sentence file, one sentence a line, words lower-cased (Unicode letters too); UTF-8 text "
          "(a byte-order mark, CRLF line ends and tabs are fine) of at most 1 MiB, 10000 sentences and 32 words "
          "a sentence (default: chapters/07-training/corpus.txt)",
          "a file");
  cli.add("--text", &o.text, "corpus: the sentence whose attention is shown and drawn");
  cli.add("--corpus-epochs", &o.corpus_epochs, "corpus: passes over the training sentences", IntRange{1, 100000});
  cli.add("--corpus-batch", &o.corpus_batch, "corpus: sentences per training step (at most)", IntRange{1, 100000});
  cli.add("--corpus-lr", &o.corpus_lr, "corpus: Adam's learning rate", RealRange{0.0, 1.0, true, false});
  cli.add("--corpus-d-model", &o.corpus_d_model, "corpus: width of a token vector", IntRange{1, 1024});
  cli.add("--corpus-heads", &o.corpus_heads, "corpus: heads of the two multi-head models (must divide d_model)",
          IntRange{2, 64});
  cli.add("--dropout", &o.dropout,
          "attention dropout p of every training step (chapter 6), off in evaluation; both tasks",
          RealRange{0.0, 1.0, false, true}, fmt::format("0 for reversal, {} for corpus", kCorpusDropout));
  o.checkpoint_dir = default_checkpoint_dir();
  cli.add("--checkpoint-dir", &o.checkpoint_dir, "folder the checkpoints are saved to", "a folder");
  cli.parse(argc, argv);
  require_writable_dir("--checkpoint-dir", o.checkpoint_dir);  // before 20 s of training, not after
  if (o.task != "reversal" && o.task != "corpus" && o.task != "both")
    throw UsageError(fmt::format("--task must be reversal, corpus or both, got '{}'", o.task));
  if (o.corpus.empty()) o.corpus = (source_dir() / "chapters/07-training/corpus.txt").string();
  if (o.corpus_d_model % o.corpus_heads != 0)
    throw UsageError(fmt::format("--corpus-d-model {} is not divisible by --corpus-heads {}", o.corpus_d_model,
                                 o.corpus_heads));

  if (cli.given("--position-epochs") && o.position_epochs > o.epochs)
    throw UsageError(fmt::format("--position-epochs {} is more than --epochs {}: the comparison's models train at "
                                 "most as long as the main run",
                                 o.position_epochs, o.epochs));
  o.position_epochs = std::min(o.position_epochs, o.epochs);

  // Every option of both tasks is checked before the first line prints.
  if (o.task != "corpus") check_reversal_options(o);
  std::optional<CorpusInput> corpus_input;
  if (o.task != "reversal") corpus_input = read_corpus_input(o);
  // Where the checkpoints go: a folder in the way or a full disk is said
  // now, not after minutes of training.
  std::vector<CheckpointTarget> checkpoints;
  if (o.task != "corpus") checkpoints = reversal_checkpoints(o);
  if (corpus_input)
    for (const CheckpointTarget& t : corpus_checkpoints(o, *corpus_input)) checkpoints.push_back(t);
  require_checkpoint_targets("--checkpoint-dir", checkpoints);
  // The whole run against the budget, last: every other mistake is named first.
  cli.check_budget(run_cost(o, corpus_input ? &corpus_input->corpus : nullptr));

  Figures figures(cli);
  Steps steps;
  chapter_title("Chapter 7: training a tiny transformer, every backward pass by hand");
  if (o.task != "corpus") run_reversal(o, cli, figures, steps);
  if (corpus_input) {
    run_corpus(o, *corpus_input, cli, figures, steps);
    run_pooling(corpus_input->corpus, cli, figures, steps);
  }
  figures.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("07-training", [&] { run(argc, argv); });
}
