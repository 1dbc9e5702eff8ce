// Chapter 7, task 2, next-token prediction on a sentence corpus: what its
// steps hand on to one another. run_corpus (task_corpus.cpp) runs the steps
// in order; they are steps 10 to 16 of the program (1 to 7 with --task corpus):
//   task_corpus.cpp           the input, the three models and where they are saved; steps 10, 11 and 16
//                             (the corpus, three models, save the three models)
//   task_corpus_training.cpp  steps 12 and 13: training the three models (and what dropout did),
//                             bidirectional next-word prediction cheats
//   task_corpus_heads.cpp     steps 14 and 15: what training did to each head, the pattern analyzer
//                             over every head
//   task_corpus_figures.cpp   the figures
#pragma once

#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/program.hpp"

#include "sa/figures.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sa::ch7 {

// One of the three models of task 2, with what the tables and figures need.
struct CorpusModel {
  std::string name;   // in the tables: "single-head, bidirectional"
  std::string tag;    // in figure labels and file names: "single", "bi", "causal"
  ModelConfig cfg;
  std::unique_ptr<Generator> gen;  // draws the model, then every epoch's batches
  // The dropout masks, from a generator of their own (seed + 1): a model
  // trained with dropout then sees the same batches as one trained without.
  std::unique_ptr<Generator> masks;
  std::unique_ptr<TinyTransformer> model;
  std::vector<Matrix> untrained, trained;  // each head's weights on --text, before and after
  std::vector<double> epoch_loss, epoch_held;
  Score train_score, held_score, prefix_score;
};

// The three models of task 2, untrained, of width d_model (--corpus-d-model),
// the two multi-head ones with `heads` heads (--corpus-heads) (task_corpus.cpp).
std::vector<CorpusModel> make_corpus_models(int64_t d_model, int64_t heads, const Corpus& corpus, uint64_t seed);
// Each head's (seq, seq) weights on one sentence (task_corpus.cpp).
std::vector<Matrix> weights_on(TinyTransformer& model, const std::vector<int64_t>& ids);
// A head's mean entropy (task_corpus_heads.cpp).
double mean_entropy(const Matrix& P);

// The steps run_corpus calls from the other files, in its order.
// task_corpus_training.cpp:
void step_training_the_models(const CorpusOptions& o, const Corpus& corpus, const CorpusSplit& split,
                              const std::vector<int64_t>& text_ids, uint64_t seed, std::vector<CorpusModel>& models);
void step_bidirectional_cheats(const std::vector<CorpusModel>& models, const Corpus& corpus,
                               const CorpusSplit& split);
// task_corpus_heads.cpp:
void step_what_training_did(int64_t heads, const std::vector<CorpusModel>& models,
                            const std::vector<std::string>& labels, int64_t n);
void step_pattern_analyzer(const std::vector<CorpusModel>& models, int64_t n);
// task_corpus_figures.cpp:
void draw_corpus_figures(Figures& figures, int64_t heads, int64_t epochs, const Corpus& corpus,
                         const CorpusSplit& split, const std::vector<std::string>& labels, const std::string& quoted,
                         int64_t n, const std::vector<CorpusModel>& models);

}  // namespace sa::ch7
