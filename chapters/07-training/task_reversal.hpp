// Chapter 7, task 1, sequence reversal: what its steps hand on to one
// another. run_reversal (task_reversal.cpp) runs the steps in order; they
// are steps 1 to 9 of the program (task 2's follow):
//   task_reversal.cpp            the setup from the options and the checkpoint's place; steps 1 to 3
//                                (the task, the model, before training) and 8 (save the trained model)
//   task_reversal_training.cpp   steps 4 and 5: one training step taken apart, the training run
//   task_reversal_trained.cpp    steps 6 and 7: the trained model on unseen sequences, what each head
//                                learned (with each head switched off in turn)
//   task_reversal_positions.cpp  step 9: three ways to say where a token is (RoPE, the encodings compared)
//   task_reversal_figures.cpp    the figures
#pragma once

#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"

#include "sa/figures.hpp"
#include "sa/plot.hpp"
#include "sa/rng.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sa::ch7 {

// What task 1 is and how its model is built and trained, from the options
// (reversal_setup, task_reversal.cpp).
struct ReversalSetup {
  ReversalTask task;
  ModelConfig cfg;
  AdamConfig adam_cfg;
};

struct EpochRecord {
  double loss, test_loss, train_acc, test_acc, seconds;
};

// Head ablation: each head switched off in turn (its rows of W_o zeroed,
// reversal.hpp), the held-out accuracy measured without it. A head the task
// needs costs accuracy when it goes; a head that learned nothing useful
// costs none.
struct Ablation {
  int64_t layer, head;
  double accuracy;  // held-out token accuracy without this head, %
};

// What step "What each head learned" found, for the figures and the checkpoint.
struct LearnedHeads {
  Score trained;                  // held-out score of the trained model
  std::vector<HeadScore> heads;   // where each head looks
  std::vector<Ablation> ablations;
};

// Step "Three ways to say where a token is", part 2: the reversal task
// trained once per position encoding, from the same seed, on the same data
// in the same batch order, epoch by epoch side by side.
struct PositionRun {
  PositionEncoding position;
  std::vector<double> test_acc, test_loss;  // after each epoch
  double seconds = 0;
  std::optional<int64_t> reached_99;
};

// The tokens of held-out sample `sample` (--sample), as the figures and
// tables label them (task_reversal.cpp).
std::vector<std::string> sample_labels(int64_t sample, const ReversalData& test, int64_t T);

// The steps run_reversal calls from the other files, in its order.
// task_reversal_training.cpp:
void show_one_training_step(const ReversalOptions& o, uint64_t seed, const ReversalSetup& setup,
                            const ReversalData& train);
std::vector<EpochRecord> step_training(const ReversalOptions& o, const ReversalSetup& setup, Generator& gen,
                                       TinyTransformer& model, const ReversalData& train, const ReversalData& test);
// task_reversal_trained.cpp:
void show_generation(TinyTransformer& model, const ReversalData& test, int64_t test_count, int64_t sample, int64_t D);
LearnedHeads step_what_each_head_learned(const ReversalOptions& o, const ReversalTask& task, TinyTransformer& model,
                                         const ReversalData& test);
// task_reversal_positions.cpp:
std::vector<PositionRun> step_position_encodings(const ReversalOptions& o, uint64_t seed, const ReversalSetup& setup,
                                                 const ReversalData& train, const ReversalData& test);
// task_reversal_figures.cpp:
void draw_reversal_figures(Figures& figures, const ReversalOptions& o, const TinyTransformer& model,
                           const ReversalData& test, int64_t T, int64_t D,
                           const std::vector<plot::Heatmap>& untrained_panels, const std::vector<EpochRecord>& history,
                           const std::vector<HeadScore>& heads);
void draw_ablation_and_position_figures(Figures& figures, int64_t vocab, const Score& trained,
                                        const std::vector<Ablation>& ablations,
                                        const std::vector<PositionRun>& position_runs);

}  // namespace sa::ch7
