// Hidden suite of chapter 7: the four exercise backward passes (and Adam),
// each against PyTorch autograd (tests/reference/ch07_training.py) and
// against central finite differences; then the whole model against its
// PyTorch twin, llm.c's test_gpt2 style: same seed, same initial weights,
// same logits, loss and gradients, and the same losses over 10 Adam steps.
//
// How the finite-difference checks work, and why they can fail
// ------------------------------------------------------------
// They run on the float32 code itself (no double-precision twin): for a
// function Y = f(X) the scalar is L = Σ R ∘ Y with a fixed random R, so
// every output entry counts with its own weight and a misplaced entry cannot
// cancel out; the backward gets dY = R, and
//     ∂L/∂x_i ≈ (L(x_i + h) − L(x_i − h)) / 2h,     h = 1e-2,
// L summed in double. The error of that estimate, for inputs of order 1:
//   - truncation h² f'''/6: about 2e-5 relative to the gradient;
//   - float32 rounding of the outputs (about 6e-8 relative each), divided by
//     2h: a few 1e-6 relative.
// The criterion is relative to the gradient's size:
//     max_i |analytic_i − numeric_i| <= kFdTolerance · max_i |numeric_i|
// with kFdTolerance = 2e-3. The reference solutions stay below 5e-5 on the
// single layers and 1.5e-4 on the whole model (whose check is a directional
// derivative, see there): ten to forty times inside. A gradient off by a
// sign (error 2), a factor of 2 (error 1), transposed or sent to the wrong
// entry (order 1) is hundreds of times past it. Shapes are not square where a transposition
// could hide (a transposed result then has the wrong shape).
#include "07-training/attention_lanes.hpp"
#include "07-training/model.hpp"
#include "07-training/reversal.hpp"
#include "07-training/training.hpp"
#include "model_gradcheck.hpp"
#include "sa/gradcheck.hpp"

#include "05-causal-mask/mask.hpp"
#include "sa/rng.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("07-training.txt");
  return f;
}

constexpr float kFdStep = 1e-2f;
constexpr double kFdTolerance = 2e-3;

// An output of the right shape whose every entry is NaN: a function that
// forgets to write one fails the comparison.
Matrix nan_matrix(int64_t rows, int64_t cols) {
  return Matrix::Constant(rows, cols, std::numeric_limits<float>::quiet_NaN());
}

// Σ R ∘ Y in double.
double weighted_sum(const Matrix& R, const Matrix& Y) {
  double s = 0.0;
  for (int64_t i = 0; i < Y.size(); ++i) s += double(R.data()[i]) * double(Y.data()[i]);
  return s;
}

// Central differences of `loss` with respect to every entry of `x`.
std::vector<double> numeric_gradient(float* x, int64_t n, const std::function<double()>& loss) {
  std::vector<double> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) g[size_t(i)] = central_difference(x[i], kFdStep, loss);
  return g;
}

// Entry [i, j] of a packed (batch * seq, 3 * d_model) dQKV in the words of
// the model: which of dQ, dK and dV, which sequence, head, and row and column
// of that head's (seq, d_k) block. A failure then points at the block the
// mistake is in (dK of one head only, say) instead of at a bare index.
std::string packed_qkv_entry(int64_t i, int64_t j, int64_t seq, int64_t heads, int64_t d_model) {
  const int64_t d_k = d_model / heads, part = j / d_model;
  return fmt::format("d{} of sequence {}, head {}, row {}, column {} (dQKV [{}, {}])", "QKV"[part], i / seq,
                     (j % d_model) / d_k, i % seq, j % d_k, i, j);
}
std::function<std::string(int64_t)> packed_qkv_names(int64_t seq, int64_t heads, int64_t d_model) {
  return [=](int64_t flat) { return packed_qkv_entry(flat / (3 * d_model), flat % (3 * d_model), seq, heads, d_model); };
}

// Flat entry i of a row-major matrix with `cols` columns, as "[row, col]".
std::function<std::string(int64_t)> matrix_entries(int64_t cols) {
  return [=](int64_t flat) { return fmt::format("[{}, {}]", flat / cols, flat % cols); };
}

// `name_entry` says where flat entry i of the gradient is; without it, "entry i".
void require_gradient(const std::string& what, const float* analytic, const std::vector<double>& numeric,
                      const std::function<std::string(int64_t)>& name_entry = nullptr) {
  double scale = 0.0, worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    scale = std::max(scale, std::abs(numeric[i]));
    const double err = std::abs(double(analytic[i]) - numeric[i]);
    if (!(err <= worst)) {  // also catches NaN
      worst = err;
      at = i;
    }
  }
  // A failure is one sentence: where the analytic gradient is furthest from
  // the finite differences, both values, and what is allowed.
  if (!(scale > 0.0))  // a check against an all-zero gradient would prove nothing
    FAIL(what + ": every finite difference is 0, so the check would prove nothing");
  if (!(worst <= kFdTolerance * scale))
    FAIL(fmt::format("{}: largest difference {:.3g} at {} (analytic {:.6g}, finite differences {:.6g}); "
                     "allowed {:.1e} * max |gradient| = {:.3g}",
                     what, worst, name_entry ? name_entry(int64_t(at)) : fmt::format("entry {}", at), analytic[at],
                     numeric[at], kFdTolerance, kFdTolerance * scale));
  SUCCEED();
}

LayerNorm fixture_layernorm() {
  LayerNorm ln = make_layernorm(fx().matrix("ln.gamma").cols());
  ln.gamma = RowVector(fx().matrix("ln.gamma"));
  ln.beta = RowVector(fx().matrix("ln.beta"));
  return ln;
}

// The small model of the fixture, built from the same seed as PyTorch's.
struct FixtureModel {
  int64_t seed, batch, samples;
  ReversalTask task;
  ModelConfig cfg;
  explicit FixtureModel(const std::vector<int64_t>& c) : seed(c[0]), batch(c[6]), samples(c[7]) {
    task.vocab = c[1];
    task.digits = c[2];
    cfg.vocab = c[1];
    cfg.max_seq = task.sample_len();
    cfg.d_model = c[3];
    cfg.n_heads = c[4];
    cfg.n_layers = c[5];
    cfg.d_ff = 4 * c[3];
  }
  // Which model a failure is about (appended to its message by INFO).
  std::string describe() const {
    return fmt::format("the fixture model: seed {}, vocab {}, d_model {}, n_heads {}, n_layers {}, d_ff {}, batch {}",
                       seed, cfg.vocab, cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff, batch);
  }
};

}  // namespace

// ===========================================================================
// layernorm_backward
// ===========================================================================
TEST_CASE("layernorm_backward: matches PyTorch autograd", "[ch07][layernorm_backward]") {
  const Matrix X = fx().matrix("ln.X");
  const LayerNorm ln = fixture_layernorm();
  Matrix Y(X.rows(), X.cols());
  LayerNormCache cache(X.rows(), X.cols());
  layernorm_forward(X, ln, Y, cache);
  const std::string shapes = fmt::format("X {}", shape_str(X));
  require_close("layernorm_forward(" + shapes + ")", Y, fx().matrix("ln.Y"), kFloat32);

  Matrix dX = nan_matrix(X.rows(), X.cols());
  LayerNorm grad = make_layernorm(ln.d());
  grad.gamma.setConstant(std::numeric_limits<float>::quiet_NaN());
  grad.beta.setConstant(std::numeric_limits<float>::quiet_NaN());
  {
    INFO("layernorm_backward(dY, " + shapes + ") after layernorm_forward");
    layernorm_backward(fx().matrix("ln.dY"), cache, ln, dX, grad);
  }
  // dX sums d products of order 1 and subtracts two means: float32
  // rounding of a few 1e-7, well inside kFloat32.
  require_close("layernorm_backward(" + shapes + "): dX", dX, fx().matrix("ln.dX"), kFloat32);
  require_close("layernorm_backward(" + shapes + "): d_gamma", grad.gamma, fx().matrix("ln.dgamma"), kFloat32);
  require_close("layernorm_backward(" + shapes + "): d_beta", grad.beta, fx().matrix("ln.dbeta"), kFloat32);
}

