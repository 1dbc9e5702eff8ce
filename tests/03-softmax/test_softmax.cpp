// Hidden suite of chapter 3: softmax_rows, softmax_backward, attention,
// row_entropy, focus. Values come from PyTorch (tests/reference/ch03_softmax.py);
// the rest are hand-derived numbers and properties that hold for any input.
#include "03-softmax/softmax.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "01-qkv-projection/running_example.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/gradcheck.hpp"
#include "sa/text.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

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
  static const Fixtures f("03-softmax.txt");
  return f;
}

// Row sums of a float matrix, added in double so the test itself adds no
// rounding worth mentioning.
std::vector<double> row_sums(const Matrix& m) {
  std::vector<double> sums;
  for (int64_t i = 0; i < m.rows(); ++i) {
    double s = 0;
    for (int64_t j = 0; j < m.cols(); ++j) s += m(i, j);
    sums.push_back(s);
  }
  return sums;
}

// Every row sums to 1 within `tol`, and every entry is a finite number in [0, 1].
void require_distributions(const std::string& what, const Matrix& w, double tol) {
  for (int64_t i = 0; i < w.rows(); ++i)
    for (int64_t j = 0; j < w.cols(); ++j)
      if (!(w(i, j) >= 0.0f && w(i, j) <= 1.0f))
        FAIL(fmt::format("{}: entry [{}, {}] = {} is not a weight in [0, 1]", what, i, j, w(i, j)));
  const auto sums = row_sums(w);
  for (size_t i = 0; i < sums.size(); ++i)
    if (std::abs(sums[i] - 1.0) > tol)
      FAIL(fmt::format("{}: row {} sums to {:.9f}, not 1 (tolerance {:.0e})", what, i, sums[i], tol));
  SUCCEED();
}

// The softmax of one row in double precision: the yardstick the finite
// differences are taken on (independent of the code under test).
std::vector<double> softmax_double(const std::vector<double>& x) {
  double m = -INFINITY;
  for (double v : x) m = std::max(m, v);
  std::vector<double> p(x.size());
  double sum = 0;
  for (size_t j = 0; j < x.size(); ++j) sum += p[j] = std::exp(x[j] - m);
  for (double& v : p) v /= sum;
  return p;
}

// Row-wise softmax_double of a matrix, rounded to float: weights P for the
// backward tests that do not depend on the reader's softmax_rows.
Matrix softmax_reference(const Matrix& X) {
  Matrix P(X.rows(), X.cols());
  for (int64_t i = 0; i < X.rows(); ++i) {
    const auto p = softmax_double(std::vector<double>(X.row(i).data(), X.row(i).data() + X.cols()));
    for (int64_t j = 0; j < X.cols(); ++j) P(i, j) = float(p[size_t(j)]);
  }
  return P;
}

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace

// ===========================================================================
// softmax_rows
// ===========================================================================

TEST_CASE("softmax_rows: matches torch.softmax(x, dim=-1)", "[ch03][softmax_rows]") {
  // exp of order-1 values then one division: float32 results differ from
  // PyTorch's vectorised exp by a few ulps, far inside kFloat32.
  // (Each INFO names the call to come: a crash inside says which one.)
  {
    INFO("softmax_rows(X) (7 x 13, two rows with -inf)");
    require_close("softmax_rows(X) (7 x 13, two rows with -inf)", softmax_rows(fx().matrix("sm.X")),
                  fx().matrix("sm.P"), kFloat32);
  }
  {
    INFO("softmax_rows(X) (10 x 50, cross-attention shape)");
    require_close("softmax_rows(X) (10 x 50, cross-attention shape)", softmax_rows(fx().matrix("sm.cross.X")),
                  fx().matrix("sm.cross.P"), kFloat32);
  }
  INFO("softmax_rows(X) (logits of +-1e4 and +-1e30)");
  require_close("softmax_rows(X) (logits of +-1e4 and +-1e30)", softmax_rows(fx().matrix("sm.extreme.X")),
                fx().matrix("sm.extreme.P"), kFloat32);
}

