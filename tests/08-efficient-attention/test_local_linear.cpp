// Hidden suite of chapter 8, part 4: sliding_window_mask, local_attention
// and linear_attention. Values come from PyTorch
// (tests/reference/ch08_efficient_attention.py: local attention as a softmax
// with a band mask on the whole matrix of scores, linear attention as the
// quadratic form φ(Q) φ(K)ᵀ masked to the lower triangle); the rest are masks
// written out from their definition and properties that hold for any input.
#include "08-efficient-attention/efficient.hpp"

#include "03-softmax/softmax.hpp"
#include "05-causal-mask/mask.hpp"
#include "sa/rng.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"
#include "support/masks.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("08-efficient-attention.txt");
  return f;
}

// Entry [index] of a (B, R, C) fixture, as a matrix.
Matrix block_of(const std::string& name, int64_t index) { return fx().matrix(name, index); }

// The band of local attention, written out from its definition (the
// other masks: support/masks.hpp).
Mask band(int64_t n, int64_t window) {
  return mask_where(n, n, [=](int64_t i, int64_t j) { return j <= i && j > i - window; });
}

}  // namespace

// ===========================================================================
// sliding_window_mask
// ===========================================================================

TEST_CASE("sliding_window_mask: window 1 is the diagonal, window 3 a band of three", "[ch08][sliding_window_mask]") {
  Mask diagonal(5, 5), band3(5, 5);
  diagonal << 1, 0, 0, 0, 0,  //
      0, 1, 0, 0, 0,          //
      0, 0, 1, 0, 0,          //
      0, 0, 0, 1, 0,          //
      0, 0, 0, 0, 1;
  band3 << 1, 0, 0, 0, 0,  //
      1, 1, 0, 0, 0,       //
      1, 1, 1, 0, 0,       //
      0, 1, 1, 1, 0,       //
      0, 0, 1, 1, 1;
  require_mask("sliding_window_mask(5, 1)", sliding_window_mask(5, 1), diagonal);
  require_mask("sliding_window_mask(5, 3)", sliding_window_mask(5, 3), band3);
  Mask one(1, 1);
  one << 1;
  require_mask("sliding_window_mask(1, 1)", sliding_window_mask(1, 1), one);
}

TEST_CASE("sliding_window_mask: i - window < j <= i for every size, window >= seq_len is causal",
          "[ch08][sliding_window_mask]") {
  for (int64_t seq = 1; seq <= 9; ++seq)
    for (int64_t window = 1; window <= 11; ++window) {
      const Mask m = sliding_window_mask(seq, window);
      require_mask(fmt::format("sliding_window_mask({}, {})", seq, window), m, band(seq, window));
      // Query i sees min(i + 1, window) keys.
      int64_t expected_count = 0;
      for (int64_t i = 0; i < seq; ++i) expected_count += std::min(i + 1, window);
      INFO("allowed pairs in sliding_window_mask(" << seq << ", " << window << "): " << m.count() << ", expected "
                                                   << expected_count);
      CHECK(m.count() == expected_count);
      if (window >= seq) require_mask(fmt::format("sliding_window_mask({}, {}) vs causal", seq, window), m, causal(seq));
    }
}

TEST_CASE("sliding_window_mask: window < 1 or seq_len < 1 is refused", "[ch08][sliding_window_mask]") {
  CHECK_THROWS_AS(sliding_window_mask(5, 0), std::invalid_argument);
  CHECK_THROWS_AS(sliding_window_mask(5, -2), std::invalid_argument);
  CHECK_THROWS_AS(sliding_window_mask(0, 3), std::invalid_argument);
  CHECK_THROWS_AS(sliding_window_mask(-1, 3), std::invalid_argument);
}

// ===========================================================================
// local_attention
// ===========================================================================
// A softmax over at most 37 scores of order 1-5 and a weighted sum of value
// rows, in float32, against float64 (fixture) or chapter 5's float32
// whole-matrix attention: kFloat32.

TEST_CASE("local_attention: matches PyTorch's band-masked softmax, windows 1, 5, 16, 37, 50",
          "[ch08][local_attention]") {
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.self.K"), V = fx().matrix("tiled.self.V");
  const auto& windows = fx().i64("local.windows");
  for (size_t w = 0; w < windows.size(); ++w) {
    const int64_t window = windows[w];
    INFO("local_attention (seq 37, window " << window << ")");
    require_close(fmt::format("local_attention (seq 37, d_k 16, d_v 8, window {})", window),
                  local_attention(Q, K, V, window), block_of("local.output", int64_t(w)), kFloat32);
  }
}

