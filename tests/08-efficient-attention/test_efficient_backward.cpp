// Hidden suite of chapter 8, part 2: tiled_attention_backward. Values come
// from PyTorch autograd (tests/reference/ch08_efficient_attention.py, float64
// rounded once) and from central finite differences of a double-precision
// attention; the rest are identities every gradient of attention satisfies.
// The forward each test hands the backward (O and lse) is the fixture's or
// the double reference's, never the reader's tiled_attention: these tests
// point at the backward alone.
#include "08-efficient-attention/efficient.hpp"

#include "sa/rng.hpp"
#include "sa/gradcheck.hpp"
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

const Fixtures& fx() {
  static const Fixtures f("08-efficient-attention.txt");
  return f;
}

// The forward of a fixture: output and lse as tiled_attention returns them.
TiledAttention fixture_forward(const std::string& prefix) {
  const Matrix lse = fx().matrix(prefix + ".lse");
  return TiledAttention{fx().matrix(prefix + ".output"), ColVector(lse.transpose())};
}

// Attention in double, from the definition: the yardstick of the finite
// differences and the forward of the tiny cases.
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct ForwardD {
  MatrixD O;
  std::vector<double> lse;
};

ForwardD attention_double(const MatrixD& Q, const MatrixD& K, const MatrixD& V, bool is_causal) {
  ForwardD f{MatrixD::Zero(Q.rows(), V.cols()), std::vector<double>(size_t(Q.rows()))};
  const double scale = 1.0 / std::sqrt(double(Q.cols()));
  for (int64_t i = 0; i < Q.rows(); ++i) {
    const int64_t seen = is_causal ? i + 1 : K.rows();
    std::vector<double> s(static_cast<size_t>(seen));
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < seen; ++j) m = std::max(m, s[size_t(j)] = Q.row(i).dot(K.row(j)) * scale);
    for (double& x : s) sum += x = std::exp(x - m);
    for (int64_t j = 0; j < seen; ++j) f.O.row(i) += (s[size_t(j)] / sum) * V.row(j);
    f.lse[size_t(i)] = m + std::log(sum);
  }
  return f;
}

// Column sums in double: the test adds no rounding worth mentioning.
std::vector<double> column_sums(const Matrix& m) {
  std::vector<double> sums(size_t(m.cols()), 0.0);
  for (int64_t i = 0; i < m.rows(); ++i)
    for (int64_t j = 0; j < m.cols(); ++j) sums[size_t(j)] += m(i, j);
  return sums;
}

}  // namespace

// Gradients are sums over up to 45 keys of P (dP - D) times rows of K or Q,
// with P rebuilt by exp(S - lse) in float32: their honest error against the
// float64 reference is a few 1e-7 on entries of order 0.1-1 (measured: under
// 3% of kFloat32 for every block size). A gradient without the D term, with
// dK built from P instead of dS, without the 1/sqrt(d_k), with P not
// normalised by lse or with the diagonal tile mis-masked is off by 1e-1 or
// more.

TEST_CASE("tiled_attention_backward: matches PyTorch autograd, causal 37 x 37, every block size",
          "[ch08][tiled_attention_backward]") {
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.self.K"), V = fx().matrix("tiled.self.V");
  const TiledAttention fwd = fixture_forward("tiled.self.causal");
  const Matrix dO = fx().matrix("bw.causal.dO");
  for (int64_t block : {1, 3, 5, 8, 16, 37, 64}) {
    const std::string input = fmt::format("(seq 37, d_k 16, d_v 8, causal, block {})", block);
    INFO("tiled_attention_backward" << input);
    const AttentionGrads g = tiled_attention_backward(Q, K, V, fwd, dO, true, block);
    require_close("dQ " + input, g.dQ, fx().matrix("bw.causal.dQ"), kFloat32);
    require_close("dK " + input, g.dK, fx().matrix("bw.causal.dK"), kFloat32);
    require_close("dV " + input, g.dV, fx().matrix("bw.causal.dV"), kFloat32);
  }
}