TEST_CASE("layernorm_backward: agrees with central finite differences", "[ch07][layernorm_backward]") {
  Generator gen(701);
  const int64_t rows = 4, d = 6;
  Matrix X = gen.randn(rows, d) * 1.5f;
  X.col(2).array() += 2.0f;  // rows with a non-zero mean
  LayerNorm ln = make_layernorm(d);
  ln.gamma = RowVector(gen.randn(1, d));
  ln.beta = RowVector(gen.randn(1, d));
  const Matrix R = gen.randn(rows, d);

  Matrix Y(rows, d);
  LayerNormCache cache(rows, d);
  auto loss = [&] {
    layernorm_forward(X, ln, Y, cache);
    return weighted_sum(R, Y);
  };
  loss();
  Matrix dX = nan_matrix(rows, d);
  LayerNorm grad = make_layernorm(d);
  {
    INFO("layernorm_backward(dY (4, 6) from randn, X (4, 6) from randn * 1.5)");
    layernorm_backward(R, cache, ln, dX, grad);
  }

  require_gradient("layernorm_backward(X (4, 6)) dX", dX.data(), numeric_gradient(X.data(), X.size(), loss),
                   matrix_entries(X.cols()));
  require_gradient("layernorm_backward(X (4, 6)) d_gamma", grad.gamma.data(),
                   numeric_gradient(ln.gamma.data(), d, loss));
  require_gradient("layernorm_backward(X (4, 6)) d_beta", grad.beta.data(), numeric_gradient(ln.beta.data(), d, loss));
}

TEST_CASE("layernorm_backward: dY, dX or grad of the wrong shape are refused", "[ch07][layernorm_backward]") {
  const int64_t rows = 3, d = 4;
  Generator gen(707);
  const Matrix X = gen.randn(rows, d);
  const LayerNorm ln = make_layernorm(d);
  Matrix Y(rows, d);
  LayerNormCache cache(rows, d);
  layernorm_forward(X, ln, Y, cache);
  Matrix dX(rows, d);
  LayerNorm grad = make_layernorm(d);
  const Matrix dY = Matrix::Ones(rows, d);
  CHECK_REFUSES("layernorm_backward(dY (3, 5)) after a forward of X (3, 4)",
                layernorm_backward(Matrix::Ones(rows, d + 1), cache, ln, dX, grad), std::invalid_argument);
  CHECK_REFUSES("layernorm_backward(dY (4, 4)) after a forward of X (3, 4)",
                layernorm_backward(Matrix::Ones(rows + 1, d), cache, ln, dX, grad), std::invalid_argument);
  Matrix wrong_dX(rows, d - 1);
  CHECK_REFUSES("layernorm_backward(dY (3, 4), dX (3, 3)): dX must be X's shape",
                layernorm_backward(dY, cache, ln, wrong_dX, grad), std::invalid_argument);
  LayerNorm wrong_grad = make_layernorm(d + 2);
  CHECK_REFUSES("layernorm_backward(dY (3, 4), grad of a LayerNorm of 6 features): the layer has 4",
                layernorm_backward(dY, cache, ln, dX, wrong_grad), std::invalid_argument);
  // And the right shapes go through.
  {
    INFO("layernorm_backward(dY (3, 4), dX (3, 4), grad of 4 features): every shape right");
    CHECK_NOTHROW(layernorm_backward(dY, cache, ln, dX, grad));
  }
}

// ===========================================================================
// attention_backward
// ===========================================================================
TEST_CASE("attention_backward: QKV, P, dO, dP or dQKV of the wrong shape are refused", "[ch07][attention_backward]") {
  // 2 sequences of 3 tokens, 2 heads of d_k 2 (d_model 4).
  const int64_t batch = 2, heads = 2, seq = 3, d = 4;
  Generator gen(708);
  const Matrix QKV = gen.randn(batch * seq, 3 * d);
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O);
  const Matrix dO = Matrix::Ones(batch * seq, d);
  Matrix dP(P.rows(), P.cols()), dQKV(QKV.rows(), QKV.cols());
  Matrix bad_dP(P.rows(), P.cols() + 1), bad_dQKV(QKV.rows(), QKV.cols() - 3);
  CHECK_REFUSES("attention_backward(QKV (6, 12), batch 4, n_heads 2): 6 rows do not make 4 sequences",
                attention_backward(QKV, P, dO, 4, heads, dP, dQKV), std::invalid_argument);
  CHECK_REFUSES("attention_backward(QKV (6, 12), batch 2, n_heads 3): d_model 4 does not split into 3 heads",
                attention_backward(QKV, P, dO, batch, 3, dP, dQKV), std::invalid_argument);
  CHECK_REFUSES("attention_backward(QKV (6, 12), P (11, 3), batch 2, n_heads 2): P must be (12, 3)",
                attention_backward(QKV, P.topRows(P.rows() - 1), dO, batch, heads, dP, dQKV), std::invalid_argument);
  CHECK_REFUSES("attention_backward(QKV (6, 12), dO (6, 5), batch 2, n_heads 2): dO must be (6, 4)",
                attention_backward(QKV, P, Matrix::Ones(batch * seq, d + 1), batch, heads, dP, dQKV),
                std::invalid_argument);
  CHECK_REFUSES("attention_backward(QKV (6, 12), dP (12, 4), batch 2, n_heads 2): dP must be P's shape, (12, 3)",
                attention_backward(QKV, P, dO, batch, heads, bad_dP, dQKV), std::invalid_argument);
  CHECK_REFUSES("attention_backward(QKV (6, 12), dQKV (6, 9), batch 2, n_heads 2): dQKV must be QKV's shape",
                attention_backward(QKV, P, dO, batch, heads, dP, bad_dQKV), std::invalid_argument);
  {
    INFO("attention_backward(QKV (6, 12), P (12, 3), dO (6, 4), batch 2, n_heads 2): every shape right");
    CHECK_NOTHROW(attention_backward(QKV, P, dO, batch, heads, dP, dQKV));
  }
}

TEST_CASE("attention_backward: matches PyTorch autograd (causal, 2 heads, batch 2)", "[ch07][attention_backward]") {
  const Matrix QKV = fx().matrix("att.QKV");
  const int64_t batch = 2, heads = 2, seq = QKV.rows() / batch, d = QKV.cols() / 3;
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(QKV.rows(), d);
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O);
  const std::string dims =
      fmt::format("QKV {}, batch {}, n_heads {}, seq {}, d_k {}, causal", shape_str(QKV), batch, heads, seq, d / heads);
  require_close("attention_forward(" + dims + "): weights", P, fx().matrix("att.P"), kFloat32);
  require_close("attention_forward(" + dims + "): output", O, fx().matrix("att.O"), kFloat32);

  Matrix dQKV = nan_matrix(QKV.rows(), QKV.cols()), dP(P.rows(), P.cols());
  {
    INFO("attention_backward(" + dims + ")");
    attention_backward(QKV, P, fx().matrix("att.dO"), batch, heads, dP, dQKV);
  }
  require_close("attention_backward(" + dims + "): dQKV", dQKV, fx().matrix("att.dQKV"), kFloat32,
                [&](int64_t i, int64_t j) { return packed_qkv_entry(i, j, seq, heads, d); });
}

