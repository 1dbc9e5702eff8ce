// Hidden suite of chapter 5: causal_mask, apply_mask, padding_masks,
// mask_and, masked_attention. Values come from PyTorch
// (tests/reference/ch05_causal_mask.py: scores.masked_fill(mask == 0, -inf)
// then softmax); the rest are hand-derived masks and properties that hold
// for any input (zeros above the diagonal, one-hot first rows, no NaN).
#include <fmt/core.h>

#include "support/catch.hpp"
#include <cmath>
#include <string>
#include <vector>

#include "01-qkv-projection/qkv.hpp"
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "04-multi-head/multihead.hpp"
#include "05-causal-mask/mask.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"
#include "support/masks.hpp"

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("05-causal-mask.txt");
  return f;
}

// Entry [index] of a fixture of shape (..., rows, cols), as a matrix: (b) of a
// (B, R, C) tensor, or (b * heads + h) of a (B, H, R, C) one.
Matrix block(const std::string& name, int64_t index) {
  const Shape& s = fx().shape(name);
  const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  return ConstMatrixMap(fx().f32(name).data() + index * rows * cols, rows, cols);
}

// Causal weights: exactly 0 above the diagonal (exp(-inf) is exactly 0, so
// bit for bit), row 0 exactly [1, 0, ..., 0] (softmax of one finite score),
// row i with i+1 positive weights that sum to 1.
void require_causal(const std::string& what, const Matrix& w) {
  // Exactly 0 above the diagonal (bit for bit; a NaN fails too).
  for (int64_t i = 0; i < w.rows(); ++i)
    for (int64_t j = i + 1; j < w.cols(); ++j)
      if (!(w(i, j) == 0.0f))
        FAIL(fmt::format("{} {}: entry [{}, {}] above the diagonal is {:.9g}, expected exactly 0 (query {} may not "
                         "see the later key {})",
                         what, shape_str(w), i, j, w(i, j), i, j));
  Matrix first_row = Matrix::Zero(1, w.cols());
  first_row(0, 0) = 1.0f;
  require_close(what + ", row 0", Matrix(w.row(0)), first_row, kBitExact);
  for (int64_t i = 0; i < w.rows(); ++i) {
    int64_t positive = 0;
    double sum = 0;
    for (int64_t j = 0; j < w.cols(); ++j) {
      positive += w(i, j) > 0.0f;
      sum += w(i, j);
    }
    if (positive != i + 1)
      FAIL(fmt::format("{}: row {} has {} non-zero weights, expected {}", what, i, positive, i + 1));
    // float32 weights, summed in double: within a few ulps of 1.
    if (std::abs(sum - 1.0) > 1e-6) FAIL(fmt::format("{}: row {} sums to {:.9f}, not 1", what, i, sum));
  }
  SUCCEED();
}

void require_no_nan(const std::string& what, const Matrix& m) {
  for (int64_t k = 0; k < m.size(); ++k)
    if (std::isnan(m.data()[k]))
      FAIL(fmt::format("{}: entry [{}, {}] of {} is NaN, expected a number", what, k / m.cols(), k % m.cols(),
                       shape_str(m)));
  SUCCEED();
}

}  // namespace

// ---------------------------------------------------------------------------
TEST_CASE("causal_mask: true on and below the diagonal", "[ch05][causal_mask]") {
  // (Each INFO names the call to come: a crash inside says which one.)
  {
    INFO("causal_mask(seq_len 6)");
    require_mask("causal_mask(6)", causal_mask(6), mask_where(6, 6, [](int64_t i, int64_t j) { return j <= i; }));
  }
  // n(n+1)/2 allowed pairs: query i sees i+1 keys.
  {
    INFO("allowed pairs in causal_mask(6): 1 + 2 + ... + 6 = 21");
    CHECK(causal_mask(6).count() == 21);
  }
  {
    INFO("causal_mask(seq_len 1)");
    require_mask("causal_mask(1)", causal_mask(1), mask_where(1, 1, [](int64_t, int64_t) { return true; }));
  }
  INFO("causal_mask(seq_len 0)");
  require_mask("causal_mask(0)", causal_mask(0), Mask(0, 0));
}

