// Hidden suite of chapter 8, part 1: online_softmax_update,
// online_softmax_rows and tiled_attention (the forward). Values come from
// PyTorch (tests/reference/ch08_efficient_attention.py: the whole matrix of
// scores, torch.softmax and torch.logsumexp in float64, rounded once); the
// rest are hand-derived states and properties that hold for any input
// (independent of the block size, equal to chapter 5's causal attention).
// The other parts: test_efficient_backward.cpp (tiled_attention_backward),
// test_kv_cache.cpp (kv_append, kv_attend), test_local_linear.cpp
// (sliding_window_mask, local_attention, linear_attention).
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
#include <limits>
#include <string>
#include <tuple>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const Fixtures& fx() {
  static const Fixtures f("08-efficient-attention.txt");
  return f;
}

// lse as a (1, seq_q) matrix, the shape the fixture loader gives a 1-D tensor.
Matrix as_row(const ColVector& v) { return Matrix(v.transpose()); }

// lse against the expected (1, seq_q) row: its length first, then each
// entry named by its query ("query 9", not the row's "[0, 9]").
void require_lse(const std::string& what, const ColVector& lse, const Matrix& expected, Tolerance tol) {
  if (lse.size() != expected.cols())
    FAIL(fmt::format("{}: {} entries, expected {} (one per query)", what, lse.size(), expected.cols()));
  require_close(what, as_row(lse), expected, tol,
                [](int64_t, int64_t query) { return fmt::format("query {}", query); });
}

// log Σ_j exp(q_i · k_j / sqrt(d_k)) over the keys query i may see, in
// double: the yardstick for lse that does not come from the code under test.
Matrix lse_reference(const Matrix& Q, const Matrix& K, bool is_causal) {
  Matrix lse(1, Q.rows());
  const double scale = 1.0 / std::sqrt(double(Q.cols()));
  for (int64_t i = 0; i < Q.rows(); ++i) {
    const int64_t seen = is_causal ? i + 1 : K.rows();
    std::vector<double> s(static_cast<size_t>(seen));
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < seen; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < Q.cols(); ++c) dot += double(Q(i, c)) * K(j, c);
      m = std::max(m, s[size_t(j)] = dot * scale);
    }
    for (double x : s) sum += std::exp(x - m);
    lse(0, i) = float(m + std::log(sum));
  }
  return lse;
}

void require_finite(const std::string& what, const Matrix& m) {
  for (int64_t k = 0; k < m.size(); ++k)
    if (!std::isfinite(m.data()[k]))
      FAIL(fmt::format("{}: entry [{}, {}] is {}, not a finite number", what, k / m.cols(), k % m.cols(), m.data()[k]));
  SUCCEED();
}

}  // namespace

// ===========================================================================
// online_softmax_update
// ===========================================================================
// The sums below are one or two float operations per step, compared with
// the same formula in double: kElementwise (a few ulps).

TEST_CASE("online_softmax_update: the state after 1, 3, 2, 3, -0.5, step by step", "[ch08][online_softmax_update]") {
  OnlineSoftmax s;
  online_softmax_update(s, 1.0f);
  // The first score is the maximum, and exp(1 - 1) = 1 is the whole sum.
  check_close("after 1: max", s.max, 1.0, kBitExact);
  check_close("after 1: sum", s.sum, 1.0, kBitExact);
  // 3 is a new maximum: the old sum (1, relative to max 1) is rescaled by
  // exp(1 - 3), then exp(3 - 3) = 1 is added. A rescale by exp(3 - 1)
  // instead gives 8.39; no rescale gives 2.
  online_softmax_update(s, 3.0f);
  double expected = 1 + std::exp(-2.0);
  check_close("after 1, 3: max", s.max, 3.0, kBitExact);
  check_close("after 1, 3: sum = 1 + exp(-2)", s.sum, expected, kElementwise);
  // 2 is below the maximum: exp(2 - 3) is added, nothing is rescaled.
  online_softmax_update(s, 2.0f);
  expected += std::exp(-1.0);
  check_close("after 1, 3, 2: max", s.max, 3.0, kBitExact);
  check_close("after 1, 3, 2: sum = 1 + exp(-2) + exp(-1)", s.sum, expected, kElementwise);
  // A tie with the maximum adds exp(0) = 1 and keeps the maximum.
  online_softmax_update(s, 3.0f);
  expected += 1;
  check_close("after 1, 3, 2, 3: max", s.max, 3.0, kBitExact);
  check_close("after 1, 3, 2, 3: sum", s.sum, expected, kElementwise);
  online_softmax_update(s, -0.5f);
  expected += std::exp(-3.5);
  check_close("after 1, 3, 2, 3, -0.5: max", s.max, 3.0, kBitExact);
  check_close("after 1, 3, 2, 3, -0.5: sum", s.sum, expected, kElementwise);
}