TEST_CASE("attention_backward: agrees with central finite differences", "[ch07][attention_backward]") {
  Generator gen(702);
  // 3 sequences of 4 tokens, 2 heads of d_k 3: no dimension equals another,
  // so a transposed block cannot pass by accident.
  const int64_t batch = 3, heads = 2, seq = 4, d = 6;
  Matrix QKV = gen.randn(batch * seq, 3 * d);
  const Matrix R = gen.randn(batch * seq, d);
  const Mask mask = causal_mask(seq);
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
  auto loss = [&] {
    attention_forward(QKV, batch, heads, mask, scores, P, O);
    return weighted_sum(R, O);
  };
  loss();
  Matrix dQKV = nan_matrix(QKV.rows(), QKV.cols()), dP(P.rows(), P.cols());
  {
    INFO("attention_backward(batch 3, n_heads 2, seq 4, d_k 3, causal)");
    attention_backward(QKV, P, R, batch, heads, dP, dQKV);
  }
  require_gradient("attention_backward(batch 3, n_heads 2, seq 4, d_k 3, causal) dQKV", dQKV.data(),
                   numeric_gradient(QKV.data(), QKV.size(), loss), packed_qkv_names(seq, heads, d));

  // The causal mask: a query never sees later keys, so the first query's
  // output depends on key 0 and value 0 only. With a gradient on that one
  // output row, every later key and value must get exactly zero.
  Matrix R0 = Matrix::Zero(batch * seq, d);
  R0.row(0) = R.row(0);
  loss();
  {
    INFO("attention_backward(batch 3, n_heads 2, seq 4, d_k 3, causal), a gradient on query 0's output only");
    attention_backward(QKV, P, R0, batch, heads, dP, dQKV);
  }
  {
    INFO("attention_backward(batch " << batch << ", n_heads " << heads << ", seq " << seq << ", d_k " << d / heads
                                     << "), causal mask, a gradient on query 0's output only: largest |dK|, |dV| of "
                                        "tokens 1.."
                                     << seq - 1 << " (must be 0) and of token 0 (must not)");
    CHECK(dQKV.block(1, d, seq - 1, 2 * d).cwiseAbs().maxCoeff() == 0.0f);
    CHECK(dQKV.block(0, d, 1, 2 * d).cwiseAbs().maxCoeff() > 0.0f);
  }
}

TEST_CASE("attention_backward: without a mask (bidirectional), agrees with finite differences",
          "[ch07][attention_backward]") {
  // Task 2's bidirectional models: every query sees every key, so the
  // gradient reaches every key and value, the later ones included.
  Generator gen(706);
  const int64_t batch = 2, heads = 3, seq = 5, d = 6;
  Matrix QKV = gen.randn(batch * seq, 3 * d);
  const Matrix R = gen.randn(batch * seq, d);
  const Mask all_keys = Mask::Constant(seq, seq, true);
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
  auto loss = [&] {
    attention_forward(QKV, batch, heads, all_keys, scores, P, O);
    return weighted_sum(R, O);
  };
  loss();
  Matrix dQKV = nan_matrix(QKV.rows(), QKV.cols()), dP(P.rows(), P.cols());
  {
    INFO("attention_backward(batch 2, n_heads 3, seq 5, d_k 2, no mask)");
    attention_backward(QKV, P, R, batch, heads, dP, dQKV);
  }
  require_gradient("attention_backward(batch 2, n_heads 3, seq 5, d_k 2, no mask) dQKV", dQKV.data(),
                   numeric_gradient(QKV.data(), QKV.size(), loss), packed_qkv_names(seq, heads, d));

  // A gradient on the first query's output alone now reaches the last key
  // and value of its sequence (a causal mask would keep them at 0).
  Matrix R0 = Matrix::Zero(batch * seq, d);
  R0.row(0) = R.row(0);
  loss();
  {
    INFO("attention_backward(batch 2, n_heads 3, seq 5, d_k 2, no mask), a gradient on query 0's output only");
    attention_backward(QKV, P, R0, batch, heads, dP, dQKV);
  }
  INFO("attention_backward(batch " << batch << ", n_heads " << heads << ", seq " << seq << ", d_k " << d / heads
                                   << "), no mask, a gradient on query 0's output only: largest |dK|, |dV| of the last "
                                      "token (must not be 0) and largest |dQKV| of the other sequence (must be 0)");
  CHECK(dQKV.block(seq - 1, d, 1, d).cwiseAbs().maxCoeff() > 0.0f);      // K of the last token
  CHECK(dQKV.block(seq - 1, 2 * d, 1, d).cwiseAbs().maxCoeff() > 0.0f);  // V of the last token
  CHECK(dQKV.block(seq, 0, seq, 3 * d).cwiseAbs().maxCoeff() == 0.0f);   // the other sequence: nothing
}

