// Chapter 7, task 3: attention pooling, a sentence classifier.
//
// Attention can also summarise: one learned query vector q attends over the
// token vectors of a sentence, and the weighted sum, one vector for the
// whole sentence, goes to a classifier. The weights show which words the
// classifier reads. The two functions of the pooling itself are exercises
// (solutions/07-training/pooling.cpp, exercises/07-training/pooling.cpp);
// the classifier around them is written out here.
#pragma once

#include "07-training/corpus.hpp"
#include "07-training/training.hpp"

#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa {

struct PoolResult {
  RowVector weights;  // (1, n): softmax(X qᵀ / sqrt(d)), sums to 1
  RowVector pooled;   // (1, d): weights · X
};

// EXERCISE. One query q (1, d) attends over the n rows of X (n, d):
//   weights = softmax(X qᵀ / sqrt(d)),  pooled = weights · X.
// X with no rows, d = 0, or q of another width than X's rows, is refused
// with std::invalid_argument.
PoolResult attention_pool(const Matrix& X, const RowVector& q);

struct PoolGrads {
  Matrix dX;     // (n, d)
  RowVector dq;  // (1, d)
};

// EXERCISE. Backward of attention_pool, given d_pooled (1, d) and the
// forward's result for the same X and q:
//   dX_j  = weights_j · d_pooled                 (through the weighted sum)
//   dw_j  = X_j · d_pooled,  ds = softmax_backward(weights, dw)   (chapter 3)
//   dq    = ds · X / sqrt(d),  dX_j += ds_j · q / sqrt(d)        (through the scores)
// Shapes that do not fit are refused with std::invalid_argument.
PoolGrads attention_pool_backward(const Matrix& X, const RowVector& q, const PoolResult& fwd,
                                  const RowVector& d_pooled);

// ---------------------------------------------------------------------------
// The classifier: token and position embeddings, attention pooling, a linear
// head. A sentence's label is its subject: the first of kSubjects in it.

inline const std::vector<std::string> kSubjects{"cat", "dog", "bird", "fish", "boy", "girl"};

struct LabelledSentence {
  int64_t sentence = 0;  // index into Corpus::sentences
  int64_t label = 0;     // index into kSubjects
  int64_t subject_position = 0;
};

// Every sentence of the corpus with a subject from kSubjects, labelled with
// the first one it holds (the end token is not part of the input).
inline std::vector<LabelledSentence> label_by_subject(const Corpus& corpus) {
  std::vector<LabelledSentence> out;
  for (size_t s = 0; s < corpus.sentences.size(); ++s) {
    const auto& ids = corpus.sentences[s];
    for (size_t p = 0; p + 1 < ids.size(); ++p) {
      const auto it = std::find(kSubjects.begin(), kSubjects.end(), corpus.vocab.word(ids[p]));
      if (it != kSubjects.end()) {
        out.push_back({int64_t(s), int64_t(it - kSubjects.begin()), int64_t(p)});
        break;
      }
    }
  }
  return out;
}

struct PoolingClassifier {
  Matrix tok, pos;  // (vocab, d), (max_len, d): nn.Embedding, N(0, 1)
  RowVector q;      // (1, d): the learned query, N(0, 1)
  Linear head;      // (d, classes), nn.Linear

  // Drawn in this order from `gen`, as the PyTorch twin would.
  PoolingClassifier(Generator& gen, int64_t vocab, int64_t max_len, int64_t d, int64_t classes)
      : tok(make_embedding(gen, vocab, d)), pos(make_embedding(gen, max_len, d)), q(gen.randn(1, d)),
        head(make_linear(gen, d, classes)) {}

  // X = tok[ids] + pos[0..n-1], the sentence without its end token.
  Matrix inputs(const std::vector<int64_t>& ids) const {
    const int64_t n = int64_t(ids.size()) - 1;
    Matrix X(n, tok.cols());
    for (int64_t j = 0; j < n; ++j) X.row(j) = tok.row(ids[size_t(j)]) + pos.row(j);
    return X;
  }