// ---------------------------------------------------------------------------
TEST_CASE("apply_mask: -inf where the mask forbids, the scores untouched elsewhere", "[ch05][apply_mask]") {
  // masked_fill copies values and writes -inf: nothing is computed, so bit
  // for bit (require_close treats -inf as equal only to -inf).
  const Matrix masked = [&] {
    INFO("apply_mask(scores " << shape_str(fx().matrix("am.scores")) << ", a mask of the same shape)");
    return apply_mask(fx().matrix("am.scores"), fx().mask("am.mask"));
  }();
  require_close(fmt::format("apply_mask(scores {}, mask)", shape_str(fx().matrix("am.scores"))), masked,
                fx().matrix("am.masked"), kBitExact);
}

TEST_CASE("apply_mask: the causal mask on the running example's scores", "[ch05][apply_mask]") {
  // Q Kᵀ / 8 recomputed from PyTorch's Q and K: 64-term float32 sums.
  const Matrix scores = scaled_scores(fx().matrix("run.Q"), fx().matrix("run.K"));
  const Matrix masked = [&] {
    INFO("apply_mask(scores (6, 6), causal mask) of the running example");
    return apply_mask(scores, causal(6));
  }();
  require_close("apply_mask(scores (6, 6), causal mask) of the running example", masked,
                fx().matrix("run.masked_scores"), kFloat32);
}

TEST_CASE("apply_mask: an all-true mask changes nothing, another shape is refused", "[ch05][apply_mask]") {
  const Matrix scores = fx().matrix("am.scores");
  {
    INFO("apply_mask(scores (5, 7), an all-true mask (5, 7))");
    require_close("apply_mask(scores (5, 7)) with every key allowed", apply_mask(scores, Mask::Constant(5, 7, true)),
                  scores, kBitExact);
  }
  CHECK_REFUSES("apply_mask(scores (5, 7), mask (5, 6))", apply_mask(scores, Mask::Constant(5, 6, true)),
                std::invalid_argument);
  CHECK_REFUSES("apply_mask(scores (5, 7), mask (7, 5))", apply_mask(scores, Mask::Constant(7, 5, true)),
                std::invalid_argument);
}

// ---------------------------------------------------------------------------
TEST_CASE("padding_masks: key j is allowed iff j < length, for every query", "[ch05][padding_masks]") {
  const std::vector<int64_t> lengths{6, 4, 2, 0};
  const auto masks = [&] {
    INFO("padding_masks(lengths {6, 4, 2, 0}, seq_len 6)");
    return padding_masks(lengths, 6);
  }();
  {
    INFO("padding_masks({6, 4, 2, 0}, seq_len 6) returns one mask per length: expected 4 masks, got " << masks.size());
    REQUIRE(masks.size() == lengths.size());
  }
  for (size_t b = 0; b < lengths.size(); ++b)
    require_mask(fmt::format("padding_masks({{6, 4, 2, 0}}, seq_len 6)[{}] (length {})", b, lengths[b]), masks[b],
                 mask_where(6, 6, [&](int64_t, int64_t j) { return j < lengths[b]; }));
  INFO("padding_masks of no lengths is no masks");
  CHECK(padding_masks({}, 6).empty());
}

TEST_CASE("padding_masks: lengths outside [0, seq_len] are refused", "[ch05][padding_masks]") {
  CHECK_REFUSES("padding_masks(lengths {7}, seq_len 6): a length above seq_len", padding_masks({7}, 6),
                std::invalid_argument);
  CHECK_REFUSES("padding_masks(lengths {-1}, seq_len 6): a negative length", padding_masks({-1}, 6),
                std::invalid_argument);
  CHECK_REFUSES("padding_masks(lengths {6, 3, 9}, seq_len 6): the third above seq_len", padding_masks({6, 3, 9}, 6),
                std::invalid_argument);
  INFO("padding_masks(lengths {6, 0}, seq_len 6): both lengths within [0, 6]");
  CHECK_NOTHROW(padding_masks({6, 0}, 6));
}

// ---------------------------------------------------------------------------
TEST_CASE("mask_and: the truth table of AND", "[ch05][mask_and]") {
  Mask a(2, 2), b(2, 2), expected(2, 2);
  a << true, true, false, false;
  b << true, false, true, false;
  expected << true, false, false, false;
  INFO("mask_and of the (2, 2) masks a = [[1, 1], [0, 0]] and b = [[1, 0], [1, 0]]");
  require_mask("mask_and(a, b)", mask_and(a, b), expected);
  require_mask("mask_and(b, a)", mask_and(b, a), expected);
}