TEST_CASE("online_softmax_update: a rising run of 400 scores keeps the sum bounded", "[ch08][online_softmax_update]") {
  // Scores 0, 0.5, ..., 199.5: every one is a new maximum, so the sum is
  // rescaled 399 times. Relative to the last maximum it is
  // Σ_k exp(-0.5 k) = (1 - exp(-200)) / (1 - exp(-0.5)) = 2.5415. exp(199.5)
  // itself overflows float32 (max 3.4e38 = exp(88.7)): a sum not taken
  // relative to the maximum is inf. Each step adds one rounding of relative
  // 6e-8 and shrinks the earlier ones by exp(-0.5), so the error stays a few
  // ulps: kElementwise.
  OnlineSoftmax s;
  for (int k = 0; k < 400; ++k) online_softmax_update(s, 0.5f * float(k));
  check_close("max after 0, 0.5, ..., 199.5", s.max, 199.5, kBitExact);
  check_close("sum after 0, 0.5, ..., 199.5", s.sum, (1 - std::exp(-200.0)) / (1 - std::exp(-0.5)), kElementwise);
  // Falling scores instead: the maximum is the first, nothing is rescaled.
  OnlineSoftmax f;
  for (int k = 0; k < 400; ++k) online_softmax_update(f, -0.5f * float(k));
  check_close("max after 0, -0.5, ..., -199.5", f.max, 0.0, kBitExact);
  check_close("sum after 0, -0.5, ..., -199.5", f.sum, (1 - std::exp(-200.0)) / (1 - std::exp(-0.5)), kElementwise);
}

TEST_CASE("online_softmax_update: -inf changes nothing, before or after a finite score",
          "[ch08][online_softmax_update]") {
  OnlineSoftmax s;
  online_softmax_update(s, -kInf);
  // The empty state stays empty: exp(-inf - -inf) would be NaN.
  check_close("max after only -inf", s.max, -kInf, kBitExact);
  check_close("sum after only -inf (nothing was added)", s.sum, 0.0, kBitExact);
  online_softmax_update(s, 2.0f);
  online_softmax_update(s, -kInf);
  online_softmax_update(s, -kInf);
  check_close("max after -inf, 2, -inf, -inf", s.max, 2.0, kBitExact);
  check_close("sum after -inf, 2, -inf, -inf", s.sum, 1.0, kBitExact);
}

TEST_CASE("online_softmax_update: logits of 1e30 stay finite", "[ch08][online_softmax_update]") {
  // exp(-1e30 - 1e30) is exactly 0 and exp(0) exactly 1: these are exact.
  OnlineSoftmax s;
  for (float x : {1e30f, -1e30f, 1e30f}) online_softmax_update(s, x);
  check_close("max after 1e30, -1e30, 1e30", s.max, double(1e30f), kBitExact);
  check_close("sum after 1e30, -1e30, 1e30", s.sum, 2.0, kBitExact);
  OnlineSoftmax t;
  for (float x : {-1e30f, 5.0f, 1e30f}) online_softmax_update(t, x);
  // Each new maximum rescales the sum by exp(old - new), here 0.
  check_close("max after -1e30, 5, 1e30", t.max, double(1e30f), kBitExact);
  check_close("sum after -1e30, 5, 1e30", t.sum, 1.0, kBitExact);
}

TEST_CASE("online_softmax_update: NaN and +inf are refused", "[ch08][online_softmax_update]") {
  OnlineSoftmax empty;
  {
    INFO("online_softmax_update(a fresh state, NaN) must refuse the NaN");
    CHECK_THROWS_AS(online_softmax_update(empty, kNaN), std::invalid_argument);
  }
  {
    INFO("online_softmax_update(a fresh state, +inf) must refuse the +inf");
    CHECK_THROWS_AS(online_softmax_update(empty, kInf), std::invalid_argument);
  }
  OnlineSoftmax s;
  online_softmax_update(s, 1.0f);
  CHECK_THROWS_AS(online_softmax_update(s, kNaN), std::invalid_argument);
  CHECK_THROWS_AS(online_softmax_update(s, kInf), std::invalid_argument);
}