TEST_CASE("tiled_attention_backward: matches PyTorch autograd, 37 queries over 45 keys, every block size",
          "[ch08][tiled_attention_backward]") {
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.cross.K"), V = fx().matrix("tiled.cross.V");
  const TiledAttention fwd = fixture_forward("tiled.cross");
  const Matrix dO = fx().matrix("bw.cross.dO");
  for (int64_t block : {1, 4, 7, 16, 44, 45, 128}) {
    const std::string input = fmt::format("(seq_q 37, seq_k 45, d_k 16, d_v 8, not causal, block {})", block);
    INFO("tiled_attention_backward" << input);
    const AttentionGrads g = tiled_attention_backward(Q, K, V, fwd, dO, false, block);
    require_close("dQ " + input, g.dQ, fx().matrix("bw.cross.dQ"), kFloat32);
    require_close("dK " + input, g.dK, fx().matrix("bw.cross.dK"), kFloat32);
    require_close("dV " + input, g.dV, fx().matrix("bw.cross.dV"), kFloat32);
  }
  // The default block (128: one tile).
  const AttentionGrads g = tiled_attention_backward(Q, K, V, fwd, dO);
  require_close("dQ (default causal = false, block = 128)", g.dQ, fx().matrix("bw.cross.dQ"), kFloat32);
  require_close("dK (default causal = false, block = 128)", g.dK, fx().matrix("bw.cross.dK"), kFloat32);
  require_close("dV (default causal = false, block = 128)", g.dV, fx().matrix("bw.cross.dV"), kFloat32);
}

TEST_CASE("tiled_attention_backward: agrees with central finite differences in double",
          "[ch08][tiled_attention_backward]") {
  // L(Q, K, V) = Σ O ∘ R for a fixed random R, so dL/dO = R = dO. Each
  // partial derivative by central differences on attention_double, step
  // h = 1e-5: truncation ~h² = 1e-10, cancellation ~1e-16 / h = 1e-11. The
  // code under test gets Q, K, V, O, lse rounded to float (relative 6e-8),
  // so kFloat32 is about 100 times its honest error, while the gradients
  // are of order 0.1-1.
  Generator gen(806);
  for (auto [seq_q, seq_k, d_k, d_v, is_causal, block] :
       {std::tuple{5, 7, 4, 3, false, 2}, std::tuple{5, 7, 4, 3, false, 3}, std::tuple{6, 6, 4, 3, true, 4},
        std::tuple{6, 6, 4, 3, true, 1}}) {
    INFO(fmt::format("tiled_attention_backward(seq_q {}, seq_k {}, d_k {}, d_v {}, {}, block {})", seq_q, seq_k, d_k,
                     d_v, is_causal ? "causal" : "not causal", block));
    const Matrix Q = gen.randn(seq_q, d_k) * 1.5f, K = gen.randn(seq_k, d_k), V = gen.randn(seq_k, d_v);
    const Matrix R = gen.randn(seq_q, d_v);
    const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), Rd = R.cast<double>();
    const ForwardD f = attention_double(Qd, Kd, Vd, is_causal);
    TiledAttention fwd{f.O.cast<float>(), ColVector(seq_q)};
    for (int64_t i = 0; i < seq_q; ++i) fwd.lse(i) = float(f.lse[size_t(i)]);

    const AttentionGrads g = tiled_attention_backward(Q, K, V, fwd, R, is_causal, block);

    const double h = 1e-5;
    const bool causal = is_causal;  // (clang 14 cannot capture a structured binding in a lambda)
    auto loss = [&](const MatrixD& q, const MatrixD& k, const MatrixD& v) {
      return attention_double(q, k, v, causal).O.cwiseProduct(Rd).sum();
    };
    // which: 0 = Q, 1 = K, 2 = V.
    auto numeric = [&](int which) {
      MatrixD args[3] = {Qd, Kd, Vd};
      MatrixD& x = args[which];
      Matrix grad(x.rows(), x.cols());
      for (int64_t r = 0; r < x.rows(); ++r)
        for (int64_t c = 0; c < x.cols(); ++c)
          grad(r, c) = float(central_difference(x(r, c), h, [&] { return loss(args[0], args[1], args[2]); }));
      return grad;
    };
    const std::string input = fmt::format("(seq_q {}, seq_k {}, d_k {}, d_v {}, {}, block {})", seq_q, seq_k, d_k,
                                          d_v, is_causal ? "causal" : "not causal", block);
    const Matrix dQ = numeric(0), dK = numeric(1), dV = numeric(2);
    {
      INFO("the finite differences themselves are not trivially small " << input);
      REQUIRE(dQ.cwiseAbs().maxCoeff() > 0.05f);
      REQUIRE(dK.cwiseAbs().maxCoeff() > 0.05f);
    }
    require_close("dQ vs finite differences " + input, g.dQ, dQ, kFloat32);
    require_close("dK vs finite differences " + input, g.dK, dK, kFloat32);
    require_close("dV vs finite differences " + input, g.dV, dV, kFloat32);
  }
}