TEST_CASE("attention_backward: 37 sequences, a query allowed no key, odd sizes: forward and backward still right",
          "[ch07][attention_backward]") {
  // The reference backward (and the model's forward) run every sequence at
  // once in SIMD lanes (attention_lanes.hpp), 16 floats wide with AVX-512:
  // 37 sequences are two full groups and a remainder of 5.
  // The mask lets query 3 see no key and query 4 only keys 1 and 3.
  Generator gen(737);
  const int64_t batch = 37, heads = 3, seq = 5, d = 6, d_k = d / heads;
  Matrix QKV = gen.randn(batch * seq, 3 * d);
  const Matrix R = gen.randn(batch * seq, d);
  Mask mask = causal_mask(seq);
  mask.row(3).setConstant(false);
  mask.row(4) << false, true, false, true, false;
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
  Matrix dQKV = nan_matrix(QKV.rows(), QKV.cols()), dP(P.rows(), P.cols());
  // First a pass without a mask, so that any buffer the two functions keep
  // between calls holds numbers everywhere: an entry the masked pass below
  // forgets to write would show.
  attention_forward(QKV, batch, heads, Mask::Constant(seq, seq, true), scores, P, O);
  {
    INFO("attention_backward(batch 37, n_heads 3, seq 5, d_k 2, no mask), the first pass");
    attention_backward(QKV, P, R, batch, heads, dP, dQKV);
  }
  auto loss = [&] {
    attention_forward(QKV, batch, heads, mask, scores, P, O);
    return weighted_sum(R, O);
  };
  loss();
  dQKV = nan_matrix(QKV.rows(), QKV.cols());
  {
    INFO("attention_backward(batch 37, n_heads 3, seq 5, d_k 2, mask with an empty row)");
    attention_backward(QKV, P, R, batch, heads, dP, dQKV);
  }
  require_gradient("attention_backward(batch 37, n_heads 3, seq 5, d_k 2, mask with an empty row) dQKV", dQKV.data(),
                   numeric_gradient(QKV.data(), QKV.size(), loss), packed_qkv_names(seq, heads, d));

  // The forward against the formulas written out per head, in double:
  // the weights to 1e-6 and the output to 1e-5 (float32 rounding of sums
  // of 2 and 5 terms of order 1; a wrong lane, head or key is off by 0.1).
  double worst_P = 0, worst_O = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        std::vector<double> w(size_t(seq), 0.0);
        double max_s = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j < seq; ++j) {
          if (!mask(i, j)) continue;
          double s = 0;
          for (int64_t c = 0; c < d_k; ++c) s += double(QKV(b * seq + i, h * d_k + c)) * QKV(b * seq + j, d + h * d_k + c);
          w[size_t(j)] = s / std::sqrt(double(d_k));
          max_s = std::max(max_s, w[size_t(j)]);
        }
        for (int64_t j = 0; j < seq; ++j)
          if (mask(i, j)) sum += w[size_t(j)] = std::exp(w[size_t(j)] - max_s);
        for (int64_t j = 0; j < seq; ++j) {
          if (mask(i, j)) w[size_t(j)] /= sum;
          worst_P = std::max(worst_P, std::abs(P((b * heads + h) * seq + i, j) - w[size_t(j)]));
        }
        for (int64_t c = 0; c < d_k; ++c) {
          double o = 0;
          for (int64_t j = 0; j < seq; ++j) o += w[size_t(j)] * QKV(b * seq + j, 2 * d + h * d_k + c);
          worst_O = std::max(worst_O, std::abs(O(b * seq + i, h * d_k + c) - o));
        }
      }
  const std::string dims = fmt::format("batch {}, n_heads {}, seq {}, d_k {}", batch, heads, seq, d_k);
  {
    INFO("attention_forward(" << dims << "): largest |P - formula| " << worst_P << " (allowed 1e-6), |O - formula| "
                              << worst_O << " (allowed 1e-5)");
    CHECK(worst_P <= 1e-6);
    CHECK(worst_O <= 1e-5);
  }
  // Query 3 sees nothing: weights, output and the gradient of its Q are 0.
  for (int64_t b = 0; b < batch; ++b) {
    INFO("attention_forward/backward(" << dims << "), query 3 (allowed no key) of sequence " << b
                                       << ": largest |P|, |O| and |dQ| of that row must be 0");
    for (int64_t h = 0; h < heads; ++h) {
      INFO("head " << h);
      CHECK(P.row((b * heads + h) * seq + 3).cwiseAbs().maxCoeff() == 0.0f);
    }
    CHECK(O.row(b * seq + 3).cwiseAbs().maxCoeff() == 0.0f);
    CHECK(dQKV.block(b * seq + 3, 0, 1, d).cwiseAbs().maxCoeff() == 0.0f);
  }
}

TEST_CASE("model: the attention the model trains with (every sequence at once) computes the plain forward's numbers",
          "[ch07][model]") {
  // attention_forward_lanes (attention_lanes.hpp) must be attention_forward
  // in another loop order: the same P and O up to float rounding, the same
  // dropout draws, the same refusals. Sizes around the SIMD width (1, 16,
  // 37 sequences), masks with a query that sees nothing and one with a gap.
  // Your attention_backward then gets the same dQKV from either forward's P.
  // Tolerance kFloat32 (1e-5 + 1e-4 |x|): float32 sums of at most 7 terms
  // of order 1 added in two orders; a wrong head, key or sequence is off by
  // more than 0.01.
  Generator gen(741);
  for (const int64_t batch : {1, 16, 37})
    for (const int64_t heads : {1, 3}) {
      const int64_t seq = 7, d = 6;
      const Matrix QKV = gen.randn(batch * seq, 3 * d);
      Mask gaps = causal_mask(seq);
      gaps.row(2).setConstant(false);
      gaps.row(5) << true, false, false, true, false, true, false;
      const std::vector<std::pair<const char*, Mask>> masks = {
          {"causal", causal_mask(seq)}, {"none", Mask::Constant(seq, seq, true)}, {"a row without keys, gaps", gaps}};
      for (const auto& [mask_name, mask] : masks)
        for (const double p : {0.0, 0.3}) {
          const std::string what = fmt::format("batch {}, n_heads {}, seq {}, d_k {}, mask {}, dropout p = {}", batch,
                                               heads, seq, d / heads, mask_name, p);
          Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
          Matrix scores_l = scores, P_l = P, O_l = O;
          Generator draws(7), draws_l(7);
          AttentionDropout drop, drop_l;
          drop.p = drop_l.p = p;
          drop.gen = &draws;
          drop_l.gen = &draws_l;
          attention_forward(QKV, batch, heads, mask, scores, P, O, &drop);
          attention_forward_lanes(QKV, batch, heads, mask, scores_l, P_l, O_l, &drop_l);
          require_close("attention_forward_lanes(" + what + ") weights P vs attention_forward", P_l, P, kFloat32);
          require_close("attention_forward_lanes(" + what + ") output O vs attention_forward", O_l, O, kFloat32);
          if (p > 0) {
            INFO("attention_forward_lanes(" << what << "): the dropout mask must be the plain forward's, entry for entry");
            CHECK((drop.keep.array() == drop_l.keep.array()).all());
          }
          // Your attention_backward, fed by either forward, gives the same dQKV.
          const Matrix dO = gen.randn(batch * seq, d);
          Matrix dP(P.rows(), P.cols()), dQKV(QKV.rows(), QKV.cols()), dQKV_l = dQKV;
          {
            INFO("attention_backward(" + what + ") after attention_forward");
            attention_backward(QKV, P, dO, batch, heads, dP, dQKV, &drop);
          }
          {
            INFO("attention_backward(" + what + ") after attention_forward_lanes");
            attention_backward(QKV, P_l, dO, batch, heads, dP, dQKV_l, &drop_l);
          }
          require_close("attention_backward(" + what + ") dQKV after the lanes forward vs after the plain one", dQKV_l,
                        dQKV, kFloat32);
        }
      // The same refusal, word for word, for a score that is not a number.
      Matrix bad = QKV;
      bad(std::min<int64_t>(batch - 1, 9) * seq + 4, d / heads * (heads - 1)) = std::numeric_limits<float>::quiet_NaN();
      Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
      std::string plain, lanes;
      try {
        attention_forward(bad, batch, heads, causal_mask(seq), scores, P, O);
      } catch (const std::invalid_argument& e) {
        plain = e.what();
      }
      try {
        attention_forward_lanes(bad, batch, heads, causal_mask(seq), scores, P, O);
      } catch (const std::invalid_argument& e) {
        lanes = e.what();
      }
      INFO("batch " << batch << ", n_heads " << heads << ": a NaN in Q of token 4, last head");
      CHECK(!plain.empty());
      CHECK(lanes == plain);
    }
}

TEST_CASE("attention_backward: runs after a finite forward, and a NaN or infinite score is refused by name",
          "[ch07][attention_backward]") {
  Generator gen(738);
  const int64_t batch = 20, heads = 2, seq = 4, d = 4;
  Matrix QKV = gen.randn(batch * seq, 3 * d);
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
  Matrix dP(P.rows(), P.cols()), dQKV = nan_matrix(QKV.rows(), QKV.cols());
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O);
  {
    INFO("attention_backward(batch 20, n_heads 2, seq 4, d_k 2, causal)");
    attention_backward(QKV, P, gen.randn(batch * seq, d), batch, heads, dP, dQKV);
  }
  {
    INFO("attention_backward(batch 20, n_heads 2, seq 4, d_k 2) after a finite forward: dQKV must be finite "
         "everywhere (it starts as NaN)");
    CHECK(dQKV.allFinite());
  }

  // Sequence 17, token 2, a Q entry of head 1: query 2's first score (key
  // 0) in head 1 is the first bad one.
  QKV(17 * seq + 2, 1 * (d / heads)) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O),
                    sa::test::ContainsText("score of query 2 and key 0 in head 1 of sequence 17 is nan"));
  // An infinite K entry of key 1, head 0: every score with it is +inf or
  // -inf, by the sign of the Q entry it meets; query 1 is the first to
  // meet it. Both signs are refused (-inf would pass as a masked key).
  QKV(17 * seq + 2, 1 * (d / heads)) = 0.5f;
  QKV(17 * seq + 1, d) = std::numeric_limits<float>::infinity();
  for (float q : {1.0f, -1.0f}) {
    QKV(17 * seq + 1, 0) = q;
    CHECK_THROWS_WITH(attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O),
                      sa::test::ContainsText(fmt::format("score of query 1 and key 1 in head 0 of sequence 17 is {}",
                                                  q > 0 ? "inf" : "-inf")));
  }
}

