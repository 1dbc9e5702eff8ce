// Chapter 7, task 2: next-token prediction on a small sentence corpus with
// three models (one head or several, bidirectional or causal), what training
// did to each head, and the pattern analyzer over them.
//
// This file reads the input, makes the three models and runs the task's
// steps in order (run_corpus); task_corpus.hpp lists which file holds which
// step.
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/task_corpus.hpp"
#include "07-training/training.hpp"

#include "05-causal-mask/mask.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sa::ch7 {

CorpusInput read_corpus_input(const std::string& corpus_path, const std::string& text, bool text_given) {
  CorpusInput in{load_corpus(corpus_path), {}};
  std::vector<std::string> words;
  for (int64_t i = 0; i < in.corpus.vocab.size(); ++i) words.push_back(in.corpus.vocab.word(i));
  // (before encode_text, whose tokenizer would ask for "at least one word")
  if (text.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
    throw UsageError("--text has no words; give at least two");
  in.text_ids = encode_text_option(text, words, text_given);
  const int64_t n = int64_t(in.text_ids.size());
  if (n < 2) throw UsageError(fmt::format("--text '{}' has {} token; give at least two", printable(text, 200), n));
  if (n > in.corpus.max_len() - 1)
    throw UsageError(fmt::format("--text has {} tokens, but the models are trained on inputs of at most {}", n,
                                 in.corpus.max_len() - 1));
  if (int64_t(in.corpus.sentences.size()) < 16)
    throw UsageError(fmt::format("corpus '{}' has {}; task 2 needs at least 16 (every 8th is held out)",
                                 corpus_path, count_of(int64_t(in.corpus.sentences.size()), "sentence")));
  return in;
}

// ===========================================================================
// Task 2: next-token prediction on a small sentence corpus, and
// the pattern analyzer over every head.
// ===========================================================================

namespace {

// The three models' short names, in figure labels and checkpoint names.
constexpr const char* kCorpusTags[3] = {"single", "bi", "causal"};

// The checkpoint of one of them.
std::string corpus_checkpoint_path(const std::string& checkpoint_dir, const std::string& tag) {
  return fmt::format("{}/corpus-{}.safetensors", checkpoint_dir, tag);
}

// The configurations of task 2's three models: one head, H = heads heads
// bidirectional, H heads causal; one layer each, of width d_model.
std::vector<ModelConfig> corpus_model_configs(int64_t d_model, int64_t heads, const Corpus& corpus) {
  std::vector<ModelConfig> configs(3);
  for (size_t k = 0; k < 3; ++k) {
    ModelConfig& c = configs[k];
    c.vocab = corpus.vocab.size();
    c.max_seq = corpus.max_len();
    c.d_model = d_model;
    c.n_heads = k == 0 ? 1 : heads;
    c.n_layers = 1;
    c.d_ff = 4 * d_model;
    c.causal = k == 2;
  }
  return configs;
}

}  // namespace

// The three models of task 2, untrained: one head or H, bidirectional or
// causal, each from its own generator with the same seed, so the two
// H-head models start from the same weights and see the same batches.
std::vector<CorpusModel> make_corpus_models(int64_t d_model, int64_t heads, const Corpus& corpus, uint64_t seed) {
  std::vector<CorpusModel> models(3);
  const int64_t H = heads;
  models[0].name = "single-head, bidirectional";
  models[0].tag = kCorpusTags[0];
  models[1].name = fmt::format("{} heads, bidirectional", H);
  models[1].tag = kCorpusTags[1];
  models[2].name = fmt::format("{} heads, causal", H);
  models[2].tag = kCorpusTags[2];
  const std::vector<ModelConfig> configs = corpus_model_configs(d_model, heads, corpus);
  for (size_t k = 0; k < 3; ++k) {
    models[k].cfg = configs[k];
    models[k].gen = std::make_unique<Generator>(seed);
    models[k].masks = std::make_unique<Generator>(seed + 1);
    models[k].model = std::make_unique<TinyTransformer>(models[k].cfg, *models[k].gen);
  }
  return models;
}

// Each head's (seq, seq) weights on one sentence.
std::vector<Matrix> weights_on(TinyTransformer& model, const std::vector<int64_t>& ids) {
  model.forward(ids, 1);
  std::vector<Matrix> heads;
  for (int64_t h = 0; h < model.config().n_heads; ++h) heads.push_back(head_weights(model, 0, 0, h));
  return heads;
}

namespace {

// ===========================================================================
// Task 2's steps, in the order run_corpus calls them (this file holds
// the first two and the saving; task_corpus.hpp lists the others).
// ===========================================================================

void print_corpus_title(const CorpusOptions& o, const Corpus& corpus, uint64_t seed) {
  gap();
  fmt::print("Task 2: next-token prediction on {} ({} sentences), d_model {}, 1 layer, batch {}, Adam lr {}, "
             "attention dropout {}, {}, seed {}\n",
             shown_path(o.corpus), corpus.sentences.size(), o.corpus_d_model, o.corpus_batch, o.corpus_lr,
             o.dropout, count_of(o.corpus_epochs, "epoch"), seed);
}

// Step "The corpus: predict every next word".
void step_the_corpus(int64_t batch, const Corpus& corpus, const CorpusSplit& split) {
  std::map<size_t, int64_t> lengths;
  for (const auto& s : corpus.sentences) ++lengths[s.size()];
  std::string length_list;
  for (const auto& [len, count] : lengths) length_list += fmt::format("{}{} x {}", length_list.empty() ? "" : ", ", count, len);
  const size_t shortest = lengths.begin()->first, longest = lengths.rbegin()->first;
  fmt::print("  {} sentences of {} tokens with the end token '.' (count x tokens: {})\n", corpus.sentences.size(),
             shortest == longest ? fmt::format("{}", shortest) : fmt::format("{} to {}", shortest, longest),
             length_list);
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
  print_shape(fmt::format("a batch of {}, inputs", count_of(batch, "such sentence")), {batch, T0},
              "(batch, seq): all of one length");
  print_shape("its targets", {batch, T0});
  // The examples are the book's corpus.txt; a --corpus of the reader's may
  // be all predictable (the same sentence 16 times: 100% after one epoch).
  say("Every position predicts the word after it, and every prediction counts. A batch holds sentences of one "
      "length, so no padding is needed. In the book's corpus.txt some of the next words can be known (after "
      "'sat' comes 'on'), some cannot (after 'the' comes one of six animals or an adjective, anyone's guess): "
      "no model reaches 100% on it, unless it cheats.");
}

// Step "Three models: one head or four (--corpus-heads), bidirectional or causal". Returns
// them untrained, with each head's weights on --text.
std::vector<CorpusModel> step_three_models(int64_t d_model, int64_t heads, const Corpus& corpus, uint64_t seed,
                                           const std::vector<int64_t>& text_ids,
                                           const std::vector<std::string>& labels) {
  std::vector<CorpusModel> models = make_corpus_models(d_model, heads, corpus, seed);
  const int64_t n = int64_t(text_ids.size());
  const int64_t H = heads;
  for (const CorpusModel& m : models) {
    const ModelConfig& c = m.cfg;
    fmt::print("  {:<26} d_k {:>2}  mask {:<15}  {} parameters\n", m.name, c.d_k(),
               c.causal ? "causal" : "none (all keys)", parameter_count(m.model->params));
  }
  say(fmt::format("Three setups, on the model of task 1 with one block: token and position "
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
      "at key i + 1. Such models are easily trained this way by mistake; this program does it on purpose, and then "
      "checks what they learned.");
  for (CorpusModel& m : models) m.untrained = weights_on(*m.model, text_ids);
  return models;
}

// Step "Save the three models".
void step_save_the_models(const CorpusOptions& o, const Corpus& corpus, uint64_t seed, std::vector<CorpusModel>& models,
                          const std::vector<int64_t>& text_ids, const std::vector<std::string>& labels) {
  for (CorpusModel& m : models) {
    Checkpoint ckpt;
    ckpt.config = m.cfg;
    for (int64_t i = 0; i < corpus.vocab.size(); ++i) ckpt.tokens.push_back(corpus.vocab.word(i));
    ckpt.note = fmt::format("task 2, next-word prediction on {}: {}, {} from seed {}, held-out accuracy "
                            "{:.2f}% (whole sentence), {:.2f}% (prefix only)",
                            std::filesystem::path(o.corpus).filename().string(), m.name,
                            count_of(o.corpus_epochs, "epoch"), seed,
                            m.held_score.percent(), m.prefix_score.percent());
    ckpt.params = m.model->params;
    save_and_verify(ckpt, corpus_checkpoint_path(o.checkpoint_dir, m.tag), *m.model, text_ids, 1);
  }
  fmt::print("  look at one:  {} --checkpoint {} --text \"{}\" --layer 0 --head 1\n",
             shown_path(sibling_program("07-training-analyze")),
             shown_path(corpus_checkpoint_path(o.checkpoint_dir, kCorpusTags[2])),
             fmt::join(labels, " "));
}

}  // namespace

void run_corpus(const CorpusOptions& o, const CorpusInput& input, const Cli& cli, Figures& figures, Steps& next_step) {
  const Corpus& corpus = input.corpus;
  const std::vector<int64_t>& text_ids = input.text_ids;
  const int64_t n = int64_t(text_ids.size());
  const CorpusSplit split = split_corpus(corpus, 8);
  std::vector<std::string> labels;
  for (int64_t id : text_ids) labels.push_back(corpus.vocab.word(id));
  const std::string quoted = fmt::format("\"{}\"", fmt::join(labels, " "));
  print_corpus_title(o, corpus, cli.seed);

  next_step("The corpus: predict every next word");
  step_the_corpus(o.corpus_batch, corpus, split);
  // "four" by default: --corpus-heads changes the count, and the title follows.
  constexpr std::array<const char*, 8> kWords{"two", "three", "four", "five", "six", "seven", "eight", "nine"};
  const std::string heads = o.corpus_heads <= 9 ? kWords[size_t(o.corpus_heads - 2)] : std::to_string(o.corpus_heads);
  next_step(fmt::format("Three models: one head or {}, bidirectional or causal", heads));
  std::vector<CorpusModel> models =
      step_three_models(o.corpus_d_model, o.corpus_heads, corpus, cli.seed, text_ids, labels);
  next_step("Training the three models");
  step_training_the_models(o, corpus, split, text_ids, cli.seed, models);
  next_step("Bidirectional next-word prediction cheats");
  step_bidirectional_cheats(models, corpus, split);
  next_step(fmt::format("What training did to each head, on {}", quoted));
  step_what_training_did(o.corpus_heads, models, labels, n);
  next_step("The pattern analyzer over every head");
  step_pattern_analyzer(models, n);
  next_step("Save the three models");
  step_save_the_models(o, corpus, cli.seed, models, text_ids, labels);

  figures.heading();
  draw_corpus_figures(figures, o.corpus_heads, o.corpus_epochs, corpus, split, labels, quoted, n, models);
}

std::vector<CheckpointTarget> corpus_checkpoints(const CorpusOptions& o, const CorpusInput& input) {
  const Corpus& corpus = input.corpus;
  uint64_t token_bytes = 0;
  for (int64_t id = 0; id < corpus.vocab.size(); ++id) token_bytes += corpus.vocab.word(id).size() + 1;
  std::vector<CheckpointTarget> targets;
  const std::vector<ModelConfig> configs = corpus_model_configs(o.corpus_d_model, o.corpus_heads, corpus);
  for (size_t k = 0; k < configs.size(); ++k)
    targets.push_back({corpus_checkpoint_path(o.checkpoint_dir, kCorpusTags[k]),
                       checkpoint_size_bound(configs[k], token_bytes)});
  return targets;
}

}  // namespace sa::ch7