TEST_CASE("tiled_attention_backward: the sum of dV is the sum of dO, the sum of dK is 0",
          "[ch08][tiled_attention_backward]") {
  // Every row of weights sums to 1, so Σ_j dV_j = Σ_j Σ_i P_ij dO_i = Σ_i dO_i.
  // Adding one vector to every key adds a constant to each row of scores and
  // changes nothing, so Σ_j dK_j = 0 (each row of dS sums to 0, which is the
  // D term's job). Sums of 37 or 45 float32 entries of order 1, added in
  // double: 1e-4 is 20 times their rounding; dropping D moves Σ dK by ~1.
  struct Case {
    const char* name;
    const char* K;
    const char* V;
    const char* fwd;
    const char* dO;
    bool is_causal;
  };
  for (const Case& c : {Case{"causal 37 x 37", "tiled.self.K", "tiled.self.V", "tiled.self.causal", "bw.causal.dO", true},
                        Case{"37 x 45", "tiled.cross.K", "tiled.cross.V", "tiled.cross", "bw.cross.dO", false}}) {
    const Matrix dO = fx().matrix(c.dO);
    for (int64_t block : {4, 16}) {
      INFO("tiled_attention_backward, " << c.name << ", block " << block);
      const AttentionGrads g = tiled_attention_backward(fx().matrix("tiled.self.Q"), fx().matrix(c.K),
                                                        fx().matrix(c.V), fixture_forward(c.fwd), dO, c.is_causal, block);
      const auto sum_dV = column_sums(g.dV), sum_dO = column_sums(dO), sum_dK = column_sums(g.dK);
      for (size_t k = 0; k < sum_dV.size(); ++k)
        check_close(fmt::format("{} block {}: column {} of Σ_j dV_j vs Σ_i dO_i", c.name, block, k), sum_dV[k],
                    sum_dO[k], Tolerance{1e-4, 0.0});
      for (size_t k = 0; k < sum_dK.size(); ++k)
        check_close(fmt::format("{} block {}: column {} of Σ_j dK_j", c.name, block, k), sum_dK[k], 0.0,
                    Tolerance{1e-4, 0.0});
    }
  }
}

TEST_CASE("tiled_attention_backward: queries that saw no key pass no gradient, never NaN",
          "[ch08][tiled_attention_backward]") {
  // seq_k = 0: tiled_attention's output is 0 and its lse -inf. dQ is 0
  // (exp(S - lse) must not become exp(-inf + inf) = NaN); dK and dV have no
  // rows.
  const Matrix Q = Generator(807).randn(3, 4), dO = Generator(808).randn(3, 2);
  const TiledAttention fwd{Matrix::Zero(3, 2), ColVector::Constant(3, -kInf)};
  const AttentionGrads g = tiled_attention_backward(Q, Matrix(0, 4), Matrix(0, 2), fwd, dO, false, 2);
  require_close("dQ (seq_q 3, seq_k 0)", g.dQ, Matrix::Zero(3, 4), kBitExact);
  require_shape("dK (seq_k 0, d_k 4)", g.dK, 0, 4);
  require_shape("dV (seq_k 0, d_v 2)", g.dV, 0, 2);
}