// ===========================================================================
// cross_entropy_backward
// ===========================================================================
TEST_CASE("cross_entropy_backward: matches PyTorch, ignored rows included", "[ch07][cross_entropy_backward]") {
  const Matrix logits = fx().matrix("ce.logits");
  const std::vector<int64_t>& targets = fx().i64("ce.targets");
  Matrix probs(logits.rows(), logits.cols());
  const float loss = cross_entropy_forward(logits, targets, probs);
  {
    INFO("cross_entropy_forward(logits " << shape_str(logits) << ", " << targets.size() << " targets): loss");
    CHECK(loss == Approx(fx().scalar("ce.loss")).epsilon(1e-5));
  }

  Matrix dlogits = nan_matrix(logits.rows(), logits.cols());
  {
    INFO("cross_entropy_backward(probs " << shape_str(probs) << ", " << targets.size() << " targets, rows 1 and 4 ignored)");
    cross_entropy_backward(probs, targets, dlogits);
  }
  require_close(fmt::format("cross_entropy_backward(probs {}, {} targets)", shape_str(probs), targets.size()), dlogits,
                fx().matrix("ce.dlogits"), kFloat32);
  // An ignored row never reached the loss: its gradient is exactly zero.
  {
    INFO("cross_entropy_backward(probs " << shape_str(probs)
                                         << "): rows 1 and 4 have target kIgnore: their largest |dlogits| must be 0");
    CHECK(dlogits.row(1).cwiseAbs().maxCoeff() == 0.0f);
    CHECK(dlogits.row(4).cwiseAbs().maxCoeff() == 0.0f);
  }
}

TEST_CASE("cross_entropy_backward: agrees with central finite differences", "[ch07][cross_entropy_backward]") {
  Generator gen(703);
  Matrix logits = gen.randn(7, 5) * 2.0f;
  const std::vector<int64_t> targets{4, kIgnore, 0, 2, 2, kIgnore, 1};
  Matrix probs(7, 5);
  auto loss = [&] { return double(cross_entropy_forward(logits, targets, probs)); };
  loss();
  Matrix dlogits = nan_matrix(7, 5);
  {
    INFO("cross_entropy_backward(probs (7, 5), targets {4, ignored, 0, 2, 2, ignored, 1})");
    cross_entropy_backward(probs, targets, dlogits);
  }
  require_gradient("cross_entropy_backward(probs (7, 5)) dlogits", dlogits.data(),
                   numeric_gradient(logits.data(), logits.size(), loss), matrix_entries(logits.cols()));
  // Every counted row's gradient sums to 0: probabilities sum to 1, and so
  // does the one-hot target.
  for (int64_t i = 0; i < 7; ++i) {
    INFO(fmt::format("cross_entropy_backward(probs (7, 5)): row {} of dlogits sums to {:.9g}, expected 0 (tolerance "
                     "1e-6)",
                     i, dlogits.row(i).sum()));
    CHECK(std::abs(dlogits.row(i).sum()) < 1e-6f);
  }
}

TEST_CASE("cross_entropy_backward: wrong sizes, no counted row and targets outside the vocabulary are refused",
          "[ch07][cross_entropy_backward]") {
  const Matrix probs = Matrix::Constant(3, 4, 0.25f);
  Matrix dlogits(3, 4), wrong(3, 5);
  CHECK_REFUSES("cross_entropy_backward(probs (3, 4), targets {0, 1}): 2 targets for 3 rows",
                cross_entropy_backward(probs, {0, 1}, dlogits), std::invalid_argument);
  CHECK_REFUSES("cross_entropy_backward(probs (3, 4), targets {0, 1, 2}, dlogits (3, 5)): dlogits must be (3, 4)",
                cross_entropy_backward(probs, {0, 1, 2}, wrong), std::invalid_argument);
  CHECK_REFUSES("cross_entropy_backward(probs (3, 4), every target ignored): no row to average over",
                cross_entropy_backward(probs, {kIgnore, kIgnore, kIgnore}, dlogits), std::invalid_argument);
  CHECK_REFUSES("cross_entropy_backward(probs (3, 4), targets {0, 4, 1}): target 4 outside a vocabulary of 4",
                cross_entropy_backward(probs, {0, 4, 1}, dlogits), std::out_of_range);
  CHECK_REFUSES("cross_entropy_backward(probs (3, 4), targets {0, -7, 1}): target -7",
                cross_entropy_backward(probs, {0, -7, 1}, dlogits), std::out_of_range);
}

// ===========================================================================
// adam_step
// ===========================================================================
TEST_CASE("adam_step: three steps match torch.optim.Adam", "[ch07][adam_step]") {
  std::vector<float> p = fx().f32("adam.p0");
  std::vector<float> m(p.size(), 0.0f), v(p.size(), 0.0f);
  AdamConfig cfg;
  cfg.lr = 0.01;  // the fixture's; betas and eps are the defaults
  for (int t = 1; t <= 3; ++t) {
    const std::vector<float>& g = fx().f32(fmt::format("adam.g{}", t));
    {
      INFO("adam_step(" << p.size() << " parameters, step t = " << t << " of 3, lr 0.01)");
      adam_step(p, g, m, v, t, cfg);
    }
    // One element-wise formula of a few float operations; PyTorch fuses
    // some of them (multiply-add), so the last bits may differ.
    require_close(fmt::format("parameters after step {}", t), p, fx().f32(fmt::format("adam.p{}", t)),
                  kElementwise);
  }
}

TEST_CASE("adam_step: the first step moves every weight by lr against its gradient", "[ch07][adam_step]") {
  // At t = 1 the bias corrections make m̂ = g and v̂ = g², so the update is
  // lr · g / (|g| + eps): almost exactly lr · sign(g), whatever |g| is. A
  // zero gradient moves nothing.
  std::vector<float> p{1.0f, -2.0f, 0.5f, 3.0f, 1.0f};
  const std::vector<float> g{1e-3f, -40.0f, 0.0f, 2.5f, 1e-7f};
  std::vector<float> m(5, 0.0f), v(5, 0.0f);
  AdamConfig cfg;  // lr 3e-4
  {
    INFO("adam_step(p = (1, -2, 0.5, 3, 1), g = (1e-3, -40, 0, 2.5, 1e-7), t = 1, lr 3e-4)");
    adam_step(p, g, m, v, 1, cfg);
  }
  // The moves are 3e-4 on values of order 1: print 9 digits, or a wrong
  // move would read as two equal numbers. Relative 1e-6 is float32's
  // resolution at these values (about 6e-8) with room to spare, and 300
  // times smaller than the move itself.
  check_close("p[0] after one step with g = 1e-3", p[0], 1.0 - 3e-4, {0.0, 1e-6});
  check_close("p[1] after one step with g = -40", p[1], -2.0 + 3e-4, {0.0, 1e-6});
  check_close("p[2] after one step with g = 0 (no move)", p[2], 0.5, kBitExact);
  check_close("p[3] after one step with g = 2.5", p[3], 3.0 - 3e-4, {0.0, 1e-6});
  // A gradient near eps shows where eps goes: lr · g / (|g| + eps), 0.909 lr
  // for g = 1e-7 (added to sqrt(v̂), not to sqrt(v) before the correction,
  // which would give 0.24 lr).
  check_close("p[4] after one step with g = 1e-7 (eps = 1e-8 matters)", p[4], 1.0 - 3e-4 * 1e-7 / (1e-7 + 1e-8),
              {0.0, 1e-6});
  check_close("m[1] = (1 - 0.9) * g for g = -40", m[1], -4.0, {0.0, 1e-6});
  check_close("v[1] = (1 - 0.999) * g^2 for g = -40", v[1], 1.6, {0.0, 1e-5});
}