TEST_CASE("softmax_rows: every row sums to 1", "[ch03][softmax_rows]") {
  // Each weight carries a relative rounding error of about 2^-24; a float32
  // sum of n <= 200 terms adds at most ~n * 2^-24 = 1.2e-5 in the very worst
  // case and ~sqrt(n) * 2^-24 = 1e-6 in practice. 2e-5 allows a float sum
  // and is still 10^4 times smaller than forgetting to normalise.
  Generator gen(11);
  for (auto [rows, cols, spread] : {std::tuple{6, 6, 1.0f}, std::tuple{10, 50, 3.0f}, std::tuple{4, 200, 10.0f},
                                    std::tuple{5, 1, 1.0f}, std::tuple{1, 2, 30.0f}}) {
    const Matrix X = gen.randn(rows, cols) * spread;
    const std::string call = fmt::format("softmax_rows of a ({}, {}) matrix", rows, cols);
    INFO(call);
    require_distributions(call, softmax_rows(X), 2e-5);
  }
}

TEST_CASE("softmax_rows: adding a constant to a row changes nothing", "[ch03][softmax_rows]") {
  // softmax(x + c) = softmax(x). Rounding x + c to float moves a logit by at
  // most half an ulp of |x + c| (3.8e-6 at 110), which moves a weight by
  // under 1e-5 relative: inside kFloat32. At c = 100 a softmax that skips
  // the max subtraction overflows (exp(110) > 3.4e38) and returns NaN.
  const Matrix X = Generator(12).randn(5, 11) * 3.0f;
  const Matrix P = [&] {
    INFO("softmax_rows(X (5, 11) from randn * 3)");
    return softmax_rows(X);
  }();
  for (float c : {-7.5f, 40.0f, 100.0f}) {
    const Matrix shifted = X.array() + c;
    INFO(fmt::format("softmax_rows(X + {}), X (5, 11) from randn * 3", c));
    require_close(fmt::format("softmax_rows(X + {})", c), softmax_rows(shifted), P, kFloat32);
  }
  // A different constant per row is still a constant within each row.
  Matrix per_row = X;
  for (int64_t i = 0; i < X.rows(); ++i) per_row.row(i).array() += float(20 * i - 30);
  INFO("softmax_rows(X (5, 11) + a different constant per row)");
  require_close("softmax_rows(X + a different constant per row)", softmax_rows(per_row), P, kFloat32);
}

TEST_CASE("softmax_rows: logits of +-1e4 and +-1e30 give finite one-hot or uniform rows", "[ch03][softmax_rows]") {
  Matrix X(5, 4);
  X << 1e4f, 0.0f, -1e4f, 5.0f,        // one logit far above the rest: one-hot
      1e30f, 1e30f, -1e30f, 0.0f,      // two equal giants: half and half
      -1e30f, -1e30f, -1e30f, -1e30f,  // all equal, however negative: uniform
      1e4f, 1e4f, 1e4f, 1e4f,          // all equal and large: uniform
      -1e4f, -9999.0f, -9998.0f, -9997.0f;  // only differences matter: softmax(0, 1, 2, 3)
  const Matrix P = [&] {
    INFO("softmax_rows of extreme logits (5, 4): +-1e4, +-1e30, equal giants");
    return softmax_rows(X);
  }();
  for (int64_t i = 0; i < P.size(); ++i)
    if (!std::isfinite(P.data()[i]))
      FAIL(fmt::format("softmax_rows of extreme logits (5, 4): entry [{}, {}] is {}, expected a finite weight",
                       i / P.cols(), i % P.cols(), P.data()[i]));
  // exp(-1e4) and exp(-2e30) are exactly 0 in float32 and exp(0) is exactly 1,
  // so these rows are exact up to the rounding of 1/3-style divisions.
  const double z = 1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  Matrix expected(5, 4);
  expected << 1, 0, 0, 0,  //
      0.5f, 0.5f, 0, 0,    //
      0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f,  //
      float(1 / z), float(std::exp(1.0) / z), float(std::exp(2.0) / z), float(std::exp(3.0) / z);
  require_close("softmax_rows of extreme logits", P, expected, kElementwise);
}

