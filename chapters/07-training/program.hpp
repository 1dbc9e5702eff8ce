// Chapter 7's program: what its three tasks share. main.cpp reads the
// options and runs the tasks in order; each task has a file that runs its
// steps, and tasks 1 and 2 a header that lists the files of their steps:
//   task_reversal.cpp  task 1, sequence reversal (the chapter's model);
//                      steps in task_reversal_*.cpp (task_reversal.hpp)
//   task_corpus.cpp    task 2, next-word prediction on a sentence corpus;
//                      steps in task_corpus_*.cpp (task_corpus.hpp)
//   task_pooling.cpp   task 3, attention pooling: a sentence classifier
//   saving.cpp         the saving every task that trains a model shares
#pragma once

#include "07-training/checkpoint.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sa::ch7 {

// The options, one struct per task, each field named after its flag:
// main.cpp fills them from the command line, and a task's functions see
// only that task's options (or the one or two values they use).

// Task 1, reversal: --epochs to --position-epochs.
struct ReversalOptions {
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
  int64_t position_epochs = 10;  // the position-encoding comparison (at most epochs)
  double dropout = 0.0;          // --dropout resolved for this task (SharedOptions::reversal_dropout)
  std::string checkpoint_dir;
};

// Task 2, next-token prediction on the corpus: --corpus to --corpus-heads.
struct CorpusOptions {
  std::string corpus;  // default: chapters/07-training/corpus.txt
  std::string text = "the cat sat on the mat";
  int64_t corpus_epochs = 20;
  int64_t corpus_batch = 8;
  double corpus_lr = 3e-3;
  int64_t corpus_d_model = 64;
  int64_t corpus_heads = 4;
  double dropout = kCorpusDropout;  // --dropout resolved for this task (SharedOptions::corpus_dropout)
  std::string checkpoint_dir;
};

// What the command line says for the program as a whole: which tasks run,
// and the two options both tasks take, before main.cpp hands them on.
struct SharedOptions {
  std::string task = "both";
  std::string checkpoint_dir;
  // --dropout: attention dropout in training (chapter 6), off in
  // evaluation. Unset, each task takes its own default.
  std::optional<double> dropout;
  double reversal_dropout() const { return dropout.value_or(0.0); }
  double corpus_dropout() const { return dropout.value_or(kCorpusDropout); }
};

// Numbered steps across the tasks.
struct Steps {
  int n = 0;
  void operator()(std::string_view title) { step(++n, title); }
};

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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
               text_bar(double(batch_done) / double(batches_), 24), batch_done, batches_, eta_epoch, eta_run);
    std::fflush(stdout);
  }
  void clear() {
    if (enabled_) fmt::print("\r\033[K");
  }

 private:
  bool enabled_;
  int64_t epochs_, batches_;
};

// Saves a checkpoint, reads it back and checks that the model read back is
// the model saved (saving.cpp; every task that trains a model saves it).
void save_and_verify(const Checkpoint& ckpt, const std::string& path, TinyTransformer& model,
                     const std::vector<int64_t>& ids, int64_t batch);

// Task 2's input, read and checked before anything runs: a bad --corpus or
// --text must not wait for task 1's 25 seconds to be refused.
struct CorpusInput {
  Corpus corpus;
  std::vector<int64_t> text_ids;  // --text in the corpus's vocabulary
};

// Reads --corpus and encodes --text, refusing bad input before any work.
CorpusInput read_corpus_input(const std::string& corpus_path, const std::string& text, bool text_given);

// Refuses task 1's options that do not fit together (d_model and heads,
// --sample and --test), before anything prints.
void check_reversal_options(const ReversalOptions& o);

// The checkpoints each task saves when it ends, with an upper bound of
// their sizes: checked (require_checkpoint_targets) before any training.
std::vector<CheckpointTarget> reversal_checkpoints(const ReversalOptions& o);
std::vector<CheckpointTarget> corpus_checkpoints(const CorpusOptions& o, const CorpusInput& input);

void run_reversal(const ReversalOptions& o, const Cli& cli, Figures& figures, Steps& next_step);
void run_corpus(const CorpusOptions& o, const CorpusInput& input, const Cli& cli, Figures& figures, Steps& next_step);
void run_pooling(const Corpus& corpus, const Cli& cli, Figures& figures, Steps& next_step);

}  // namespace sa::ch7