TEST_CASE("adam_step: a gradient or buffer of another length, and a step below 1, are refused", "[ch07][adam_step]") {
  std::vector<float> p{1.0f, -2.0f, 0.5f, 3.0f, 1.0f};
  const std::vector<float> g{1e-3f, -40.0f, 0.0f, 2.5f, 1e-7f};
  std::vector<float> m(5, 0.0f), v(5, 0.0f);
  AdamConfig cfg;
  CHECK_REFUSES("adam_step(5 parameters, 1 gradient, step 2)", adam_step(p, std::vector<float>{1.0f}, m, v, 2, cfg),
                std::invalid_argument);
  std::vector<float> short_buffer(3, 0.0f);  // (m or v of another length: refused, not read past its end)
  CHECK_REFUSES("adam_step(5 parameters, m of length 3, step 2)", adam_step(p, g, short_buffer, v, 2, cfg),
                std::invalid_argument);
  CHECK_REFUSES("adam_step(5 parameters, v of length 3, step 2)", adam_step(p, g, m, short_buffer, 2, cfg),
                std::invalid_argument);
  CHECK_REFUSES("adam_step(5 parameters, step 0): steps count from 1", adam_step(p, g, m, v, 0, cfg),
                std::invalid_argument);
  CHECK_REFUSES("adam_step(5 parameters, step -1): steps count from 1", adam_step(p, g, m, v, -1, cfg),
                std::invalid_argument);
}

// ===========================================================================
// The whole model against its PyTorch twin
// ===========================================================================
TEST_CASE("model: same initial weights, data, logits, loss and gradients as PyTorch", "[ch07][model]") {
  const FixtureModel f(fx().i64("model.config"));
  INFO(f.describe());
  Generator gen(uint64_t(f.seed));
  TinyTransformer model(f.cfg, gen);
  // Drawn from the same generator in the same order: bit for bit.
  for_each_tensor(model.params, [&](const std::string& name, std::span<const float> t) {
    require_close("initial " + name, std::vector<float>(t.begin(), t.end()), fx().f32("init." + name), kBitExact);
  });
  const ReversalData data = make_reversal_data(gen, f.samples, f.task);
  CHECK(data.tokens == fx().i64("data"));
  const std::vector<int64_t> perm = gen.randperm(f.samples);
  CHECK(perm == fx().i64("perm"));

  std::vector<int64_t> ids, targets;
  make_batch(data, std::span<const int64_t>(perm).first(size_t(f.batch)), f.task, ids, targets);
  const Matrix& logits = model.forward(ids, f.batch);
  // A dozen layers of float32 products and sums in another order.
  require_close("logits", logits, fx().matrix("step0.logits"), kFloat32);
  CHECK(model.loss(targets) == Approx(fx().scalar("step0.loss")).epsilon(1e-5));

  model.backward();
  for_each_tensor(model.grads, [&](const std::string& name, std::span<const float> g) {
    require_close_gradient("gradient of " + name, g, fx().matrix("grad." + name));
  });
}

TEST_CASE("model: without the causal mask (bidirectional), PyTorch's logits, loss and gradients",
          "[ch07][model]") {
  // ModelConfig::causal = false, task 2's bidirectional models: the same
  // initial weights and first batch as above, run through the twin with
  // mask=None.
  const FixtureModel f(fx().i64("model.config"));
  INFO(f.describe());
  Generator gen(uint64_t(f.seed));
  ModelConfig cfg = f.cfg;
  cfg.causal = false;
  TinyTransformer model(cfg, gen);
  const ReversalData data = make_reversal_data(gen, f.samples, f.task);
  const std::vector<int64_t> perm = gen.randperm(f.samples);
  std::vector<int64_t> ids, targets;
  make_batch(data, std::span<const int64_t>(perm).first(size_t(f.batch)), f.task, ids, targets);
  const Matrix& logits = model.forward(ids, f.batch);
  require_close("bidirectional logits", logits, fx().matrix("bidir.logits"), kFloat32);
  // Query 0 of every head of sequence 0 sees every key: no weight is 0.
  CHECK(model.weights(0).row(0).minCoeff() > 0.0f);
  CHECK(model.loss(targets) == Approx(fx().scalar("bidir.loss")).epsilon(1e-5));
  model.backward();
  for_each_tensor(model.grads, [&](const std::string& name, std::span<const float> g) {
    require_close_gradient("bidirectional gradient of " + name, g, fx().matrix("bidir.grad." + name));
  });
}

TEST_CASE("model: with the causal mask no gradient comes from later positions, without it it does",
          "[ch07][model]") {
  // Only position 1 of the sequence is in the loss. With the causal mask
  // its prediction cannot depend on the tokens at positions 2.., so their
  // position embeddings must get a gradient of exactly 0 (every path to
  // them goes through a weight that is exactly 0). Without the mask
  // (bidirectional) position 1 reads them, and they get a gradient.
  for (const bool causal : {true, false}) {
    ModelConfig cfg;
    cfg.vocab = 7;
    cfg.max_seq = 6;
    cfg.d_model = 8;
    cfg.n_heads = 2;
    cfg.n_layers = 2;
    cfg.d_ff = 16;
    cfg.causal = causal;
    Generator gen(708);
    TinyTransformer model(cfg, gen);
    for_each_tensor(model.params, [&](const std::string&, std::span<float> t) {
      gen.normal_(t.data(), int64_t(t.size()), 0.0, 0.3);  // far from uniform attention
    });
    const std::vector<int64_t> ids{3, 1, 4, 1, 5}, targets{kIgnore, 2, kIgnore, kIgnore, kIgnore};
    model.forward(ids, 1);
    model.loss(targets);
    model.backward();
    INFO((causal ? "causal" : "bidirectional"));
    const Matrix& P = model.weights(0);  // (heads * seq, seq)
    const float later_weight = P.block(0, 2, 2, 3).cwiseAbs().maxCoeff();  // head 1, queries 0 and 1, keys 2..4
    const float later_grad = model.grads.pos.middleRows(2, 3).cwiseAbs().maxCoeff();
    CHECK(model.grads.pos.row(1).cwiseAbs().maxCoeff() > 0.0f);
    if (causal) {
      CHECK(later_weight == 0.0f);
      CHECK(later_grad == 0.0f);
    } else {
      CHECK(later_weight > 0.0f);
      CHECK(later_grad > 0.0f);
    }
  }
}