TEST_CASE("softmax_rows: a -inf entry gets exactly zero weight", "[ch03][softmax_rows]") {
  Matrix X(2, 4);
  X << 0.5f, -kInf, 1.5f, -0.25f,  //
      -kInf, 2.0f, -kInf, -kInf;
  INFO("softmax_rows([[0.5, -inf, 1.5, -0.25], [-inf, 2, -inf, -inf]])");
  const Matrix P = softmax_rows(X);
  require_shape("softmax_rows of a (2, 4) matrix", P, 2, 4);
  // Exactly 0, not merely small: chapter 5's masks rely on it.
  CHECK(P(0, 1) == 0.0f);
  CHECK(P(1, 0) == 0.0f);
  CHECK(P(1, 2) == 0.0f);
  CHECK(P(1, 3) == 0.0f);
  CHECK(P(1, 1) == 1.0f);
  // The others are the softmax of what is left, [0.5, 1.5, -0.25].
  const auto rest = softmax_double({0.5, 1.5, -0.25});
  Matrix expected(1, 3);
  expected << float(rest[0]), float(rest[1]), float(rest[2]);
  Matrix got(1, 3);
  got << P(0, 0), P(0, 2), P(0, 3);
  require_close("softmax_rows([0.5, -inf, 1.5, -0.25]) without the masked entry", got, expected, kElementwise);
}

TEST_CASE("softmax_rows: a row that is all -inf gives zeros, not NaN", "[ch03][softmax_rows]") {
  // The book's choice (PyTorch 1.13 returns NaN here): a query allowed to
  // see nothing attends to nothing.
  Matrix X(3, 4);
  X << 1.0f, 2.0f, 3.0f, 4.0f,  //
      -kInf, -kInf, -kInf, -kInf,  //
      0.0f, -kInf, 0.0f, -kInf;
  const Matrix P = [&] {
    INFO("softmax_rows of a (3, 4) matrix whose row 1 is all -inf");
    return softmax_rows(X);
  }();
  Matrix expected(3, 4);
  const auto first = softmax_double({1, 2, 3, 4});
  expected << float(first[0]), float(first[1]), float(first[2]), float(first[3]),  //
      0, 0, 0, 0,                                                                  //
      0.5f, 0, 0.5f, 0;
  require_close("softmax_rows of a (3, 4) matrix whose row 1 is all -inf", P, expected, kElementwise);
  Matrix one(1, 1);
  one << -kInf;
  INFO("softmax_rows([[-inf]])");
  require_close("softmax_rows([[-inf]])", softmax_rows(one), Matrix::Zero(1, 1), kBitExact);
}

TEST_CASE("softmax_rows: NaN and +inf are refused", "[ch03][softmax_rows]") {
  // (each X named: the three calls read alike in a message)
  Matrix X = Matrix::Zero(2, 3);
  X(1, 2) = kNaN;
  {
    INFO("X (2, 3) of zeros with X[1, 2] = NaN");
    CHECK_THROWS_AS(softmax_rows(X), std::invalid_argument);
  }
  X(1, 2) = kInf;
  {
    INFO("X (2, 3) of zeros with X[1, 2] = +inf");
    CHECK_THROWS_AS(softmax_rows(X), std::invalid_argument);
  }
  X(1, 2) = 0.0f;
  X(0, 0) = kNaN;
  X(0, 1) = -kInf;  // a NaN hidden among masked entries is still a NaN
  {
    INFO("X (2, 3) of zeros with X[0, 0] = NaN beside X[0, 1] = -inf");
    CHECK_THROWS_AS(softmax_rows(X), std::invalid_argument);
  }
}

// ===========================================================================
// softmax_backward
// ===========================================================================

TEST_CASE("softmax_backward: matches PyTorch autograd", "[ch03][softmax_backward]") {
  // dX = autograd.grad((softmax(X) * dY).sum(), X). One dot product of at
  // most 50 terms per row: float32 rounding far inside kFloat32.
  {
    INFO("softmax_backward(P, dY) (6 x 9)");
    require_close("softmax_backward(P, dY) (6 x 9)", softmax_backward(fx().matrix("bw.P"), fx().matrix("bw.dY")),
                  fx().matrix("bw.dX"), kFloat32);
  }
  INFO("softmax_backward(P, dY) (10 x 50)");
  require_close("softmax_backward(P, dY) (10 x 50)",
                softmax_backward(fx().matrix("bw.cross.P"), fx().matrix("bw.cross.dY")), fx().matrix("bw.cross.dX"),
                kFloat32);
}

