// The whole-model gradient check of chapter 7's suites (test_training.cpp,
// test_rope.cpp): one directional derivative per tensor.
#pragma once

#include "07-training/model.hpp"
#include "sa/gradcheck.hpp"
#include "sa/rng.hpp"
#include "support/compare.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sa::test {

// Gradients compared with PyTorch (or another path to the same gradient):
// float32 sums in a different order, and gradients that partly cancel
// (LayerNorm's backward subtracts means), so the allowed error is relative to
// the tensor's largest gradient: 1e-5 of it, plus kFloat32's 1e-4 of each
// entry. The reference solution differs from PyTorch by at most 5e-7 of the
// largest gradient (twenty times inside); a sign, factor or transposition
// error is of the order of the gradient itself. `actual` is read in
// `expected`'s shape, so that a failure names the entry as [row, column].
inline void require_close_gradient(const std::string& what, std::span<const float> actual, const Matrix& expected) {
  const double scale = expected.size() > 0 ? double(expected.cwiseAbs().maxCoeff()) : 0.0;
  const Tolerance tol{1e-5 * scale, 1e-4};
  if (int64_t(actual.size()) != expected.size()) {
    require_close(what, std::vector<float>(actual.begin(), actual.end()),
                  std::vector<float>(expected.data(), expected.data() + expected.size()), tol);
    return;
  }
  require_close(what, Matrix(Eigen::Map<const Matrix>(actual.data(), expected.rows(), expected.cols())), expected, tol);
}

// The small model of the gradient checks: vocab 9, 7 positions, d_model 8,
// 2 heads, 2 layers, d_ff 12, its weights re-drawn N(0, 0.3²) (larger than
// the initialisation, so attention is far from uniform and every gradient
// is well above float32 noise), and 3 random sequences of `seq` tokens with
// random targets, all from Generator(seed) in that order.
struct GradcheckModel {
  Generator gen;
  TinyTransformer model;
  int64_t batch = 3;
  std::vector<int64_t> ids, targets;
};

inline ModelConfig gradcheck_config(PositionEncoding position) {
  ModelConfig cfg;
  cfg.vocab = 9;
  cfg.max_seq = 7;
  cfg.d_model = 8;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 12;
  cfg.position = position;
  return cfg;
}

inline GradcheckModel make_gradcheck_model(uint64_t seed, int64_t seq,
                                           PositionEncoding position = PositionEncoding::learned) {
  Generator gen(seed);
  TinyTransformer model(gradcheck_config(position), gen);
  for_each_tensor(model.params, [&](const std::string&, std::span<float> t) {
    gen.normal_(t.data(), int64_t(t.size()), 0.0, 0.3);
  });
  GradcheckModel m{std::move(gen), std::move(model), 3, {}, {}};
  m.ids = m.gen.randint(0, 9, m.batch * seq);
  m.targets = m.gen.randint(0, 9, m.batch * seq);
  return m;
}

// For a model whose gradients are in model.grads, and for a random ±1
// direction u per tensor (drawn from gen),
//   (L(θ + h u) − L(θ − h u)) / 2h  ≈  ⟨∂L/∂θ, u⟩,   h = 1e-2,
// which weighs every entry of the gradient at once. Compared relative to
// Σ|g|, the size ⟨g, u⟩ could have, with tolerance 2e-3: a sign error gives
// 2 |⟨g, u⟩|, a factor of 2 gives |⟨g, u⟩|, a transposed or misplaced
// gradient a different random sum of the same size; the reference stays
// below 1.5e-4.
inline void require_directional_derivatives(TinyTransformer& model, Generator& gen,
                                            const std::function<double()>& loss, const std::string& label) {
  std::vector<std::span<float>> params, grads;
  std::vector<std::string> names;
  for_each_tensor(model.params, [&](const std::string& n, std::span<float> t) {
    names.push_back(n);
    params.push_back(t);
  });
  for_each_tensor(model.grads, [&](const std::string&, std::span<float> t) { grads.push_back(t); });
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<float> u(params[k].size());
    double analytic = 0.0, norm1 = 0.0;
    for (size_t i = 0; i < u.size(); ++i) {
      u[i] = gen.random() % 2 ? 1.0f : -1.0f;
      analytic += double(grads[k][i]) * u[i];
      norm1 += std::abs(double(grads[k][i]));
    }
    const double numeric = directional_difference(params[k], u, 1e-2f, loss);
    const ModelConfig& c = model.config();
    const std::string model_words = fmt::format("model vocab {}, d_model {}, n_heads {}, n_layers {}, d_ff {}", c.vocab,
                                                c.d_model, c.n_heads, c.n_layers, c.d_ff);
    // One sentence a failure: which parameter, both numbers, what is allowed.
    if (!(norm1 > 0.0))
      FAIL_CHECK(fmt::format("the gradient of {}{} is all zeros ({})", names[k], label, model_words));
    else if (!(std::abs(analytic - numeric) <= 2e-3 * norm1))
      FAIL_CHECK(fmt::format("gradient of {}{} in a random direction u: <grad, u> = {:.6g}, finite differences {:.6g}, "
                             "{:.3g} apart, allowed {:.3g} (2e-3 * sum |grad| = 2e-3 * {:.3g}); {}",
                             names[k], label, analytic, numeric, std::abs(analytic - numeric), 2e-3 * norm1, norm1,
                             model_words));
  }
}

// The whole check for a model without dropout: forward, loss, backward,
// then require_directional_derivatives on that loss.
inline void require_model_gradients(GradcheckModel& m, const std::string& label) {
  // (A crash in the reader's forward or backward passes says which model.)
  const ModelConfig& c = m.model.config();
  INFO(fmt::format("the gradient check's model{}: vocab {}, d_model {}, n_heads {}, n_layers {}, batch {}: forward, "
                   "loss, backward",
                   label, c.vocab, c.d_model, c.n_heads, c.n_layers, m.batch));
  auto loss = [&] {
    m.model.forward(m.ids, m.batch);
    return double(m.model.loss(m.targets));
  };
  loss();
  m.model.backward();
  require_directional_derivatives(m.model, m.gen, loss, label);
}

}  // namespace sa::test