TEST_CASE("mask_and: causal and padding together", "[ch05][mask_and]") {
  // Both built from their definitions, so this checks mask_and alone.
  INFO("mask_and(causal (6, 6), padding to length 4 (6, 6))");
  require_mask("mask_and(causal, padding to length 4)", mask_and(causal(6), keys_below(4, 6)),
               mask_where(6, 6, [](int64_t i, int64_t j) { return j <= i && j < 4; }));
}

// ---------------------------------------------------------------------------
// Weights and outputs below come out of a softmax and a matrix product in
// float32, in a different order than PyTorch adds: kFloat32.
TEST_CASE("masked_attention: causal attention of the running example matches PyTorch", "[ch05][masked_attention]") {
  INFO("masked_attention(Q, K, V (6, 64), causal mask) of the running example");  // (a crash inside names it)
  const Attention a = masked_attention(fx().matrix("run.Q"), fx().matrix("run.K"), fx().matrix("run.V"), causal(6));
  require_close("masked_attention(Q, K, V (6, 64), causal mask) of the running example: weights", a.weights,
                fx().matrix("run.weights"), kFloat32);
  require_close("masked_attention(Q, K, V (6, 64), causal mask) of the running example: output", a.output,
                fx().matrix("run.output"), kFloat32);
}

TEST_CASE("masked_attention: causal attention of random Q, K, V matches PyTorch", "[ch05][masked_attention]") {
  INFO("masked_attention(Q, K, V (7, 8), causal mask (7, 7))");
  const Attention a =
      masked_attention(fx().matrix("causal.Q"), fx().matrix("causal.K"), fx().matrix("causal.V"), causal(7));
  require_close("causal weights (seq 7, d_k 8)", a.weights, fx().matrix("causal.weights"), kFloat32);
  require_close("causal output (seq 7, d_k 8)", a.output, fx().matrix("causal.output"), kFloat32);
}

TEST_CASE("masked_attention: upper triangle exactly 0, row 0 one-hot, row i has i+1 weights",
          "[ch05][masked_attention]") {
  const Matrix V = fx().matrix("causal.V");
  const Attention a = [&] {
    INFO("masked_attention(Q, K, V (7, 8), causal mask (7, 7))");
    return masked_attention(fx().matrix("causal.Q"), fx().matrix("causal.K"), V, causal(7));
  }();
  require_causal("causal weights (seq 7, d_k 8)", a.weights);
  // Query 0 sees only key 0 with weight exactly 1, so its output is V[0]
  // itself: 1·v + 0·(the rest) involves no rounding.
  require_close("causal output (seq 7, d_k 8) row 0 against V row 0", Matrix(a.output.row(0)), Matrix(V.row(0)),
                kBitExact);
  const Attention run = [&] {
    INFO("masked_attention(Q, K, V (6, 64), causal mask) of the running example");
    return masked_attention(fx().matrix("run.Q"), fx().matrix("run.K"), fx().matrix("run.V"), causal(6));
  }();
  require_causal("causal weights of the running example", run.weights);
}

TEST_CASE("masked_attention: a padded batch, one mask per sequence, matches PyTorch", "[ch05][masked_attention]") {
  const auto& lengths = fx().i64("pad.lengths");
  for (int64_t b = 0; b < int64_t(lengths.size()); ++b) {
    const Mask mask = keys_below(lengths[size_t(b)], 6);
    const std::string name = fmt::format("masked_attention(Q, K, V (6, 8), padding mask) of sequence {} (length {})",
                                         b, lengths[size_t(b)]);
    INFO(name);  // (a crash inside names its input)
    const Attention a = masked_attention(block("pad.Q", b), block("pad.K", b), block("pad.V", b), mask);
    require_close(name + ": weights", a.weights, block("pad.weights", b), kFloat32);
    require_close(name + ": output", a.output, block("pad.output", b), kFloat32);
  }
}

TEST_CASE("masked_attention: padding and causal together match PyTorch", "[ch05][masked_attention]") {
  const auto& lengths = fx().i64("pad.lengths");
  for (int64_t b = 0; b < int64_t(lengths.size()); ++b) {
    const Mask mask = mask_where(6, 6, [&](int64_t i, int64_t j) { return j <= i && j < lengths[size_t(b)]; });
    const std::string name = fmt::format(
        "masked_attention(Q, K, V (6, 8), padding and causal mask) of sequence {} (length {})", b, lengths[size_t(b)]);
    INFO(name);
    const Attention a = masked_attention(block("pad.Q", b), block("pad.K", b), block("pad.V", b), mask);
    require_close(name + ": weights", a.weights, block("padcausal.weights", b), kFloat32);
    require_close(name + ": output", a.output, block("padcausal.output", b), kFloat32);
  }
}