TEST_CASE("local_attention: equals masked_attention with the sliding-window mask, every window",
          "[ch08][local_attention]") {
  // Chapter 5's whole-matrix attention with the band written out from its
  // definition; window >= seq_len is plain causal attention.
  Generator gen(820);
  const int64_t seq = 19;
  const Matrix Q = gen.randn(seq, 8) * 2.0f, K = gen.randn(seq, 8), V = gen.randn(seq, 5);
  for (int64_t window = 1; window <= seq + 2; ++window) {
    INFO("local_attention (seq 19, window " << window << ")");
    const Attention reference = masked_attention(Q, K, V, band(seq, window));
    require_close(fmt::format("local_attention (seq 19, d_k 8, d_v 5, window {}) vs masked_attention", window),
                  local_attention(Q, K, V, window), reference.output, kFloat32);
  }
  const Attention full_causal = masked_attention(Q, K, V, causal(seq));
  for (int64_t window : {19, 20, 1000}) {
    INFO("local_attention (seq 19, window " << window << ")");
    require_close(fmt::format("local_attention (seq 19, window {}) vs causal attention", window),
                  local_attention(Q, K, V, window), full_causal.output, kFloat32);
  }
}

TEST_CASE("local_attention: window 1, every query sees only itself", "[ch08][local_attention]") {
  // One key, weight exactly 1: the output is V, up to the rounding of
  // exp(0) / 1 times v (none): kElementwise.
  Generator gen(821);
  const Matrix Q = gen.randn(7, 4), K = gen.randn(7, 4), V = gen.randn(7, 3);
  require_close("local_attention(window 1) vs V", local_attention(Q, K, V, 1), V, kElementwise);
}

TEST_CASE("local_attention: scores near 1000 do not overflow", "[ch08][local_attention]") {
  // d_k = 4, Q row i = (2, 0, 0, 0) and K row j = (1000 - j, 0, 0, 0): scores
  // 1000 - j, exact. With window 3, query i >= 2 weighs keys i-2, i-1, i by
  // softmax(2, 1, 0) = softmax of the scores minus the largest. exp(1000)
  // overflows float32. Weights from double: kFloat32.
  const int64_t seq = 6, window = 3;
  Matrix Q = Matrix::Zero(seq, 4), K = Matrix::Zero(seq, 4);
  for (int64_t i = 0; i < seq; ++i) {
    Q(i, 0) = 2.0f;
    K(i, 0) = float(1000 - i);
  }
  const Matrix V = Generator(822).randn(seq, 3);
  Matrix expected = Matrix::Zero(seq, 3);
  for (int64_t i = 0; i < seq; ++i) {
    const int64_t first = std::max<int64_t>(0, i - window + 1);
    double z = 0;
    for (int64_t j = first; j <= i; ++j) z += std::exp(double(first - j));
    for (int64_t c = 0; c < 3; ++c) {
      double o = 0;
      for (int64_t j = first; j <= i; ++j) o += std::exp(double(first - j)) / z * V(j, c);
      expected(i, c) = float(o);
    }
  }
  require_close("local_attention with scores near 1000 (window 3)", local_attention(Q, K, V, window), expected,
                kFloat32);
}

TEST_CASE("local_attention: window < 1 and shapes that do not fit are refused", "[ch08][local_attention]") {
  const Matrix Q = Matrix::Ones(5, 3), K = Matrix::Ones(5, 3), V = Matrix::Ones(5, 2);
  {
    INFO("window 0 and -1");
    CHECK_THROWS_AS(local_attention(Q, K, V, 0), std::invalid_argument);
    CHECK_THROWS_AS(local_attention(Q, K, V, -1), std::invalid_argument);
  }
  {
    INFO("seq_q 4, seq_k 5 (local attention is causal: one key per query)");
    CHECK_THROWS_AS(local_attention(Matrix::Ones(4, 3), K, V, 2), std::invalid_argument);
  }
  {
    INFO("d_k 0: Q (5, 0), K (5, 0) (scores would divide by sqrt(0))");
    CHECK_THROWS_AS(local_attention(Matrix(5, 0), Matrix(5, 0), V, 2), std::invalid_argument);
  }
  {
    INFO("Q (5, 3), K (5, 2): different d_k");
    CHECK_THROWS_AS(local_attention(Q, Matrix::Ones(5, 2), V, 2), std::invalid_argument);
  }
  {
    INFO("K (5, 3), V (6, 2): different seq_k");
    CHECK_THROWS_AS(local_attention(Q, K, Matrix::Ones(6, 2), 2), std::invalid_argument);
  }
}