// ===========================================================================
// online_softmax_rows
// ===========================================================================

TEST_CASE("online_softmax_rows: matches torch.softmax, with -inf, 1e30 and -1e4 rows", "[ch08][online_softmax_rows]") {
  // os.X (6 x 9): random scores of std 3, a row with four -inf, a row of
  // only -inf (zeros: the book's choice, PyTorch gives NaN), logits of
  // +-1e30, logits -1e4 + 0..8, a single finite score among -inf. exp of
  // order-1 differences and one division per weight: kFloat32.
  const Matrix X = fx().matrix("os.X");
  require_close(fmt::format("online_softmax_rows(X {}) (rows with -inf, 1e30 and -1e4)", shape_str(X)),
                online_softmax_rows(X), fx().matrix("os.P"), kFloat32);
}

TEST_CASE("online_softmax_rows: equals chapter 3's softmax_rows on random rows", "[ch08][online_softmax_rows]") {
  // Same formula, different order of float operations: kFloat32.
  Generator gen(801);
  for (auto [rows, cols, spread] : {std::tuple{1, 1, 1.0f}, std::tuple{3, 2, 1.0f}, std::tuple{6, 17, 3.0f},
                                    std::tuple{4, 200, 10.0f}, std::tuple{8, 33, 40.0f}}) {
    const Matrix X = gen.randn(rows, cols) * spread;
    require_close(fmt::format("online_softmax_rows of a ({}, {}) matrix of std {}", rows, cols, spread),
                  online_softmax_rows(X), softmax_rows(X), kFloat32);
  }
}

TEST_CASE("online_softmax_rows: a row of only -inf gives zeros, -inf entries exactly 0", "[ch08][online_softmax_rows]") {
  Matrix X(3, 4);
  X << -kInf, -kInf, -kInf, -kInf,  //
      0.0f, -kInf, 0.0f, -kInf,     //
      -kInf, 3.0f, -kInf, -kInf;
  Matrix expected(3, 4);
  expected << 0, 0, 0, 0,  //
      0.5f, 0, 0.5f, 0,    //
      0, 1, 0, 0;
  // exp(0) / 2 and exp(0) / 1 involve no rounding: bit for bit.
  require_close("online_softmax_rows with an all -inf row", online_softmax_rows(X), expected, kBitExact);
  Matrix one(1, 1);
  one << -kInf;
  require_close("online_softmax_rows([[-inf]])", online_softmax_rows(one), Matrix::Zero(1, 1), kBitExact);
}

TEST_CASE("online_softmax_rows: NaN and +inf are refused", "[ch08][online_softmax_rows]") {
  Matrix X = Matrix::Zero(2, 3);
  X(1, 2) = kNaN;
  {
    INFO("online_softmax_rows(X (2, 3) of zeros with NaN at [1, 2]) must refuse the NaN");
    CHECK_THROWS_AS(online_softmax_rows(X), std::invalid_argument);
  }
  X(1, 2) = kInf;
  {
    INFO("online_softmax_rows(X (2, 3) of zeros with +inf at [1, 2]) must refuse the +inf");
    CHECK_THROWS_AS(online_softmax_rows(X), std::invalid_argument);
  }
  X(1, 2) = 0.0f;
  X(0, 0) = -kInf;
  X(0, 1) = kNaN;  // a NaN after a masked entry is still a NaN
  INFO("online_softmax_rows(X (2, 3) of zeros with -inf at [0, 0] and NaN at [0, 1]) must refuse the NaN after "
       "the masked entry");
  CHECK_THROWS_AS(online_softmax_rows(X), std::invalid_argument);
}

// ===========================================================================
// tiled_attention
// ===========================================================================
// Outputs are float32 matrix products and exps accumulated tile by tile, in
// another order than the float64 reference: kFloat32. Scores are of order
// 1-5 and sums have at most 70 terms, so the honest error stays below 1e-6
// (measured: under 3% of kFloat32); a wrong rescale, a missed block or a
// wrong mask moves outputs by 1e-2 to 1.