TEST_CASE("masked_attention: what sits in the padding changes nothing", "[ch05][masked_attention]") {
  // Sequence 1 has length 4: keys 4 and 5 are padding. Fill them with
  // anything: a masked score is replaced by -inf and a masked value is
  // multiplied by a weight of exactly 0, so the outputs are the same bit for
  // bit.
  const Matrix Q = block("pad.Q", 1), K = block("pad.K", 1), V = block("pad.V", 1);
  const Mask mask = keys_below(4, 6);
  Matrix K_junk = K, V_junk = V;
  K_junk.bottomRows(2).setConstant(1e3f);
  V_junk.bottomRows(2).setConstant(-7e4f);
  const Attention clean = [&] {
    INFO("masked_attention(Q, K, V (6, 8), keys below 4)");
    return masked_attention(Q, K, V, mask);
  }();
  const Attention junk = [&] {
    INFO("masked_attention(Q, K, V (6, 8), keys below 4) with 1e3 in K's and -7e4 in V's 2 padding rows");
    return masked_attention(Q, K_junk, V_junk, mask);
  }();
  require_close("masked_attention(Q, K, V (6, 8), keys below 4).weights with junk in the padding", junk.weights,
                clean.weights, kBitExact);
  require_close("masked_attention(Q, K, V (6, 8), keys below 4).output with junk in the padding", junk.output,
                clean.output, kBitExact);
}

TEST_CASE("masked_attention: masking keys is removing them (rectangular mask, seq_q != seq_k)",
          "[ch05][masked_attention]") {
  // 3 queries over 6 keys of which the last 2 are masked == 3 queries over
  // the first 4 keys, computed by chapter 3's attention (the sizes differ,
  // so the float32 sums may be ordered differently: kFloat32).
  const Matrix Q = block("pad.Q", 2).topRows(3), K = block("pad.K", 2), V = block("pad.V", 2);
  const Mask mask = mask_where(3, 6, [](int64_t, int64_t j) { return j < 4; });
  const std::string call = "masked_attention(Q (3, 8), K, V (6, 8), mask (3, 6) with keys 4 and 5 masked)";
  const Attention masked = [&] {
    INFO(call);
    return masked_attention(Q, K, V, mask);
  }();
  const Attention removed = attention(Q, K.topRows(4), V.topRows(4));
  require_shape(call + ".weights", masked.weights, 3, 6);
  require_close(call + ".weights on the 4 visible keys", Matrix(masked.weights.leftCols(4)), removed.weights,
                kFloat32);
  require_close(call + ".weights on the 2 masked keys", Matrix(masked.weights.rightCols(2)), Matrix::Zero(3, 2),
                kBitExact);
  require_close(call + ".output", masked.output, removed.output, kFloat32);
}

TEST_CASE("masked_attention: a fully masked row gives zero weights and zero output, never NaN",
          "[ch05][masked_attention]") {
  // PyTorch 1.13 computes softmax([-inf, ..., -inf]) = NaN (the fixture
  // holds its NaN rows); the book's choice is zeros for exactly those rows
  // and PyTorch's values everywhere else.
  const Attention a = [&] {
    INFO("masked_attention(Q, K, V (5, 8), mask (5, 5) with fully masked rows)");
    return masked_attention(fx().matrix("fm.Q"), fx().matrix("fm.K"), fx().matrix("fm.V"), fx().mask("fm.mask"));
  }();
  const Matrix torch_weights = fx().matrix("fm.torch_weights"), torch_output = fx().matrix("fm.torch_output");
  require_no_nan("masked_attention(Q, K, V (5, 8), mask with fully masked rows).weights", a.weights);
  require_no_nan("masked_attention(Q, K, V (5, 8), mask with fully masked rows).output", a.output);
  for (int64_t i = 0; i < torch_weights.rows(); ++i) {
    const bool fully_masked = std::isnan(torch_weights(i, 0));
    const std::string row = fmt::format("masked_attention(Q, K, V (5, 8), mask (5, 5)) row {}{}", i,
                                        fully_masked ? " (fully masked)" : "");
    if (fully_masked) {
      require_close(row + ": weights", Matrix(a.weights.row(i)), Matrix::Zero(1, a.weights.cols()), kBitExact);
      require_close(row + ": output", Matrix(a.output.row(i)), Matrix::Zero(1, a.output.cols()), kBitExact);
    } else {
      require_close(row + ": weights", Matrix(a.weights.row(i)), Matrix(torch_weights.row(i)), kFloat32);
      require_close(row + ": output", Matrix(a.output.row(i)), Matrix(torch_output.row(i)), kFloat32);
    }
  }
  // A sequence of length 0: every row is fully masked.
  const Attention empty = [&] {
    INFO("masked_attention(Q, K, V (5, 8), no key allowed)");
    return masked_attention(fx().matrix("fm.Q"), fx().matrix("fm.K"), fx().matrix("fm.V"), keys_below(0, 5));
  }();
  require_close("masked_attention(Q, K, V (5, 8), no key allowed).weights", empty.weights, Matrix::Zero(5, 5),
                kBitExact);
  require_close("masked_attention(Q, K, V (5, 8), no key allowed).output", empty.output, Matrix::Zero(5, 8),
                kBitExact);
}