TEST_CASE("softmax_backward: agrees with central finite differences", "[ch03][softmax_backward]") {
  // L(X) = sum_ij dY_ij softmax(X)_ij; dL/dX_ij by central differences on a
  // double-precision softmax, step h = 1e-5: truncation ~h^2 = 1e-10,
  // rounding ~1e-16 / h = 1e-11. The code under test gets P rounded to
  // float (relative error 6e-8), so kFloat32 (1e-5 + 1e-4 |dX|) is 100 times
  // above its honest error, while the entries of dX are ~0.1: a wrong sign,
  // a factor 2, or summing over columns instead of rows (the matrix is 4 x 7)
  // misses by orders of magnitude more.
  Generator gen(13);
  const Matrix X = gen.randn(4, 7) * 1.5f;
  const Matrix dY = gen.randn(4, 7);
  const Matrix P = softmax_reference(X);
  Matrix expected(4, 7);
  const double h = 1e-5;
  for (int64_t i = 0; i < X.rows(); ++i) {
    const std::vector<double> x(X.row(i).data(), X.row(i).data() + X.cols());
    auto loss = [&](const std::vector<double>& xs) {
      const auto q = softmax_double(xs);
      double L = 0;
      for (int64_t k = 0; k < X.cols(); ++k) L += double(dY(i, k)) * q[size_t(k)];
      return L;
    };
    auto moved = x;
    for (int64_t j = 0; j < X.cols(); ++j)
      expected(i, j) = float(central_difference(moved[size_t(j)], h, [&] { return loss(moved); }));
  }
  REQUIRE(expected.cwiseAbs().maxCoeff() > 0.05f);  // the yardstick itself is not trivially small
  INFO("softmax_backward(P (4, 7), dY (4, 7)) of X from randn * 1.5");
  require_close("softmax_backward(P (4, 7), dY (4, 7)) vs central differences", softmax_backward(P, dY), expected,
                kFloat32);
}

TEST_CASE("softmax_backward: hand-derived properties", "[ch03][softmax_backward]") {
  // Adding a constant to a row's logits changes nothing, so the gradient
  // along (1, ..., 1) is zero: every row of dX sums to 0.
  Generator gen(14);
  const Matrix P = softmax_reference(gen.randn(5, 8) * 2.0f);
  const Matrix dY = gen.randn(5, 8);
  const Matrix dX = [&] {
    INFO("softmax_backward(P (5, 8), dY (5, 8))");
    return softmax_backward(P, dY);
  }();
  require_shape("softmax_backward(P (5, 8), dY (5, 8))", dX, 5, 8);
  {
    INFO("softmax_backward(P (5, 8), dY (5, 8)): largest |dX| " << dX.cwiseAbs().maxCoeff()
                                                                << ", expected above 0.01 (not all zeros)");
    REQUIRE(dX.cwiseAbs().maxCoeff() > 0.01f);
  }
  const auto sums = row_sums(dX);
  for (size_t i = 0; i < sums.size(); ++i)
    if (!(std::abs(sums[i]) < 1e-6))
      FAIL_CHECK(fmt::format("softmax_backward(P (5, 8), dY (5, 8)): row {} of dX sums to {:.9g}, expected 0 "
                             "(tolerance 1e-6)",
                             i, sums[i]));
  // A saturated (one-hot) row passes no gradient at all: p_j is 0 or 1, so
  // p_j (dy_j - <p, dy>) is exactly 0. This is the vanishing gradient of
  // unscaled attention.
  Matrix one_hot = Matrix::Zero(2, 4);
  one_hot(0, 2) = 1.0f;
  one_hot(1, 0) = 1.0f;
  {
    INFO("softmax_backward(P (2, 4) of one-hot rows, dY (2, 4))");
      require_close("softmax_backward(P (2, 4) of one-hot rows, dY (2, 4))",
                  softmax_backward(one_hot, gen.randn(2, 4)), Matrix::Zero(2, 4), kBitExact);
  }
  // Uniform p = 1/n: dx = (dy - mean(dy)) / n.
  Matrix uniform = Matrix::Constant(1, 4, 0.25f), dy(1, 4), expected(1, 4);
  dy << 1.0f, -2.0f, 0.5f, 4.5f;  // mean 1
  expected << 0.0f, -0.75f, -0.125f, 0.875f;
  INFO("softmax_backward(P = (0.25, 0.25, 0.25, 0.25), dY = (1, -2, 0.5, 4.5))");
  require_close("softmax_backward(P = (0.25, 0.25, 0.25, 0.25), dY = (1, -2, 0.5, 4.5))", softmax_backward(uniform, dy),
                expected, kElementwise);
}

