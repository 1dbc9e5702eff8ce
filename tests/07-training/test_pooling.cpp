// Hidden suite of chapter 7, task 3: attention_pool and its backward against
// PyTorch (tests/reference/ch07_pooling.py: float64 autograd rounded once),
// the edges, and the classifier's gradient against finite differences.
#include "07-training/pooling.hpp"
#include "sa/gradcheck.hpp"

#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <string>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("07-pooling.txt");
  return f;
}

RowVector row(const std::string& name) { return fx().matrix(name).row(0); }

}  // namespace

TEST_CASE("attention_pool: weights and pooled vector against PyTorch", "[ch07][attention_pool]") {
  // kFloat32: a softmax over at most 9 scores and sums of at most 16 products.
  for (const std::string c : {"small", "one_row", "peaked"}) {
    INFO("case " << c << ": X " << shape_str(fx().matrix(c + "_X")));
    const PoolResult r = attention_pool(fx().matrix(c + "_X"), row(c + "_q"));
    require_close(c + " weights", r.weights, fx().matrix(c + "_weights"), kFloat32);
    require_close(c + " pooled", r.pooled, fx().matrix(c + "_pooled"), kFloat32);
  }
}

TEST_CASE("attention_pool: the weights sum to 1 and the pooled vector is their average of rows",
          "[ch07][attention_pool]") {
  Generator gen(3);
  const Matrix X = gen.randn(6, 4);
  const RowVector q = gen.randn(1, 4);
  INFO("attention_pool(X (6, 4) from randn, q (1, 4) from randn)");  // (a crash inside names its input)
  const PoolResult r = attention_pool(X, q);
  check_close("sum of the weights", r.weights.sum(), 1.0, kElementwise);
  // The largest score gets the largest weight (softmax keeps the order).
  Eigen::Index best_score = 0, best_weight = 0;
  (q * X.transpose()).maxCoeff(&best_score);
  r.weights.maxCoeff(&best_weight);
  CHECK(best_weight == best_score);
  require_close("pooled = weights X", r.pooled, r.weights * X, kFloat32);
}

TEST_CASE("attention_pool_backward: dX and dq against PyTorch autograd", "[ch07][attention_pool_backward]") {
  // kFloat32, as the forward; the one-row case has dq = 0 exactly (one
  // weight, always 1, so the scores pass no gradient).
  for (const std::string c : {"small", "one_row", "peaked"}) {
    INFO("case " << c);
    const Matrix X = fx().matrix(c + "_X");
    const RowVector q = row(c + "_q");
    const PoolResult fwd{row(c + "_weights"), row(c + "_pooled")};  // PyTorch's forward, not the reader's
    const PoolGrads g = attention_pool_backward(X, q, fwd, row(c + "_d_pooled"));
    require_close(c + " dX", g.dX, fx().matrix(c + "_dX"), kFloat32);
    require_close(c + " dq", g.dq, fx().matrix(c + "_dq"), kFloat32);
  }
}

TEST_CASE("attention_pool and its backward refuse shapes that do not fit", "[ch07][attention_pool]") {
  const Matrix X = Matrix::Ones(3, 4);
  const RowVector q = RowVector::Ones(4);
  CHECK_REFUSES("attention_pool(X (0, 4), q of width 4): no rows to pool", attention_pool(Matrix(0, 4), q),
                std::invalid_argument);
  CHECK_REFUSES("attention_pool(X (3, 4), q of width 3)", attention_pool(X, RowVector::Ones(3)), std::invalid_argument);
  CHECK_REFUSES("attention_pool(X (3, 0), q of width 0)", attention_pool(Matrix(3, 0), RowVector(0)),
                std::invalid_argument);
  const PoolResult fwd{RowVector::Constant(3, 1.0f / 3), RowVector::Ones(4)};
  CHECK_REFUSES("attention_pool_backward(X (3, 4), q of width 4, d_pooled of width 5)",
                attention_pool_backward(X, q, fwd, RowVector::Ones(5)), std::invalid_argument);
  CHECK_REFUSES("attention_pool_backward(X (3, 4), q of width 4, forward weights of length 2)",
                attention_pool_backward(X, q, PoolResult{RowVector::Ones(2), RowVector::Ones(4)}, RowVector::Ones(4)),
                std::invalid_argument);
  CHECK_REFUSES("attention_pool_backward(X (3, 4), q of width 3)",
                attention_pool_backward(X, RowVector::Ones(3), fwd, RowVector::Ones(4)), std::invalid_argument);
}

TEST_CASE("the pooling classifier: one training step's gradient of q against finite differences",
          "[ch07][attention_pool_backward]") {
  // The whole classifier (embeddings, pooling, head, cross-entropy) on three
  // sentences of the book's corpus: the gradient the trainer accumulates for
  // q, against central differences of the mean loss in float32 with h = 1e-2
  // (tolerance 2e-3 + 2e-2 relative: float32 differences of a loss of order 1).
  const Corpus corpus = parse_corpus("the cat sat on the mat\nthe dog chased the cat\na bird sang\n", "test");
  const auto labelled = label_by_subject(corpus);
  REQUIRE(labelled.size() == 3);
  CHECK(labelled[1].label == 1);  // "dog": the first subject, not "cat"
  Generator gen(5);
  PoolingClassifier model(gen, corpus.vocab.size(), corpus.max_len(), 6, int64_t(kSubjects.size()));
  auto mean_loss = [&](const PoolingClassifier& m) {
    double loss = 0;
    for (const LabelledSentence& s : labelled) {
      const RowVector logits = m.forward(corpus.sentences[size_t(s.sentence)]).logits;
      const double top = logits.maxCoeff();
      loss += std::log((logits.array() - float(top)).exp().sum()) + top - logits(s.label);
    }
    return loss / double(labelled.size());
  };
  AdamConfig cfg;
  cfg.lr = 0;  // only the gradient is wanted: the step must not move the model
  PoolingTrainer trainer(model, cfg);
  const float loss = [&] {
    INFO("one training step of the pooling classifier (3 sentences, d 6): attention_pool, its backward, adam_step");
    return trainer.step(model, corpus, labelled);
  }();
  check_close("the step's mean loss", loss, mean_loss(model), {1e-5, 1e-5});
  constexpr float h = 1e-2f;
  for (int64_t j = 0; j < 6; ++j) {
    PoolingClassifier moved = model;
    INFO(fmt::format("the pooling classifier's forward (attention_pool) with q[{}] moved by +-0.01, for finite "
                     "differences",
                     j));
    const double numeric = central_difference(moved.q(j), h, [&] { return mean_loss(moved); });
    check_close(fmt::format("pooling classifier (3 sentences, d 6, {} subjects): dL/dq[{}] against finite differences",
                            kSubjects.size(), j),
                trainer.grads.q(j), numeric, {2e-3, 2e-2});
  }
}