TEST_CASE("masked_attention: an all-true mask is chapter 3's attention, a wrong shape is refused",
          "[ch05][masked_attention]") {
  const Matrix Q = fx().matrix("causal.Q"), K = fx().matrix("causal.K"), V = fx().matrix("causal.V");
  const Attention masked = [&] {
    INFO("masked_attention(Q, K, V (7, 8), all-true mask (7, 7))");
    return masked_attention(Q, K, V, Mask::Constant(7, 7, true));
  }();
  const Attention plain = attention(Q, K, V);
  require_close("masked_attention(Q, K, V (7, 8), all-true mask).weights vs attention", masked.weights,
                plain.weights, kFloat32);
  require_close("masked_attention(Q, K, V (7, 8), all-true mask).output vs attention", masked.output, plain.output,
                kFloat32);
  CHECK_REFUSES("masked_attention(Q, K, V (7, 8), mask (6, 6)): the scores are (7, 7)",
                masked_attention(Q, K, V, causal(6)), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Multi-head: chapter 4's multi_head_attention with masked_attention as the
// attention inside each head, one mask per sequence. Products of 16-term
// sums through four projections, all in float32: kFloat32.
TEST_CASE("masked_attention: multi-head causal attention, batch 2, 4 heads, matches PyTorch",
          "[ch05][masked_attention]") {
  const AttentionParams params = fx().attention_params("mh");
  const Matrix X = fx().stacked("mh.X");
  const Mask mask = causal(5);
  const HeadAttention head = [&](const Matrix& Q, const Matrix& K, const Matrix& V, int64_t) {
    return masked_attention(Q, K, V, mask);
  };
  const MultiHead mh = [&] {
    INFO("multi_head_attention(X (10, 16), batch 2, n_heads 4) with masked_attention(causal mask (5, 5)) per head");
    return multi_head_attention(X, X, 2, params, 4, head);
  }();
  require_shape("multi-head causal weights (batch 2, n_heads 4, seq 5)", mh.weights.shape(), Shape{2, 4, 5, 5});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h) {
      const std::string name = fmt::format("multi-head causal weights[{}, {}] (batch 2, n_heads 4, seq 5)", b, h);
      require_close(name, Matrix(mh.weights.view(b, h)), block("mh.causal.weights", b * 4 + h), kFloat32);
      require_causal(name, Matrix(mh.weights.view(b, h)));
    }
  require_close("multi-head causal output (batch 2, n_heads 4, seq 5)", mh.output, fx().stacked("mh.causal.output"),
                kFloat32);
}

TEST_CASE("masked_attention: multi-head, padding and causal per sequence, matches PyTorch",
          "[ch05][masked_attention]") {
  const AttentionParams params = fx().attention_params("mh");
  const Matrix X = fx().stacked("mh.X");
  const auto& lengths = fx().i64("mh.lengths");
  std::vector<Mask> masks;
  for (int64_t length : lengths)
    masks.push_back(mask_where(5, 5, [=](int64_t i, int64_t j) { return j <= i && j < length; }));
  // The callback learns which sequence it serves from b.
  const HeadAttention head = [&](const Matrix& Q, const Matrix& K, const Matrix& V, int64_t b) {
    return masked_attention(Q, K, V, masks.at(size_t(b)));
  };
  const MultiHead mh = [&] {
    INFO("multi_head_attention(X (10, 16), batch 2, n_heads 4) with masked_attention(padding and causal mask "
         "(5, 5)) per sequence");
    return multi_head_attention(X, X, 2, params, 4, head);
  }();
  require_shape("multi-head padding + causal weights (batch 2, n_heads 4, seq 5)", mh.weights.shape(),
                Shape{2, 4, 5, 5});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      require_close(fmt::format("multi-head padding + causal weights[{}, {}] (length {}, batch 2, n_heads 4, seq 5)", b,
                                h, lengths[size_t(b)]),
                    Matrix(mh.weights.view(b, h)), block("mh.padcausal.weights", b * 4 + h), kFloat32);
  require_close("multi-head padding + causal output (batch 2, n_heads 4, seq 5)", mh.output,
                fx().stacked("mh.padcausal.output"), kFloat32);
}

TEST_CASE("the chapter program's path: seed 42, causal single-head and 4 heads", "[ch05][masked_attention]") {
  // tokens -> embedding + PE -> W_q, W_k, W_v, W_o drawn in PyTorch's order.
  const auto tokens = tokenize("the cat sat on the mat");
  const Vocabulary vocab(tokens);
  {
    INFO("vocabulary ids of \"the cat sat on the mat\"");
    CHECK(vocab.ids(tokens) == fx().i64("run.ids"));
  }
  Generator gen(42);
  const Matrix table = make_embedding(gen, vocab.size(), 64);
  const AttentionParams params = make_attention_params(gen, 64);
  const Matrix X = embed(table, vocab.ids(tokens)) + positional_encoding(6, 64);
  const QKV qkv = project_qkv(X, params.W_q, params.W_k, params.W_v);
  const Mask mask = [&] {
    INFO("causal_mask(seq_len 6) of the chapter program");
    return causal_mask(6);
  }();
  const Attention single = [&] {
    INFO("masked_attention(Q, K, V (6, 64), causal_mask(6)) of the running example");
    return masked_attention(qkv.Q, qkv.K, qkv.V, mask);
  }();
  require_close("masked_attention(Q, K, V (6, 64), causal_mask(6)) of the running example: weights", single.weights,
                fx().matrix("run.weights"), kFloat32);
  const MultiHead mh = [&] {
    INFO("multi_head_attention(X (6, 64), batch 1, n_heads 4) with masked_attention(causal_mask(6)) per head");
    return multi_head_attention(
        X, X, 1, params, 4,
        [&](const Matrix& Q, const Matrix& K, const Matrix& V, int64_t) { return masked_attention(Q, K, V, mask); });
  }();
  require_shape("multi-head causal weights (X (6, 64), batch 1, n_heads 4)", mh.weights.shape(), Shape{1, 4, 6, 6});
  for (int64_t h = 0; h < 4; ++h) {
    const std::string name = fmt::format("multi-head causal weights of head {} (X (6, 64), batch 1, n_heads 4)", h);
    require_close(name, Matrix(mh.weights.view(0, h)), block("run.mh.weights", h), kFloat32);
    require_causal(name, Matrix(mh.weights.view(0, h)));
  }
  require_close("multi-head causal output (X (6, 64), batch 1, n_heads 4)", mh.output, fx().matrix("run.mh.output"),
                kFloat32);
}

TEST_CASE("causal_mask: a negative seq_len is refused", "[ch05][causal_mask]") {
  CHECK_THROWS_AS(causal_mask(-1), std::invalid_argument);
}

TEST_CASE("mask_and: masks of different shapes are refused", "[ch05][mask_and]") {
  CHECK_REFUSES("mask_and(mask (4, 4), mask (5, 5))", mask_and(causal_mask(4), causal_mask(5)), std::invalid_argument);
  CHECK_REFUSES("mask_and(mask (4, 6), mask (6, 4))", mask_and(Mask::Constant(4, 6, true), Mask::Constant(6, 4, true)),
                std::invalid_argument);
}

TEST_CASE("masked_attention: K and V of different lengths, or Q and K of different d_k, are refused",
          "[ch05][masked_attention]") {
  const Mask all = Mask::Constant(2, 5, true);
  CHECK_REFUSES("masked_attention(Q (2, 4), K (5, 4), V (6, 3), mask (2, 5)): 5 keys, 6 values",
                masked_attention(Matrix::Ones(2, 4), Matrix::Ones(5, 4), Matrix::Ones(6, 3), all),
                std::invalid_argument);
  CHECK_REFUSES("masked_attention(Q (2, 4), K (5, 3), V (5, 3), mask (2, 5)): d_k 4 against 3",
                masked_attention(Matrix::Ones(2, 4), Matrix::Ones(5, 3), Matrix::Ones(5, 3), all),
                std::invalid_argument);
}