// ===========================================================================
// attention
// ===========================================================================

TEST_CASE("attention: the running example matches PyTorch from the seed on", "[ch03][attention]") {
  // The chapter program's path: chapter 1 builds Q, K, V from seed 42.
  Generator gen(42);
  const QKV qkv = make_running_example(gen, tokenize("the cat sat on the mat"), 64, 64).qkv;

  const Attention a = [&] {
    INFO("attention(Q, K, V (6, 64)) of the running example");
    return attention(qkv.Q, qkv.K, qkv.V);
  }();
  require_shape("attention(Q, K, V).weights", a.weights, 6, 6);
  require_shape("attention(Q, K, V).output", a.output, 6, 64);
  // Scores of ~10 from 64-term float32 sums, then softmax and a 6-term
  // weighted average: differences from PyTorch stay near 1e-6.
  require_close("attention(Q, K, V (6, 64)).weights of the running example", a.weights, fx().matrix("run.weights"),
                kFloat32);
  require_close("attention(Q, K, V (6, 64)).output of the running example", a.output, fx().matrix("run.output"),
                kFloat32);
}

TEST_CASE("attention: cross-attention, 10 queries over 50 keys, d_v != d_k", "[ch03][attention]") {
  const std::string call =
      fmt::format("attention(Q {}, K {}, V {})", shape_str(fx().matrix("att.cross.Q")),
                  shape_str(fx().matrix("att.cross.K")), shape_str(fx().matrix("att.cross.V")));
  const Attention a = [&] {
    INFO(call << ", cross-attention");
    return attention(fx().matrix("att.cross.Q"), fx().matrix("att.cross.K"), fx().matrix("att.cross.V"));
  }();
  require_shape("weights (seq_q, seq_k)", a.weights, 10, 50);
  require_shape("output (seq_q, d_v)", a.output, 10, 24);
  require_close(call + ".weights", a.weights, fx().matrix("att.cross.weights"), kFloat32);
  require_close(call + ".output", a.output, fx().matrix("att.cross.output"), kFloat32);
  require_distributions(call + ".weights", a.weights, 2e-5);
}

TEST_CASE("attention: a batch of 3, one batch entry at a time", "[ch03][attention]") {
  const int64_t batch = fx().shape("att.batch.Q")[0];
  REQUIRE(batch == 3);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string call =
        fmt::format("attention(Q {}, K {}, V {}) of batch entry {} of 3", shape_str(fx().matrix("att.batch.Q", b)),
                    shape_str(fx().matrix("att.batch.K", b)), shape_str(fx().matrix("att.batch.V", b)), b);
    const Attention a = [&] {
      INFO(call);
      return attention(fx().matrix("att.batch.Q", b), fx().matrix("att.batch.K", b), fx().matrix("att.batch.V", b));
    }();
    require_close(call + ".weights", a.weights, fx().matrix("att.batch.weights", b), kFloat32);
    require_close(call + ".output", a.output, fx().matrix("att.batch.output", b), kFloat32);
  }
}

TEST_CASE("attention: identical keys give uniform weights and the mean of V", "[ch03][attention]") {
  // Every key the same: every score in a row is the same, softmax is 1/seq_k
  // everywhere, and the output is the plain average of the value rows.
  Generator gen(15);
  const Matrix Q = gen.randn(3, 4);
  const Matrix K = gen.randn(1, 4).replicate(5, 1);
  const Matrix V = gen.randn(5, 2);
  const Attention a = [&] {
    INFO("attention(Q (3, 4), K (5, 4) all rows equal, V (5, 2))");
    return attention(Q, K, V);
  }();
  require_close("attention(Q (3, 4), K (5, 4) all rows equal, V (5, 2)).weights", a.weights,
                Matrix::Constant(3, 5, 0.2f), kElementwise);
  const Matrix mean = V.colwise().mean().replicate(3, 1);
  require_close("attention(Q (3, 4), K (5, 4) all rows equal, V (5, 2)).output", a.output, mean, kFloat32);
}

