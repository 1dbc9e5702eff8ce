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
#include <span>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::ch7;

namespace {

void run(int argc, char** argv) {
  ReversalOptions r;
  CorpusOptions c;
  SharedOptions shared;
  Cli cli("07-training",
          "Chapter 7: train a tiny transformer (token + position embeddings, pre-norm blocks with multi-head "
          "attention and a GELU feed-forward, Adam) with every backward pass written by hand, on two tasks: "
          "sequence reversal, and next-token prediction on a small sentence corpus (single-head, multi-head "
          "bidirectional and multi-head causal); then look at what the attention heads learned, and save "
          "checkpoints for 07-training-analyze.");
  cli.add("--task", &shared.task, "reversal, corpus or both");
  cli.add("--epochs", &r.epochs, "reversal: passes over the training set", IntRange{1, 100000});
  cli.add("--batch", &r.batch, "reversal: sequences per training step", IntRange{1, 100000});
  cli.add("--lr", &r.lr, "reversal: Adam's learning rate", RealRange{0.0, 1.0, true, false});
  cli.add("--train", &r.train, "reversal: training samples", IntRange{1, 1000000});
  cli.add("--test", &r.test, "reversal: held-out samples", IntRange{1, 100000});
  cli.add("--digits", &r.digits, "reversal: tokens to reverse in a sample", IntRange{1, 64});
  cli.add("--vocab", &r.vocab, "reversal: vocabulary size (0 = PAD and 1 = SEP are reserved)", IntRange{3, 1000});
  cli.add("--d-model", &r.d_model,
          "reversal: width of a token vector (at least 2: LayerNorm of a single number is always 0)",
          IntRange{2, 1024});
  cli.add("--heads", &r.heads, "reversal: attention heads per layer (must divide d_model)", IntRange{1, 64});
  cli.add("--layers", &r.layers, "reversal: transformer blocks", IntRange{1, 16});
  cli.add("--sample", &r.sample, "reversal: held-out sample shown and drawn", IntRange{0, 100000});
  cli.add("--position-epochs", &r.position_epochs,
          "reversal: epochs of each model in the comparison of position encodings (at most --epochs; when not "
          "given, 10 or --epochs if fewer)",
          IntRange{1, 100000});
  cli.add("--corpus", &c.corpus,
          "corpus: the sentence file, one sentence a line, words lower-cased (Unicode letters too); UTF-8 text "
          "(a byte-order mark, CRLF line ends and tabs are fine) of at most 1 MiB, 10000 sentences, 32 words "
          "a sentence and 64 characters a word (default: chapters/07-training/corpus.txt)",
          "a file");
  cli.add("--text", &c.text, "corpus: the sentence whose attention is shown and drawn");
  cli.add("--corpus-epochs", &c.corpus_epochs, "corpus: passes over the training sentences", IntRange{1, 100000});
  cli.add("--corpus-batch", &c.corpus_batch, "corpus: sentences per training step (at most)", IntRange{1, 100000});
  cli.add("--corpus-lr", &c.corpus_lr, "corpus: Adam's learning rate", RealRange{0.0, 1.0, true, false});
  cli.add("--corpus-d-model", &c.corpus_d_model, "corpus: width of a token vector", IntRange{1, 1024});
  cli.add("--corpus-heads", &c.corpus_heads, "corpus: heads of the two multi-head models (must divide d_model)",
          IntRange{2, 64});
  cli.add("--dropout", &shared.dropout,
          "attention dropout p of every training step (chapter 6), off in evaluation; both tasks",
          RealRange{0.0, 1.0, false, true}, fmt::format("0 for reversal, {} for corpus", kCorpusDropout));
  shared.checkpoint_dir = default_checkpoint_dir();
  cli.add("--checkpoint-dir", &shared.checkpoint_dir, "folder the checkpoints are saved to", "a folder");
  cli.parse(argc, argv);
  require_writable_dir("--checkpoint-dir", shared.checkpoint_dir);  // before 20 s of training, not after
  if (shared.task != "reversal" && shared.task != "corpus" && shared.task != "both")
    throw UsageError(fmt::format("--task must be reversal, corpus or both, got '{}'", shared.task));
  // An option of the task that does not run would change nothing: refused,
  // so that a reader never believes it took effect.
  static constexpr const char* kReversalOnly[] = {"--epochs", "--batch", "--lr",     "--train",  "--test",
                                                  "--digits", "--vocab", "--d-model", "--heads", "--layers",
                                                  "--sample", "--position-epochs"};
  static constexpr const char* kCorpusOnly[] = {"--corpus",     "--text",           "--corpus-epochs", "--corpus-batch",
                                                "--corpus-lr", "--corpus-d-model", "--corpus-heads"};
  const auto refuse_other_task = [&](std::span<const char* const> flags, const char* owner) {
    for (const char* flag : flags)
      if (cli.given(flag))
        throw UsageError(fmt::format("{} is an option of the {} task, which --task {} does not run (--task {} or both "
                                     "runs it)",
                                     flag, owner, shared.task, owner));
  };
  if (shared.task == "corpus") refuse_other_task(kReversalOnly, "reversal");
  if (shared.task == "reversal") refuse_other_task(kCorpusOnly, "corpus");
  if (c.corpus.empty()) c.corpus = (source_dir() / "chapters/07-training/corpus.txt").string();
  if (c.corpus_d_model % c.corpus_heads != 0)
    throw UsageError(fmt::format("--corpus-d-model {} is not divisible by --corpus-heads {}", c.corpus_d_model,
                                 c.corpus_heads));

  if (cli.given("--position-epochs") && r.position_epochs > r.epochs)
    throw UsageError(fmt::format("--position-epochs {} is more than --epochs {}: the comparison's models train at "
                                 "most as long as the main run",
                                 r.position_epochs, r.epochs));
  r.position_epochs = std::min(r.position_epochs, r.epochs);
  // What both tasks take, handed to each: --dropout as the p that task
  // trains with (unset, its own default), so no task sees the optional.
  r.dropout = shared.reversal_dropout();
  c.dropout = shared.corpus_dropout();
  r.checkpoint_dir = c.checkpoint_dir = shared.checkpoint_dir;
  const bool reversal_task = shared.task != "corpus", corpus_task = shared.task != "reversal";

  // Every option of both tasks is checked before the first line prints.
  if (reversal_task) check_reversal_options(r);
  std::optional<CorpusInput> corpus_input;
  if (corpus_task) corpus_input = read_corpus_input(c.corpus, c.text, cli.given("--text"));
  // Where the checkpoints go: a folder in the way or a full disk is said
  // now, not after minutes of training.
  std::vector<CheckpointTarget> checkpoints;
  if (reversal_task) checkpoints = reversal_checkpoints(r);
  if (corpus_input)
    for (const CheckpointTarget& t : corpus_checkpoints(c, *corpus_input)) checkpoints.push_back(t);
  require_checkpoint_targets("--checkpoint-dir", checkpoints);
  // The whole run against the budget, last: every other mistake is named first.
  std::vector<RunEstimate> costs;
  if (reversal_task) costs.push_back(reversal_cost(r));
  if (corpus_input) costs.push_back(corpus_cost(c, corpus_input->corpus));
  cli.check_budget(run_cost(costs));

  Figures figures(cli);
  Steps steps;
  chapter_title("Chapter 7: training a tiny transformer, every backward pass by hand");
  if (reversal_task) run_reversal(r, cli, figures, steps);
  if (corpus_input) {
    run_corpus(c, *corpus_input, cli, figures, steps);
    run_pooling(corpus_input->corpus, cli, figures, steps);
  }
  figures.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("07-training", [&] { run(argc, argv); });
}