TEST_CASE("tiled_attention: matches PyTorch, 37 x 37, every block size", "[ch08][tiled_attention]") {
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.self.K"), V = fx().matrix("tiled.self.V");
  // 37 = 7 * 5 + 2 = 4 * 8 + 5 = 2 * 16 + 5: every block size but 1 and 37
  // leaves a smaller last block, of queries and of keys.
  for (int64_t block : {1, 2, 5, 8, 16, 36, 37, 64}) {
    const std::string input = fmt::format("(seq_q 37, seq_k 37, not causal, block {})", block);
    INFO("tiled_attention" << input);
    const TiledAttention t = tiled_attention(Q, K, V, false, block);
    require_close("output " + input, t.output, fx().matrix("tiled.self.output"), kFloat32);
    require_lse("lse " + input, t.lse, fx().matrix("tiled.self.lse"), kFloat32);
  }
  // The defaults: not causal, block 128 (one tile holds everything).
  const TiledAttention t = tiled_attention(Q, K, V);
  require_close("output (default causal = false, block = 128)", t.output, fx().matrix("tiled.self.output"), kFloat32);
  require_lse("lse (default causal = false, block = 128)", t.lse, fx().matrix("tiled.self.lse"), kFloat32);
}

TEST_CASE("tiled_attention: causal matches PyTorch, 37 x 37, every block size", "[ch08][tiled_attention]") {
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.self.K"), V = fx().matrix("tiled.self.V");
  // Block 1: every diagonal tile is a single score. Block 5, 8, 16: tiles the
  // diagonal crosses, above it (skipped), a partial last one. 37, 64: one tile.
  for (int64_t block : {1, 2, 3, 5, 8, 16, 36, 37, 64}) {
    const std::string input = fmt::format("(seq 37, causal, block {})", block);
    INFO("tiled_attention" << input);
    const TiledAttention t = tiled_attention(Q, K, V, true, block);
    require_close("output " + input, t.output, fx().matrix("tiled.self.causal.output"), kFloat32);
    require_lse("lse " + input, t.lse, fx().matrix("tiled.self.causal.lse"), kFloat32);
  }
}

TEST_CASE("tiled_attention: cross-attention, 37 queries over 45 keys, matches PyTorch", "[ch08][tiled_attention]") {
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.cross.K"), V = fx().matrix("tiled.cross.V");
  // 45 keys = 11 * 4 + 1 = 6 * 7 + 3: the last key block has 1 or 3 keys;
  // block 44 leaves one key alone, 46 and 128 hold all of them in one tile.
  for (int64_t block : {1, 4, 7, 16, 44, 45, 46, 128}) {
    const std::string input = fmt::format("(seq_q 37, seq_k 45, d_v 8, not causal, block {})", block);
    INFO("tiled_attention" << input);
    const TiledAttention t = tiled_attention(Q, K, V, false, block);
    require_shape("output " + input, t.output, 37, 8);
    require_close("output " + input, t.output, fx().matrix("tiled.cross.output"), kFloat32);
    require_lse("lse " + input, t.lse, fx().matrix("tiled.cross.lse"), kFloat32);
  }
}

TEST_CASE("tiled_attention: the result does not depend on the block size", "[ch08][tiled_attention]") {
  // Against the same call with one tile holding everything (block 1000):
  // the same sums in another order, kFloat32. Shapes where seq_q > seq_k,
  // d_v < d_k, a single query, a single key.
  Generator gen(802);
  for (auto [seq_q, seq_k, d_k, d_v] : {std::tuple{70, 53, 8, 5}, std::tuple{1, 20, 4, 3}, std::tuple{20, 1, 4, 3},
                                        std::tuple{33, 33, 12, 12}}) {
    const Matrix Q = gen.randn(seq_q, d_k) * 2.0f, K = gen.randn(seq_k, d_k), V = gen.randn(seq_k, d_v);
    for (bool is_causal : {false, true}) {
      if (is_causal && seq_q != seq_k) continue;
      TiledAttention whole;
      {
        INFO(fmt::format("tiled_attention(seq_q {}, seq_k {}, d_k {}, d_v {}, {}, block 1000), the one-tile reference",
                         seq_q, seq_k, d_k, d_v, is_causal ? "causal" : "not causal"));
        whole = tiled_attention(Q, K, V, is_causal, 1000);
      }
      for (int64_t block : {1, 2, 3, 7, 16, 32, 52, 53, 54}) {
        const std::string input = fmt::format("(seq_q {}, seq_k {}, d_k {}, d_v {}, {}, block {} vs 1000)", seq_q,
                                              seq_k, d_k, d_v, is_causal ? "causal" : "not causal", block);
        INFO("tiled_attention" << input);
        const TiledAttention t = tiled_attention(Q, K, V, is_causal, block);
        require_close("output " + input, t.output, whole.output, kFloat32);
        require_lse("lse " + input, t.lse, as_row(whole.lse), kFloat32);
      }
    }
  }
}