// ===========================================================================
// row_entropy
// ===========================================================================

TEST_CASE("row_entropy: hand-derived values", "[ch03][row_entropy]") {
  // Uniform over n keys: log n; one-hot: 0 (with 0 log 0 = 0, so no NaN).
  // Float inputs such as 1/6 carry a relative error of 3e-8, so 1e-6 is ample.
  for (int64_t n : {1, 2, 6, 50}) {
    INFO("row_entropy of 2 rows uniform over " << n << (n == 1 ? " key" : " keys"));
    const auto H = row_entropy(Matrix::Constant(2, n, 1.0f / float(n)));
    INFO("row_entropy of 2 rows uniform over " << n << (n == 1 ? " key" : " keys") << ": expected log " << n
                                               << " = " << std::log(double(n)) << " each");
    REQUIRE(H.size() == 2);
    CHECK(H[0] == Approx(std::log(double(n))).margin(1e-6));
    CHECK(H[1] == Approx(std::log(double(n))).margin(1e-6));
  }
  Matrix W(4, 4);
  W << 0, 0, 1, 0,              // one-hot
      0.5f, 0.5f, 0, 0,         // two equal keys: log 2
      0.25f, 0.25f, 0.5f, 0,    // 1.5 log 2
      0, 0, 0, 0;               // an all-masked row from softmax_rows: nothing to spread
  const auto H = [&] {
    INFO("row_entropy of rows (0, 0, 1, 0), (0.5, 0.5, 0, 0), (0.25, 0.25, 0.5, 0), (0, 0, 0, 0) (W (4, 4))");
    return row_entropy(W);
  }();
  INFO("row_entropy of rows (0, 0, 1, 0), (0.5, 0.5, 0, 0), (0.25, 0.25, 0.5, 0), (0, 0, 0, 0): expected 0, log 2, "
       "1.5 log 2, 0");
  REQUIRE(H.size() == 4);
  for (size_t i = 0; i < H.size(); ++i) {
    INFO(fmt::format("row {}: entropy {}", i, H[i]));
    REQUIRE(std::isfinite(H[i]));
  }
  CHECK(H[0] == 0.0);
  CHECK(H[1] == Approx(std::log(2.0)).margin(1e-7));
  CHECK(H[2] == Approx(1.5 * std::log(2.0)).margin(1e-7));
  CHECK(H[3] == 0.0);
}

TEST_CASE("row_entropy: matches PyTorch (torch.special.entr summed)", "[ch03][row_entropy]") {
  // Sums of at most 12 terms of order 1: kFloat32.
  {
    INFO("row_entropy(running example weights (6, 6))");
    require_close("row_entropy(running example weights)", to_float(row_entropy(fx().matrix("run.weights"))),
                  fx().f32("run.entropy"), kFloat32);
  }
  const Matrix W = fx().matrix("metrics.W");
  const auto H = [&] {
    INFO("row_entropy(weights with exact zeros, W " << shape_str(W) << ")");
    return row_entropy(W);
  }();
  require_close("row_entropy(weights with exact zeros)", to_float(H), fx().f32("metrics.entropy"), kFloat32);
  // Always between 0 (one-hot) and log n (uniform).
  for (size_t i = 0; i < H.size(); ++i) {
    INFO(fmt::format("row_entropy(W {}) row {}: got {:.9g}, expected a value in [0, log {} = {:.6f}]", shape_str(W), i,
                     H[i], W.cols(), std::log(double(W.cols()))));
    CHECK((H[i] >= 0.0 && H[i] <= std::log(double(W.cols())) + 1e-6));
  }
}

// ===========================================================================
// focus
// ===========================================================================