TEST_CASE("tiled_attention_backward: shapes that do not fit are refused", "[ch08][tiled_attention_backward]") {
  const Matrix Q = Matrix::Ones(4, 3), K = Matrix::Ones(5, 3), V = Matrix::Ones(5, 2), dO = Matrix::Ones(4, 2);
  const TiledAttention fwd{Matrix::Constant(4, 2, 1.0f), ColVector::Constant(4, std::log(5.0f))};
  {
    INFO("Q (4, 3), K (5, 2): different d_k");
    CHECK_THROWS_AS(tiled_attention_backward(Q, Matrix::Ones(5, 2), V, fwd, dO), std::invalid_argument);
  }
  {
    INFO("K (5, 3), V (6, 2): different seq_k");
    CHECK_THROWS_AS(tiled_attention_backward(Q, K, Matrix::Ones(6, 2), fwd, dO), std::invalid_argument);
  }
  {
    INFO("block 0");
    CHECK_THROWS_AS(tiled_attention_backward(Q, K, V, fwd, dO, false, 0), std::invalid_argument);
  }
  {
    INFO("causal with seq_q 4, seq_k 5");
    CHECK_THROWS_AS(tiled_attention_backward(Q, K, V, fwd, dO, true, 2), std::invalid_argument);
  }
  // One call per check, so that a failure names the input that was not refused.
  CHECK_REFUSES("tiled_attention_backward(Q (4, 3), K, V, fwd, dO (4, 3)): dO must be (4, 2), the output's shape",
                tiled_attention_backward(Q, K, V, fwd, Matrix::Ones(4, 3)), std::invalid_argument);
  CHECK_REFUSES("tiled_attention_backward(Q (4, 3), K, V, fwd, dO (3, 2)): dO must be (4, 2), the output's shape",
                tiled_attention_backward(Q, K, V, fwd, Matrix::Ones(3, 2)), std::invalid_argument);
  const TiledAttention short_output{Matrix::Ones(3, 2), fwd.lse};
  CHECK_REFUSES("tiled_attention_backward with the forward's output (3, 2), expected (4, 2)",
                tiled_attention_backward(Q, K, V, short_output, dO), std::invalid_argument);
  const TiledAttention wide_output{Matrix::Ones(4, 5), fwd.lse};
  CHECK_REFUSES("tiled_attention_backward with the forward's output (4, 5), expected (4, 2)",
                tiled_attention_backward(Q, K, V, wide_output, dO), std::invalid_argument);
  // What the forward refuses, the backward refuses too: NaN gradients
  // otherwise (d_k 0 makes the scale 1/sqrt(0) infinite).
  Matrix bad_Q = Q, bad_V = V;
  bad_Q(1, 2) = std::numeric_limits<float>::infinity();
  bad_V(3, 0) = std::numeric_limits<float>::quiet_NaN();
  CHECK_REFUSES("tiled_attention_backward(Q (4, 3) with inf at [1, 2], K, V, fwd, dO)",
                tiled_attention_backward(bad_Q, K, V, fwd, dO), std::invalid_argument);
  CHECK_REFUSES("tiled_attention_backward(Q, K, V (5, 2) with NaN at [3, 0], fwd, dO)",
                tiled_attention_backward(Q, K, bad_V, fwd, dO), std::invalid_argument);
  CHECK_REFUSES("tiled_attention_backward(Q (4, 0), K (5, 0), V, fwd, dO): d_k 0",
                tiled_attention_backward(Matrix(4, 0), Matrix(5, 0), V, fwd, dO), std::invalid_argument);
  {
    INFO("the forward's lse with 3 values, expected 4");
    const TiledAttention short_lse{fwd.output, ColVector::Zero(3)};
    CHECK_THROWS_AS(tiled_attention_backward(Q, K, V, short_lse, dO), std::invalid_argument);
  }
  // The same shapes, all fitting, pass: the refusals above are about shapes.
  CHECK_NOTHROW(tiled_attention_backward(Q, K, V, fwd, dO));
}