TEST_CASE("model: the training forward (only the rows the loss needs) changes no gradient", "[ch07][model]") {
  // forward_loss skips, after the last block's attention, the positions
  // before the first target. Nothing it skips reaches the loss, so loss
  // and gradients must equal those of forward() + loss().
  const FixtureModel f(fx().i64("model.config"));
  INFO(f.describe());
  Generator gen(uint64_t(f.seed));
  TinyTransformer model(f.cfg, gen);
  const ReversalData data = make_reversal_data(gen, f.samples, f.task);
  std::vector<int64_t> ids, targets;
  const std::vector<int64_t> idx{3, 1, 4, 1, 5};
  make_batch(data, idx, f.task, ids, targets);

  model.forward(ids, int64_t(idx.size()));
  const float full_loss = model.loss(targets);
  model.backward();
  const Params full_grads = model.grads;

  const float loss = model.forward_loss(ids, int64_t(idx.size()), targets);
  require_shape("training logits", model.logits(), int64_t(idx.size()) * f.task.digits, f.cfg.vocab);
  CHECK(loss == Approx(full_loss).epsilon(1e-6));
  model.backward();
  // The full path's gradients, each in its tensor's shape (a vector as one row).
  const std::vector<Shape> shapes = tensor_shapes(full_grads);
  std::vector<Matrix> expected;
  for_each_tensor(full_grads, [&](const std::string&, std::span<const float> g) {
    const Shape& s = shapes[expected.size()];
    const int64_t rows = s.size() == 2 ? s[0] : 1;
    expected.push_back(Eigen::Map<const Matrix>(g.data(), rows, int64_t(g.size()) / rows));
  });
  size_t k = 0;
  for_each_tensor(model.grads, [&](const std::string& name, std::span<const float> g) {
    require_close_gradient("training-path gradient of " + name, g, expected[k++]);
  });
}

TEST_CASE("model: every parameter's gradient agrees with finite differences", "[ch07][model]") {
  // One directional derivative per tensor (model_gradcheck.hpp).
  GradcheckModel m = make_gradcheck_model(704, 6);
  m.targets[0] = m.targets[7] = kIgnore;
  require_model_gradients(m, "");
}

TEST_CASE("model: 10 Adam steps follow PyTorch's losses and weights", "[ch07][model]") {
  const FixtureModel f(fx().i64("model.config"));
  INFO(f.describe());
  Generator gen(uint64_t(f.seed));
  TinyTransformer model(f.cfg, gen);
  const ReversalData data = make_reversal_data(gen, f.samples, f.task);
  const std::vector<int64_t> perm = gen.randperm(f.samples);
  Adam adam(model.params, model.grads, AdamConfig{});
  const std::vector<float>& expected = fx().f32("losses");
  std::vector<float> losses;
  std::vector<int64_t> ids, targets;
  for (int64_t step = 0; step < 10; ++step) {
    make_batch(data, std::span<const int64_t>(perm).subspan(size_t(step * f.batch), size_t(f.batch)), f.task, ids,
               targets);
    losses.push_back(train_step(model, adam, ids, targets, f.batch).loss);
  }
  // Each step's loss is a float32 reduction over a forward that drifts a
  // little from PyTorch's with every update: kFloat32.
  require_close("losses of the first 10 steps", losses, expected, kFloat32);
  CHECK(losses.back() < losses.front());
  // Adam moves each weight by about lr = 3e-4 a step, whatever its
  // gradient's size, so a wrong update shows as an error of 1e-4 or more;
  // the reference stays within 3e-8 of PyTorch. kFloat32 lies in between.
  for_each_tensor(model.params, [&](const std::string& name, std::span<const float> t) {
    require_close("after 10 steps: " + name, std::vector<float>(t.begin(), t.end()), fx().f32("after10." + name),
                  kFloat32);
  });
}

// ===========================================================================
// Attention dropout in training (chapter 6's dropout between P and V)
// ===========================================================================
TEST_CASE("attention_backward: with dropout p = 0.25 on the weights, matches PyTorch autograd",
          "[ch07][attention_backward]") {
  // The twin draws F.dropout's mask right after torch.manual_seed(16); the
  // same generator drops the same weights here (chapter 6 reproduces the
  // draws bit for bit). The weights themselves differ from PyTorch's by
  // float32 rounding, hence kFloat32 and not bit for bit.
  const Matrix QKV = fx().matrix("attd.QKV");
  const int64_t batch = 2, heads = 2, seq = QKV.rows() / batch, d = QKV.cols() / 3;
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(QKV.rows(), d);
  Generator gen(16);
  AttentionDropout dropout;
  dropout.p = 0.25;
  dropout.gen = &gen;
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O, &dropout);
  const std::string dims = fmt::format("QKV {}, batch {}, n_heads {}, seq {}, d_k {}, causal, dropout p = 0.25",
                                       shape_str(QKV), batch, heads, seq, d / heads);
  require_close("attention_forward(" + dims + "): dropout(P)", dropout.P_drop, fx().matrix("attd.P_drop"), kFloat32);
  require_close("attention_forward(" + dims + "): output dropout(P) V", O, fx().matrix("attd.O"), kFloat32);
  {
    // Every (b, h, i) row of P is still a distribution: dropout acts after
    // the softmax and only on what multiplies V.
    INFO("row sums of P after attention_forward with dropout: largest |sum - 1| "
         << (P.rowwise().sum().array() - 1.0f).abs().maxCoeff() << ", allowed 1e-6");
    CHECK((P.rowwise().sum().array() - 1.0f).abs().maxCoeff() < 1e-6f);
  }

  Matrix dQKV = nan_matrix(QKV.rows(), QKV.cols()), dP(P.rows(), P.cols());
  {
    INFO("attention_backward(" + dims + ")");
    attention_backward(QKV, P, fx().matrix("attd.dO"), batch, heads, dP, dQKV, &dropout);
  }
  require_close("attention_backward(" + dims + "): dQKV", dQKV, fx().matrix("attd.dQKV"), kFloat32,
                [&](int64_t i, int64_t j) { return packed_qkv_entry(i, j, seq, heads, d); });
}

TEST_CASE("attention_backward: with dropout, agrees with finite differences (mask held fixed)",
          "[ch07][attention_backward]") {
  // A fresh Generator(703) before every forward draws the same mask, since
  // the draws do not depend on the values: the loss is then a smooth
  // function of QKV and central differences apply. p = 0.4 drops enough
  // weights (about 40% of 96) that ignoring the mask in the backward (using
  // P for dV, or skipping dropout_backward) is far outside the tolerance.
  Generator gen(702);
  const int64_t batch = 2, heads = 2, seq = 4, d = 6;
  Matrix QKV = gen.randn(batch * seq, 3 * d);
  const Matrix R = gen.randn(batch * seq, d);
  const Mask mask = causal_mask(seq);
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d);
  Generator draws(703);
  AttentionDropout dropout;
  dropout.p = 0.4;
  dropout.gen = &draws;
  auto loss = [&] {
    draws = Generator(703);
    attention_forward(QKV, batch, heads, mask, scores, P, O, &dropout);
    return weighted_sum(R, O);
  };
  loss();
  const int64_t dropped = dropout.keep.size() - dropout.keep.count();
  INFO(fmt::format("{} of {} weights dropped by Generator(703) at p = 0.4", dropped, dropout.keep.size()));
  REQUIRE(dropped > 10);
  Matrix dQKV = nan_matrix(QKV.rows(), QKV.cols()), dP(P.rows(), P.cols());
  {
    INFO("attention_backward(batch 2, n_heads 2, seq 4, d_k 3, causal, dropout p = 0.4)");
    attention_backward(QKV, P, R, batch, heads, dP, dQKV, &dropout);
  }
  require_gradient("attention_backward(batch 2, n_heads 2, seq 4, d_k 3, causal, dropout p = 0.4) dQKV", dQKV.data(),
                   numeric_gradient(QKV.data(), QKV.size(), loss), packed_qkv_names(seq, heads, d));
}