TEST_CASE("tiled_attention: causal equals chapter 5's masked_attention with the causal mask",
          "[ch08][tiled_attention]") {
  // masked_attention builds the whole matrix; tiled_attention must agree on
  // every sequence length around the block sizes (seq 1 sees one key).
  // lse against log Σ exp in double over keys 0..i.
  Generator gen(803);
  for (int64_t seq : {1, 2, 3, 8, 9, 16, 17, 31}) {
    const Matrix Q = gen.randn(seq, 8) * 2.0f, K = gen.randn(seq, 8), V = gen.randn(seq, 6);
    const Attention reference = masked_attention(Q, K, V, causal(seq));
    const Matrix lse = lse_reference(Q, K, true);
    for (int64_t block : {1, 3, 4, 8, 16, 100}) {
      const std::string input = fmt::format("(causal, seq {}, d_k 8, d_v 6, block {})", seq, block);
      INFO("tiled_attention" << input);
      const TiledAttention t = tiled_attention(Q, K, V, true, block);
      require_close("output vs masked_attention " + input, t.output, reference.output, kFloat32);
      require_lse("lse vs log-sum-exp in double " + input, t.lse, lse, kFloat32);
    }
  }
}

TEST_CASE("tiled_attention: scores near +-1000 do not overflow", "[ch08][tiled_attention]") {
  // d_k = 4 (scale exactly 1/2) and one non-zero column, so every score is
  // exact: query 0 scores key j at 1000 - j, query 1 at j - 1000, query 2
  // at (1000 - j) / 2. exp(1000) overflows float32: a running maximum that
  // is not subtracted gives inf and then NaN. The weights are a softmax of
  // exact order-1 differences: kFloat32. lse is about 1000, where one float32
  // ulp is 6e-5; kFloat32 allows 0.1 there, and a missing log (1000 + sum)
  // or a missing maximum (log sum alone) is off by more than 0.5.
  const int64_t seq_k = 10;
  Matrix Q = Matrix::Zero(3, 4), K = Matrix::Zero(seq_k, 4);
  Q(0, 0) = 2.0f;
  Q(1, 0) = -2.0f;
  Q(2, 0) = 1.0f;
  for (int64_t j = 0; j < seq_k; ++j) K(j, 0) = float(1000 - j);
  const Matrix V = Generator(804).randn(seq_k, 3);
  Matrix expected(3, 3), expected_lse(1, 3);
  for (int64_t i = 0; i < 3; ++i) {
    const double q = Q(i, 0);
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < seq_k; ++j) m = std::max(m, q * K(j, 0) / 2);
    for (int64_t j = 0; j < seq_k; ++j) sum += std::exp(q * K(j, 0) / 2 - m);
    for (int64_t c = 0; c < 3; ++c) {
      double o = 0;
      for (int64_t j = 0; j < seq_k; ++j) o += std::exp(q * K(j, 0) / 2 - m) / sum * V(j, c);
      expected(i, c) = float(o);
    }
    expected_lse(0, i) = float(m + std::log(sum));
  }
  for (int64_t block : {1, 3, 16}) {
    INFO("tiled_attention with scores near +-1000 (block " << block << ")");
    const TiledAttention t = tiled_attention(Q, K, V, false, block);
    require_finite(fmt::format("output with scores near +-1000 (block {})", block), t.output);
    require_close(fmt::format("output with scores near +-1000 (block {})", block), t.output, expected, kFloat32);
    require_lse(fmt::format("lse with scores near +-1000 (block {})", block), t.lse, expected_lse, kFloat32);
  }
}