TEST_CASE("focus: hand-derived values", "[ch03][focus]") {
  // float32 weights such as 0.7f are 0.7 within 3e-8: 1e-7 is their rounding.
  for (int64_t n : {1, 3, 6, 50}) {
    const std::string call = fmt::format("focus of 4 rows uniform over {} {}", n, n == 1 ? "key" : "keys");
    INFO(call);  // (a crash inside names its input)
    check_close(call, focus(Matrix::Constant(4, n, 1.0f / float(n))), 1.0 / double(n), {1e-7, 0.0});
  }
  Matrix one_hot = Matrix::Zero(3, 5);
  one_hot(0, 4) = one_hot(1, 0) = one_hot(2, 2) = 1.0f;
  {
    INFO("focus of 3 one-hot rows");
    check_close("focus of 3 one-hot rows", focus(one_hot), 1.0, kBitExact);
  }
  Matrix W(2, 3);
  W << 0.7f, 0.2f, 0.1f,  //
      0.25f, 0.25f, 0.5f;
  {
    INFO("focus of rows (0.7, 0.2, 0.1) and (0.25, 0.25, 0.5)");
    check_close("focus of rows (0.7, 0.2, 0.1) and (0.25, 0.25, 0.5)", focus(W), 0.6, {1e-7, 0.0});  // (0.7 + 0.5) / 2
  }
  Matrix masked(2, 3);
  masked << 1, 0, 0,  //
      0, 0, 0;        // an all-masked row counts with its largest weight, 0
  INFO("focus of rows (1, 0, 0) and (0, 0, 0) (fully masked)");
  check_close("focus of rows (1, 0, 0) and (0, 0, 0) (fully masked)", focus(masked), 0.5, {1e-7, 0.0});
}

TEST_CASE("focus: matches PyTorch (max over keys, mean over queries)", "[ch03][focus]") {
  // A mean of at most 8 maxima: no arithmetic worth a tolerance beyond kFloat32.
  const double run = [&] {
    INFO("focus of the running example's weights (6, 6)");
    return focus(fx().matrix("run.weights"));
  }();
  {
    INFO("focus of the running example's weights (6, 6): expected " << fx().scalar("run.focus"));
    CHECK(run == Approx(fx().scalar("run.focus")).epsilon(1e-4).margin(1e-5));
  }
  const double metrics = [&] {
    INFO("focus(W " << shape_str(fx().matrix("metrics.W")) << "), weights with exact zeros");
    return focus(fx().matrix("metrics.W"));
  }();
  {
    INFO("focus(W " << shape_str(fx().matrix("metrics.W")) << "): expected " << fx().scalar("metrics.focus"));
    CHECK(metrics == Approx(fx().scalar("metrics.focus")).epsilon(1e-4).margin(1e-5));
  }
  // Between 1/n (uniform) and 1 (one-hot).
  INFO("focus of the running example's weights (6 keys): " << run);
  CHECK((run >= 1.0 / 6.0 && run <= 1.0));
}

TEST_CASE("softmax_backward: P and dP of different shapes are refused", "[ch03][softmax_backward]") {
  const Matrix P = [&] {
    INFO("softmax_rows(X (3, 4) of zeros), the P of this test");
    return softmax_rows(Matrix::Zero(3, 4));
  }();
  CHECK_REFUSES("softmax_backward(P (3, 4), dP (3, 5))", softmax_backward(P, Matrix::Ones(3, 5)),
                std::invalid_argument);
  CHECK_REFUSES("softmax_backward(P (3, 4), dP (4, 4))", softmax_backward(P, Matrix::Ones(4, 4)),
                std::invalid_argument);
}

TEST_CASE("attention: K and V of different lengths, or Q and K of different d_k, are refused", "[ch03][attention]") {
  CHECK_REFUSES("attention(Q (2, 4), K (5, 4), V (6, 3)): 5 keys, 6 values",
                attention(Matrix::Ones(2, 4), Matrix::Ones(5, 4), Matrix::Ones(6, 3)), std::invalid_argument);
  CHECK_REFUSES("attention(Q (2, 4), K (5, 3), V (5, 3)): d_k 4 against 3",
                attention(Matrix::Ones(2, 4), Matrix::Ones(5, 3), Matrix::Ones(5, 3)), std::invalid_argument);
}

TEST_CASE("focus: weights with no rows or no columns are refused", "[ch03][focus]") {
  CHECK_REFUSES("focus(weights (0, 4)): no rows", focus(Matrix(0, 4)), std::invalid_argument);
  CHECK_REFUSES("focus(weights (3, 0)): no columns", focus(Matrix(3, 0)), std::invalid_argument);
}
