// Chapter 7, task 3: attention pooling. One learned query attends over a
// sentence's token vectors; the weighted sum is classified. The corpus's
// sentences are labelled with their subject (pooling.hpp).
#include "07-training/pooling.hpp"
#include "07-training/program.hpp"

#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace sa::ch7 {

namespace {

constexpr int64_t kPoolingD = 16;
constexpr int64_t kPoolingEpochs = 40;
constexpr int64_t kPoolingBatch = 8;
constexpr double kPoolingLr = 1e-2;

std::vector<std::string> words_of(const Corpus& corpus, const std::vector<int64_t>& ids) {
  std::vector<std::string> w;
  for (size_t j = 0; j + 1 < ids.size(); ++j) w.push_back(corpus.vocab.word(ids[j]));
  return w;
}

}  // namespace

void run_pooling(const Corpus& corpus, const Cli& cli, Figures& figures, Steps& next_step) {
  next_step("Task 3: attention pooling, a sentence classifier");
  const std::vector<LabelledSentence> labelled = label_by_subject(corpus);
  std::vector<LabelledSentence> train, held_out;
  for (size_t i = 0; i < labelled.size(); ++i) (i % 8 == 7 ? held_out : train).push_back(labelled[i]);
  std::vector<int64_t> per_class(kSubjects.size(), 0);
  for (const LabelledSentence& s : labelled) ++per_class[size_t(s.label)];
  std::string classes;
  for (size_t c = 0; c < kSubjects.size(); ++c) classes += fmt::format("{}{} {}", c ? ", " : "", kSubjects[c], per_class[c]);
  say(fmt::format("Attention can summarise as well as mix. One learned query vector q attends over the token "
                  "vectors of a sentence, x_j = tok[word_j] + pos[j]: weights = softmax(X q^T / sqrt(d)), "
                  "pooled = weights X, one vector for the whole sentence, and a linear layer classifies it. The "
                  "label of a sentence is its subject, the first of {} in it. {} of the {} sentences {} one "
                  "({}); every 8th is held out ({} train, {} held out).",
                  fmt::join(kSubjects, ", "), labelled.size(), corpus.sentences.size(),
                  labelled.size() == 1 ? "has" : "have", classes, train.size(),
                  held_out.size()));
  if (train.empty() || held_out.empty()) {
    say("Too few labelled sentences in this corpus to train and hold out: task 3 is skipped.");
    return;
  }
  Generator gen(cli.seed);
  PoolingClassifier model(gen, corpus.vocab.size(), corpus.max_len(), kPoolingD, int64_t(kSubjects.size()));
  print_shape("tok", {corpus.vocab.size(), kPoolingD}, "(vocab, d), nn.Embedding");
  print_shape("pos", {corpus.max_len(), kPoolingD}, "(max_len, d), nn.Embedding");
  print_shape("q", {1, kPoolingD}, "the learned query, N(0, 1)");
  print_shape("head W", {kPoolingD, int64_t(kSubjects.size())}, "nn.Linear(d, classes)");
  const double before = pooling_accuracy(model, corpus, held_out);

  AdamConfig cfg;
  cfg.lr = kPoolingLr;
  PoolingTrainer trainer(model, cfg);
  std::vector<double> losses;
  for (int64_t epoch = 0; epoch < kPoolingEpochs; ++epoch) {
    const std::vector<int64_t> order = gen.randperm(int64_t(train.size()));
    std::vector<LabelledSentence> shuffled;
    for (int64_t i : order) shuffled.push_back(train[size_t(i)]);
    double sum = 0;
    int64_t steps = 0;
    for (size_t b = 0; b < shuffled.size(); b += kPoolingBatch, ++steps)
      sum += trainer.step(model, corpus,
                          std::span<const LabelledSentence>(shuffled).subspan(b, std::min<size_t>(kPoolingBatch, shuffled.size() - b)));
    losses.push_back(sum / double(steps));
  }
  const double after = pooling_accuracy(model, corpus, held_out);
  fmt::print("  {} epochs, batches of {}, Adam lr {}: loss {:.4f} -> {:.4f}; held-out accuracy {:.1f}% before, "
             "{:.1f}% after (chance {:.1f}%)\n",
             kPoolingEpochs, kPoolingBatch, kPoolingLr, losses.front(), losses.back(), 100 * before, 100 * after,
             100.0 / double(kSubjects.size()));

  // Which word does the query read? The largest weight of every held-out sentence.
  int64_t on_subject = 0, beside = 0;
  for (const LabelledSentence& s : held_out) {
    Eigen::Index top = 0;
    model.forward(corpus.sentences[size_t(s.sentence)]).pool.weights.maxCoeff(&top);
    on_subject += top == s.subject_position;
    beside += std::abs(int64_t(top) - s.subject_position) == 1;
  }
  const size_t shown = std::min<size_t>(held_out.size(), 6);
  fmt::print("  held-out sentences, their weights (largest in [ ]):\n");
  // One figure row per sentence, one column per position. Past a sentence's
  // end there is no word: NaN, which the heatmap leaves grey (a 0 there
  // would read as a word that got no weight).
  int64_t widest = 0;
  for (size_t k = 0; k < shown; ++k) widest = std::max<int64_t>(widest, int64_t(corpus.sentences[size_t(held_out[k].sentence)].size()) - 1);
  Matrix figure_weights = Matrix::Constant(int64_t(shown), widest, std::numeric_limits<float>::quiet_NaN());
  std::vector<std::string> figure_rows;
  for (size_t k = 0; k < shown; ++k) {
    const LabelledSentence& s = held_out[k];
    const auto& ids = corpus.sentences[size_t(s.sentence)];
    const auto f = model.forward(ids);
    Eigen::Index top = 0, predicted = 0;
    f.pool.weights.maxCoeff(&top);
    f.logits.maxCoeff(&predicted);
    const std::vector<std::string> words = words_of(corpus, ids);
    std::string line;
    for (size_t j = 0; j < words.size(); ++j)
      line += Eigen::Index(j) == top ? fmt::format(" [{} {:.2f}]", words[j], f.pool.weights(long(j)))
                                     : fmt::format(" {} {:.2f}", words[j], f.pool.weights(long(j)));
    fmt::print("   {} -> {} ({})\n", line, kSubjects[size_t(predicted)], predicted == s.label ? "right" : "wrong");
    figure_weights.row(int64_t(k)).head(f.pool.weights.size()) = f.pool.weights;
    figure_rows.push_back(fmt::format("{} ({})", fmt::join(words, " "), kSubjects[size_t(predicted)]));
  }
  const int64_t others = int64_t(held_out.size()) - on_subject;
  std::string rest;
  if (others == 0) rest = ".";
  else if (beside == others) rest = fmt::format("; on the other {}, on the word next to it.", others);
  else rest = fmt::format("; on the other {}, elsewhere ({} of them on the word next to it).", others, beside);
  say(fmt::format("On {} of the {} held-out sentences the largest weight falls on the subject word itself{} The "
                  "classifier was told only the label, never where the subject is: the weights show which words "
                  "it learned to read.",
                  on_subject, held_out.size(), rest));
  figures.draw("attention_pooling.png", [&](const std::string& path) {
    std::vector<std::string> positions;
    for (int64_t j = 0; j < widest; ++j) positions.push_back(std::to_string(j));
    plot::Heatmap h = plot::weights_heatmap("The learned query's weights on held-out sentences "
                                            "(predicted class in brackets)",
                                            figure_weights, figure_rows);
    h.col_labels = positions;
    h.xlabel = "position in the sentence (grey: past its end, no word)";
    h.ylabel = "";
    h.cblabel = "weight";
    h.decimals = 2;
    return plot::heatmap(path, h, 1000, 160 + 70 * int(shown));
  });
}

}  // namespace sa::ch7