TEST_CASE("attention_backward: p = 0 is no dropout, bit for bit, and bad dropout input is refused",
          "[ch07][attention_backward]") {
  Generator gen(705);
  const int64_t batch = 2, heads = 2, seq = 3, d = 4;
  const Matrix QKV = gen.randn(batch * seq, 3 * d);
  const Matrix dO = gen.randn(batch * seq, d);
  Matrix scores(batch * heads * seq, seq), P(batch * heads * seq, seq), O(batch * seq, d), O0 = O;
  Matrix dP(P.rows(), P.cols()), dQKV(QKV.rows(), QKV.cols()), dQKV0 = dQKV;
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O0);
  {
    INFO("attention_backward(batch 2, n_heads 2, seq 3, d_k 2, causal, no dropout)");
    attention_backward(QKV, P, dO, batch, heads, dP, dQKV0);
  }
  Generator draws(1);
  AttentionDropout off;
  off.p = 0.0;
  off.gen = &draws;
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O, &off);
  {
    INFO("attention_backward(batch 2, n_heads 2, seq 3, d_k 2, causal, dropout p = 0)");
    attention_backward(QKV, P, dO, batch, heads, dP, dQKV, &off);
  }
  require_close("attention_forward(batch 2, n_heads 2, seq 3, d_k 2) output with dropout p = 0 vs none", O, O0,
                kBitExact);
  require_close("attention_backward(batch 2, n_heads 2, seq 3, d_k 2) dQKV with dropout p = 0 vs none", dQKV, dQKV0,
                kBitExact);
  {
    INFO("attention_forward/backward with dropout p = 0 must draw nothing from the generator");
    CHECK(draws.random() == Generator(1).random());  // p = 0 draws nothing (chapter 6)
  }

  for (const double p : {1.0, -0.1, std::nan("")}) {
    AttentionDropout bad;
    bad.p = p;
    bad.gen = &draws;
    INFO("p = " << p);
    CHECK_THROWS_AS(attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O, &bad),
                    std::invalid_argument);
  }
  AttentionDropout no_generator;
  no_generator.p = 0.1;
  CHECK_THROWS_AS(attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O, &no_generator),
                  std::invalid_argument);
  // An active dropout whose mask is not P's shape: the backward refuses it.
  AttentionDropout stale;
  stale.p = 0.1;
  stale.gen = &draws;
  attention_forward(QKV, batch, heads, causal_mask(seq), scores, P, O, &stale);
  stale.keep = Mask::Constant(P.rows() - 1, P.cols(), true);
  CHECK_REFUSES("attention_backward with dropout p 0.1 whose mask has one row fewer than P",
                attention_backward(QKV, P, dO, batch, heads, dP, dQKV, &stale), std::invalid_argument);
}

TEST_CASE("model: with attention dropout p = 0.1, two Adam steps match PyTorch, and evaluation drops nothing",
          "[ch07][model]") {
  // The twin in model.train() with dropout 0.1 in both blocks: each forward
  // draws block 0's mask, then block 1's, from the generator that drew the
  // weights and the data. Two steps check that the stream goes on in the
  // same order. Tolerances as for the model without dropout.
  const std::vector<int64_t>& c = fx().i64("drop.config");
  ReversalTask task;
  task.vocab = c[1];
  task.digits = c[2];
  ModelConfig cfg;
  cfg.vocab = c[1];
  cfg.max_seq = task.sample_len();
  cfg.d_model = c[3];
  cfg.n_heads = c[4];
  cfg.n_layers = c[5];
  cfg.d_ff = 4 * c[3];
  Generator gen{uint64_t(c[0])};
  TinyTransformer model(cfg, gen);
  const ReversalData data = make_reversal_data(gen, 8, task);
  REQUIRE(data.tokens == fx().i64("drop.data"));
  Adam adam(model.params, model.grads, AdamConfig{});
  std::vector<int64_t> ids, targets;
  for (int64_t step = 0; step < 2; ++step) {
    const std::vector<int64_t> idx{4 * step, 4 * step + 1, 4 * step + 2, 4 * step + 3};
    make_batch(data, idx, task, ids, targets);
    INFO(fmt::format("step {} of the dropout model (p = 0.1, seed {}, vocab {}, d_model {}, n_heads {}, n_layers {}, "
                     "batch 4): forward, loss, backward",
                     step, c[0], cfg.vocab, cfg.d_model, cfg.n_heads, cfg.n_layers));
    const float loss = model.forward_loss(ids, 4, targets, {.p = 0.1, .gen = &gen});
    {
      INFO(fmt::format("loss of step {} with dropout p = 0.1 (seed {}, vocab {}, d_model {}, n_heads {}, n_layers {}, "
                       "batch 4)",
                       step, c[0], cfg.vocab, cfg.d_model, cfg.n_heads, cfg.n_layers));
      CHECK(loss == Approx(fx().scalar(fmt::format("drop.step{}.loss", step))).epsilon(1e-5));
    }
    model.backward();
    for_each_tensor(model.grads, [&](const std::string& name, std::span<const float> g) {
      require_close_gradient(fmt::format("step {} with dropout p = 0.1: gradient of {} (seed {}, vocab {}, d_model {}, "
                                         "n_heads {}, n_layers {}, batch 4)",
                                         step, name, c[0], cfg.vocab, cfg.d_model, cfg.n_heads, cfg.n_layers),
                             g,
                             fx().matrix(fmt::format("drop.step{}.grad.{}", step, name)));
    });
    adam.step();
  }
  // forward() is evaluation: no weight dropped, PyTorch's model.eval().
  make_batch(data, std::vector<int64_t>{0, 1, 2, 3}, task, ids, targets);
  require_close("evaluation logits after training with dropout", model.forward(ids, 4),
                fx().matrix("drop.eval.logits"), kFloat32);
}

TEST_CASE("model: with attention dropout, every parameter's gradient agrees with finite differences",
          "[ch07][model]") {
  // The directional check of the model test above, with p = 0.3 in every
  // block and the mask held fixed: each forward starts from Generator(709).
  GradcheckModel m = make_gradcheck_model(708, 6);
  TinyTransformer& model = m.model;
  Generator& gen = m.gen;
  const std::vector<int64_t>& ids = m.ids;
  const std::vector<int64_t>& targets = m.targets;
  const int64_t batch = m.batch;
  Generator draws(709);
  auto loss = [&] {
    draws = Generator(709);
    return double(model.forward_loss(ids, batch, targets, {.p = 0.3, .gen = &draws}));
  };
  INFO(fmt::format("the gradient check's model with dropout p = 0.3: d_model {}, n_heads {}, n_layers {}, batch {}: "
                   "forward, loss, backward",
                   model.config().d_model, model.config().n_heads, model.config().n_layers, batch));
  const double with_dropout = loss();
  model.backward();
  CHECK(with_dropout != double(model.forward_loss(ids, batch, targets)));  // the masks did change the loss

  require_directional_derivatives(model, gen, loss, " with dropout");
}