  struct Forward {
    Matrix X;
    PoolResult pool;
    RowVector logits;
  };
  Forward forward(const std::vector<int64_t>& ids) const {
    Forward f;
    f.X = inputs(ids);
    f.pool = attention_pool(f.X, q);
    f.logits = f.pool.pooled * head.W + *head.b;
    return f;
  }
};

// One Adam step over a batch of labelled sentences (mean cross-entropy);
// returns the batch's mean loss. Gradients and Adam's moments live in the
// `grads`, `m` and `v` classifiers (same shapes as `model`, zeros at first).
struct PoolingTrainer {
  PoolingClassifier grads, m, v;
  AdamConfig cfg;
  int64_t t = 0;

  PoolingTrainer(const PoolingClassifier& model, const AdamConfig& c) : grads(model), m(model), v(model), cfg(c) {
    for (PoolingClassifier* p : {&grads, &m, &v}) zero(*p);
  }

  static void zero(PoolingClassifier& p) {
    p.tok.setZero();
    p.pos.setZero();
    p.q.setZero();
    p.head.W.setZero();
    p.head.b->setZero();
  }

  template <typename F>
  static void each(PoolingClassifier& p, F&& f) {
    f(std::span(p.tok.data(), size_t(p.tok.size())));
    f(std::span(p.pos.data(), size_t(p.pos.size())));
    f(std::span(p.q.data(), size_t(p.q.size())));
    f(std::span(p.head.W.data(), size_t(p.head.W.size())));
    f(std::span(p.head.b->data(), size_t(p.head.b->size())));
  }

  float step(PoolingClassifier& model, const Corpus& corpus, std::span<const LabelledSentence> batch) {
    zero(grads);
    double loss = 0;
    const float inv = 1.0f / float(batch.size());
    for (const LabelledSentence& s : batch) {
      const auto& ids = corpus.sentences[size_t(s.sentence)];
      const auto f = model.forward(ids);
      // Cross-entropy through softmax: d logits = (probs - one_hot) / batch.
      const float top = f.logits.maxCoeff();
      RowVector probs = (f.logits.array() - top).exp().matrix();
      const float sum = probs.sum();
      probs /= sum;
      loss -= std::log(double(probs(s.label)));
      RowVector d_logits = probs;
      d_logits(s.label) -= 1.0f;
      d_logits *= inv;
      grads.head.W.noalias() += f.pool.pooled.transpose() * d_logits;
      *grads.head.b += d_logits;
      const PoolGrads g = attention_pool_backward(f.X, model.q, f.pool, d_logits * model.head.W.transpose());
      grads.q += g.dq;
      for (int64_t j = 0; j < g.dX.rows(); ++j) {  // X_j = tok[id_j] + pos[j]: both get dX_j
        grads.tok.row(ids[size_t(j)]) += g.dX.row(j);
        grads.pos.row(j) += g.dX.row(j);
      }
    }
    ++t;
    std::vector<std::span<float>> params, gs, ms, vs;
    each(model, [&](std::span<float> s) { params.push_back(s); });
    each(grads, [&](std::span<float> s) { gs.push_back(s); });
    each(m, [&](std::span<float> s) { ms.push_back(s); });
    each(v, [&](std::span<float> s) { vs.push_back(s); });
    for (size_t k = 0; k < params.size(); ++k) adam_step(params[k], gs[k], ms[k], vs[k], t, cfg);
    return float(loss / double(batch.size()));
  }
};

// The share of `sentences` whose most likely class is their label.
inline double pooling_accuracy(const PoolingClassifier& model, const Corpus& corpus,
                               std::span<const LabelledSentence> sentences) {
  if (sentences.empty()) return 0.0;
  int64_t correct = 0;
  for (const LabelledSentence& s : sentences) {
    Eigen::Index best = 0;
    model.forward(corpus.sentences[size_t(s.sentence)]).logits.maxCoeff(&best);
    correct += best == s.label;
  }
  return double(correct) / double(sentences.size());
}

}  // namespace sa