TEST_CASE("tiled_attention: a later tile far below the running maximum adds almost nothing",
          "[ch08][tiled_attention]") {
  // Q = [1], K = [0, 0, -200, -200], V = [1, 2, 3, 4], d_k = 1 (scale 1),
  // block 2. The first tile's scores are 0 and 0, the second's -200 and
  // -200, whose weights are e^-200 / 2: 0 in float. So the output is the
  // mean of 1 and 2, 1.5, and lse = log(2 + 2 e^-200) = log 2.
  // The running maximum must stay 0 over the second tile. A maximum taken
  // over that tile alone (-200) rescales the first tile's sums by
  // exp(0 - (-200)), which overflows float32 to inf: the output becomes
  // inf / inf. (With scores of -2 instead of -200 that mistake gives the
  // right numbers: any reference point cancels out until exp overflows.)
  Matrix Q(1, 1), K(4, 1), V(4, 1);
  Q << 1;
  K << 0, 0, -200, -200;
  V << 1, 2, 3, 4;
  Matrix expected(1, 1), expected_lse(1, 1);
  expected << 1.5f;
  expected_lse << float(std::log(2.0));
  for (int64_t block : {2, 1}) {
    const std::string what =
        fmt::format("tiled_attention(Q = [1], K = [0, 0, -200, -200], V = [1, 2, 3, 4], block {})", block);
    const TiledAttention t = [&] {
      INFO(what);  // a throw or a crash inside names the input too
      return tiled_attention(Q, K, V, false, block);
    }();
    require_close(what + ".output", t.output, expected, kFloat32);
    require_lse(what + ".lse", t.lse, expected_lse, kFloat32);
  }
}

TEST_CASE("tiled_attention: with no keys at all, output 0 and lse -inf", "[ch08][tiled_attention]") {
  // seq_k = 0: every query sees no key. The header's choice, as chapter 3's
  // softmax_rows for a row of only -inf: output rows of 0, lse = -inf.
  const Matrix Q = Generator(805).randn(3, 4);
  const TiledAttention t = tiled_attention(Q, Matrix(0, 4), Matrix(0, 2), false, 2);
  require_close("output (seq_q 3, seq_k 0, d_v 2)", t.output, Matrix::Zero(3, 2), kBitExact);
  require_lse("lse (seq_q 3, seq_k 0)", t.lse, Matrix::Constant(1, 3, -kInf), kBitExact);
}

TEST_CASE("tiled_attention: shapes that do not fit, block < 1, causal with seq_q != seq_k, d_k 0 are refused",
          "[ch08][tiled_attention]") {
  const Matrix Q = Matrix::Ones(4, 3), K = Matrix::Ones(5, 3), V = Matrix::Ones(5, 2);
  {
    INFO("Q (4, 3), K (5, 2): queries and keys of different d_k");
    CHECK_THROWS_AS(tiled_attention(Q, Matrix::Ones(5, 2), V), std::invalid_argument);
  }
  {
    INFO("K (5, 3), V (6, 2): one value row per key row");
    CHECK_THROWS_AS(tiled_attention(Q, K, Matrix::Ones(6, 2)), std::invalid_argument);
  }
  {
    INFO("block 0 and block -3");
    CHECK_THROWS_AS(tiled_attention(Q, K, V, false, 0), std::invalid_argument);
    CHECK_THROWS_AS(tiled_attention(Q, K, V, false, -3), std::invalid_argument);
  }
  {
    INFO("causal with seq_q 4, seq_k 5");
    CHECK_THROWS_AS(tiled_attention(Q, K, V, true, 2), std::invalid_argument);
  }
  {
    INFO("d_k 0: Q (4, 0), K (4, 0)");
    CHECK_THROWS_AS(tiled_attention(Matrix(4, 0), Matrix(4, 0), Matrix::Ones(4, 2)), std::invalid_argument);
  }
  {
    INFO("an inf in Q, a NaN in V: refused before any tile, not a NaN output");
    Matrix bad_Q = Q, bad_V = V;
    bad_Q(1, 2) = std::numeric_limits<float>::infinity();
    bad_V(3, 0) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(tiled_attention(bad_Q, K, V), std::invalid_argument);
    CHECK_THROWS_AS(tiled_attention(Q, K, bad_V), std::invalid_argument);
  }
  {
    // Finite inputs whose scores are not: 1e20 · 1e20 · 2 / sqrt(2) is
    // inf in float, and the output would be NaN. Found only once the
    // products are done, at the end.
    INFO("Q = K = (2, 2) of 1e20: scores too large for float, full, and causal with tiles of 1");
    const Matrix huge = Matrix::Constant(2, 2, 1e20f);
    CHECK_THROWS_AS(tiled_attention(huge, huge, Matrix::Ones(2, 2)), std::invalid_argument);
    CHECK_THROWS_AS(tiled_attention(huge, huge, Matrix::Ones(2, 2), true, 1), std::invalid_argument);
  }
}