// ===========================================================================
// linear_attention
// ===========================================================================

TEST_CASE("linear_attention: matches PyTorch's quadratic form, seq 37", "[ch08][linear_attention]") {
  // Running sums of 37 terms in float32 against float64's whole-matrix form,
  // then one division: kFloat32.
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.self.K"), V = fx().matrix("tiled.self.V");
  require_close("linear_attention (seq 37, d_k 16, d_v 8)", linear_attention(Q, K, V), fx().matrix("linear.output"),
                kFloat32);
}

TEST_CASE("linear_attention: positive weights, so row i lies within the values of tokens 0..i",
          "[ch08][linear_attention]") {
  // φ(x) = elu(x) + 1 > 0, so every weight φ(q_i)·φ(k_j) is positive and row
  // i is a convex combination of v_0..v_i: each coordinate lies between the
  // smallest and largest of that column so far (within float rounding,
  // 1e-5 + 1e-5 |bound|). Row 0 is v_0 itself. Inputs of std 3, where φ
  // without the +1 (elu alone) goes negative.
  Generator gen(823);
  const Matrix Q = gen.randn(25, 6) * 3.0f, K = gen.randn(25, 6) * 3.0f, V = gen.randn(25, 4);
  const Matrix out = linear_attention(Q, K, V);
  require_shape("linear_attention (seq 25, d_k 6, d_v 4)", out, 25, 4);
  require_close("row 0 (one key: weight 1)", Matrix(out.row(0)), Matrix(V.row(0)), kFloat32);
  for (int64_t i = 0; i < out.rows(); ++i)
    for (int64_t c = 0; c < out.cols(); ++c) {
      const float lo = V.col(c).head(i + 1).minCoeff(), hi = V.col(c).head(i + 1).maxCoeff();
      const double slack = 1e-5 + 1e-5 * std::max(std::abs(lo), std::abs(hi));
      if (!(out(i, c) >= lo - slack && out(i, c) <= hi + slack))
        FAIL(fmt::format("linear_attention: output [{}, {}] = {:.9g} lies outside [{:.9g}, {:.9g}], the range of "
                         "column {} of V over tokens 0..{}",
                         i, c, out(i, c), lo, hi, c, i));
    }
  SUCCEED();
}

TEST_CASE("linear_attention: a token's output does not depend on later tokens", "[ch08][linear_attention]") {
  // Causal: the first n rows of the output for 20 tokens are the output for
  // the first n tokens alone. The same running sums in the same order:
  // kElementwise.
  Generator gen(824);
  const Matrix Q = gen.randn(20, 5), K = gen.randn(20, 5), V = gen.randn(20, 3);
  const Matrix all = linear_attention(Q, K, V);
  for (int64_t n : {1, 7, 19}) {
    INFO("linear_attention of the first " << n << " of 20 tokens");
    require_close(fmt::format("linear_attention of the first {} tokens vs the first {} rows of 20", n, n),
                  linear_attention(Q.topRows(n), K.topRows(n), V.topRows(n)), Matrix(all.topRows(n)), kElementwise);
  }
}

TEST_CASE("linear_attention: shapes that do not fit are refused", "[ch08][linear_attention]") {
  const Matrix Q = Matrix::Ones(5, 3), K = Matrix::Ones(5, 3), V = Matrix::Ones(5, 2);
  {
    INFO("seq_q 4, seq_k 5");
    CHECK_THROWS_AS(linear_attention(Matrix::Ones(4, 3), K, V), std::invalid_argument);
  }
  {
    INFO("Q (5, 3), K (5, 2): different d_k");
    CHECK_THROWS_AS(linear_attention(Q, Matrix::Ones(5, 2), V), std::invalid_argument);
  }
  {
    INFO("K (5, 3), V (6, 2): different seq_k");
    CHECK_THROWS_AS(linear_attention(Q, K, Matrix::Ones(6, 2)), std::invalid_argument);
  }
  {
    INFO("d_k 0: Q (5, 0), K (5, 0) (every phi(q) . z would be 0 / 0)");
    CHECK_THROWS_AS(linear_attention(Matrix(5, 0), Matrix(5, 0), V), std::invalid_argument);
  }
}
