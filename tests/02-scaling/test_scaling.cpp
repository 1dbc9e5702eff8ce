// Hidden suite of chapter 2: scaled_scores, dot_product_stats.
// Values come from PyTorch (tests/reference/ch02_scaling.py), from hand
// derivations, and from the statistics the chapter is about.
#include "02-scaling/scaling.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "01-qkv-projection/running_example.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("02-scaling.txt");
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------
// scaled_scores

TEST_CASE("scaled_scores: hand-derived 2 x 3 example", "[ch02][scaled_scores]") {
  // Q is the identity, so Q Kᵀ is just Kᵀ: row i of the scores is column i
  // of K. d_k = 2, so every score is divided by sqrt(2).
  Matrix Q(2, 2), K(3, 2);
  Q << 1, 0,  //
      0, 1;
  K << 1, 1,   //
      2, -1,   //
      0, 3;
  const float r = float(1.0 / std::sqrt(2.0));
  Matrix expected(2, 3);
  expected << 1 * r, 2 * r, 0,  //
      1 * r, -1 * r, 3 * r;
  // One product of exact small integers, then one division: a few ulps.
  INFO("scaled_scores(Q = I (2, 2), K (3, 2))");  // (a crash inside names its input)
  require_close("scaled_scores(Q = I (2, 2), K (3, 2))", scaled_scores(Q, K), expected, kElementwise);
}

TEST_CASE("scaled_scores: the running example matches PyTorch", "[ch02][scaled_scores]") {
  // The chapter program's path: chapter 1's Q and K of "the cat sat on the
  // mat" (seed 42, d_model 64, d_k 64), then the scores divided by 8.
  Generator gen(42);
  const QKV qkv = make_running_example(gen, tokenize("the cat sat on the mat"), 64, 64).qkv;
  // 64-term float32 sums in another order than PyTorch's, then an exact
  // division by 8: kFloat32.
  INFO("scaled_scores(Q (6, 64), K (6, 64)) of the running example");
  require_close("scaled_scores(Q (6, 64), K (6, 64)) of the running example", scaled_scores(qkv.Q, qkv.K),
                fx().matrix("run.scaled"), kFloat32);
}

TEST_CASE("scaled_scores: cross-attention, 10 queries x 50 keys", "[ch02][scaled_scores]") {
  const Matrix Q = fx().matrix("cross.Q"), K = fx().matrix("cross.K");
  const Matrix scores = [&] {
    INFO("scaled_scores(Q (10, 16), K (50, 16))");
    return scaled_scores(Q, K);
  }();
  // One row per query, one column per key: (10, 50), not (10, 10) or (50, 50).
  require_shape("scaled_scores((10, 16), (50, 16))", scores, 10, 50);
  require_close("scaled_scores((10, 16), (50, 16))", scores, fx().matrix("cross.scaled"), kFloat32);
  // And the other way round: keys as queries give the transpose.
  INFO("scaled_scores(K (50, 16) as the queries, Q (10, 16) as the keys)");
  require_close("scaled_scores(K (50, 16), Q (10, 16))", scaled_scores(K, Q),
                Matrix(fx().matrix("cross.scaled").transpose()), kFloat32);
}

TEST_CASE("scaled_scores: every entry of a batch of 3", "[ch02][scaled_scores]") {
  // (3, 7, 32) queries and (3, 5, 32) keys: batch entries are independent
  // problems, so a (B, S, D) tensor is B calls on (S, D) matrices.
  // sqrt(32) is not exact in float32; PyTorch and the book both round it once.
  REQUIRE(fx().shape("batch.scaled") == Shape{3, 7, 5});
  for (int64_t b = 0; b < 3; ++b) {
    const Matrix Q = fx().matrix("batch.Q", b), K = fx().matrix("batch.K", b);
    const std::string call =
        fmt::format("scaled_scores(Q {}, K {}) of batch entry {} of 3", shape_str(Q), shape_str(K), b);
    INFO(call);
    const Matrix scores = scaled_scores(Q, K);
    require_close(call, scores, fx().matrix("batch.scaled", b), kFloat32);
  }
}

TEST_CASE("scaled_scores: d_k = 1 divides by sqrt(1) = 1", "[ch02][scaled_scores]") {
  // Each score is the product of two numbers: one float multiplication.
  INFO("scaled_scores(Q (4, 1), K (3, 1)), d_k 1");
  require_close("scaled_scores((4, 1), (3, 1))", scaled_scores(fx().matrix("dk1.Q"), fx().matrix("dk1.K")),
                fx().matrix("dk1.scaled"), kElementwise);
}

TEST_CASE("scaled_scores: queries and keys of different d_k, or of d_k 0, are refused", "[ch02][scaled_scores]") {
  CHECK_REFUSES("scaled_scores(Q (2, 3), K (2, 4)): d_k 3 against 4",
                scaled_scores(Matrix::Ones(2, 3), Matrix::Ones(2, 4)), std::invalid_argument);
  CHECK_REFUSES("scaled_scores(Q (5, 8), K (5, 16)): d_k 8 against 16",
                scaled_scores(Matrix::Ones(5, 8), Matrix::Ones(5, 16)), std::invalid_argument);
  // d_k = 0: every score would be 0 / sqrt(0) = NaN.
  CHECK_REFUSES("scaled_scores(Q (3, 0), K (4, 0)): d_k 0", scaled_scores(Matrix(3, 0), Matrix(4, 0)),
                std::invalid_argument);
  // Different numbers of rows are fine (cross-attention).
  INFO("scaled_scores(Q (1, 4), K (9, 4)): 1 query, 9 keys");
  require_shape("scaled_scores((1, 4), (9, 4))", scaled_scores(Matrix::Ones(1, 4), Matrix::Ones(9, 4)), 1, 9);
}

// ---------------------------------------------------------------------------
// dot_product_stats

namespace {

std::vector<float> as_floats(const DotStats& s) {
  return {float(s.mean), float(s.variance), float(s.scaled_mean), float(s.scaled_variance)};
}

}  // namespace

TEST_CASE("dot_product_stats: the same draws and numbers as PyTorch", "[ch02][dot_product_stats]") {
  // torch.manual_seed(seed); q = torch.randn(n, d_k); k = torch.randn(n, d_k)
  // dots = (q * k).sum(-1): [dots.mean(), dots.var(), scaled mean, scaled var].
  //
  // Tolerance. The book sums in double, PyTorch in float32; the two differ by
  // float32 rounding of each dot product (relative ~1e-7 of its size,
  // sqrt(d_k)), and torch.var then works in double. Measured on these five
  // cases: at most 5e-8 of a standard deviation for the means and 8e-8
  // relative for the variances, mostly the fixture's own float32 rounding.
  // We allow 1e-5 (atol in units of the spread sqrt(d_k) for the means, rtol
  // for the variances): over 100 times that, so a different summation order
  // passes, yet far below what other draws (a change of order 1/sqrt(n),
  // several %) or the biased variance (a factor (n-1)/n: 2% at n = 50, 50% at
  // n = 2) would move.
  struct Case {
    uint64_t seed;
    int64_t d_k, samples;
  };
  for (const Case c : {Case{3, 4, 50}, Case{4, 64, 1000}, Case{5, 512, 200}, Case{6, 1, 2}, Case{7, 10, 17}}) {
    Generator gen(c.seed);
    const std::string what = fmt::format("dot_product_stats(Generator({}), d_k {}, {} samples)", c.seed, c.d_k,
                                         c.samples);
    const DotStats stats = [&] {
      INFO(what);
      return dot_product_stats(gen, c.d_k, c.samples);
    }();
    const auto& expected = fx().f32(fmt::format("stats.{}.{}.{}", c.seed, c.d_k, c.samples));
    const auto actual = as_floats(stats);
    const double spread = std::sqrt(double(c.d_k));
    // (one-value vectors named as such: g++ 14 finds {x} as ambiguous between
    // a vector and a Matrix)
    using Values = std::vector<float>;
    require_close(what + ": mean of q.k", Values{actual[0]}, Values{expected[0]}, {1e-5 * spread, 0});
    require_close(what + ": variance of q.k", Values{actual[1]}, Values{expected[1]}, {0, 1e-5});
    require_close(what + ": mean of q.k/sqrt(d_k)", Values{actual[2]}, Values{expected[2]}, {1e-5, 0});
    require_close(what + ": variance of q.k/sqrt(d_k)", Values{actual[3]}, Values{expected[3]}, {0, 1e-5});
  }
}

TEST_CASE("dot_product_stats: the variance of q.k is d_k, scaled it is 1", "[ch02][dot_product_stats]") {
  // The chapter's claim, measured. With n samples, an unbiased variance of
  // q.k has relative standard error
  //     sqrt(2 / (n - 1) + 6 / (n d_k))
  // (2/(n-1) is the Gaussian part; 6/(n d_k) comes from the heavier tails
  // of a product q_i k_i, whose fourth moment is 9, not 3). The mean has
  // standard error sqrt(d_k / n). We allow 5 standard errors: a correct
  // implementation falls outside with probability below 1e-6, while
  // forgetting the scaling, or a variance off by a factor 2, lands dozens of
  // standard errors away.
  const int64_t n = 20000;
  Generator gen(2024);
  for (const int64_t d_k : {int64_t(4), int64_t(32), int64_t(256)}) {
    const DotStats s = [&] {
      INFO(fmt::format("dot_product_stats(gen of seed 2024, d_k {}, {} samples)", d_k, n));
      return dot_product_stats(gen, d_k, n);
    }();
    const double rel_se = std::sqrt(2.0 / double(n - 1) + 6.0 / (double(n) * double(d_k)));
    const double mean_se = std::sqrt(double(d_k) / double(n));
    INFO(fmt::format("dot_product_stats(gen of seed 2024, d_k {}, {} samples): mean {:.4f}, variance {:.3f}, "
                     "scaled mean {:.4f}, scaled variance {:.4f}",
                     d_k, n, s.mean, s.variance, s.scaled_mean, s.scaled_variance));
    {
      INFO(fmt::format("expected variance / d_k within 5 standard errors ({:.4f}) of 1, got {:.4f}", 5 * rel_se,
                       s.variance / double(d_k)));
      CHECK(std::abs(s.variance / double(d_k) - 1.0) <= 5 * rel_se);
    }
    {
      INFO(fmt::format("expected the scaled variance within {:.4f} of 1, got {:.4f}", 5 * rel_se, s.scaled_variance));
      CHECK(std::abs(s.scaled_variance - 1.0) <= 5 * rel_se);
    }
    {
      INFO(fmt::format("expected the mean within {:.4f} of 0, got {:.4f}", 5 * mean_se, s.mean));
      CHECK(std::abs(s.mean) <= 5 * mean_se);
    }
    {
      INFO(fmt::format("expected the scaled mean within {:.4f} of 0, got {:.4f}", 5 / std::sqrt(double(n)),
                       s.scaled_mean));
      CHECK(std::abs(s.scaled_mean) <= 5 / std::sqrt(double(n)));
    }
    // Scaling each sample by 1/sqrt(d_k) scales the variance by 1/d_k
    // exactly (up to double rounding).
    {
      INFO(fmt::format("expected scaled variance = variance / d_k = {:.9g}, got {:.9g}", s.variance / double(d_k),
                       s.scaled_variance));
      CHECK(s.scaled_variance == Approx(s.variance / double(d_k)).epsilon(1e-12));
    }
    {
      INFO(fmt::format("expected scaled mean = mean / sqrt(d_k) = {:.9g}, got {:.9g}",
                       s.mean / std::sqrt(double(d_k)), s.scaled_mean));
      CHECK(s.scaled_mean == Approx(s.mean / std::sqrt(double(d_k))).epsilon(1e-12).margin(1e-15));
    }
  }
}

TEST_CASE("dot_product_stats: d_k < 1 and fewer than 2 samples are refused", "[ch02][dot_product_stats]") {
  Generator gen(0);
  CHECK_THROWS_AS(dot_product_stats(gen, 0, 100), std::invalid_argument);
  CHECK_THROWS_AS(dot_product_stats(gen, -4, 100), std::invalid_argument);
  CHECK_THROWS_AS(dot_product_stats(gen, 8, 1), std::invalid_argument);
  CHECK_THROWS_AS(dot_product_stats(gen, 8, -5), std::invalid_argument);
  // Two samples are enough for an unbiased variance: (a - b)² / 2.
  const DotStats two = [&] {
    INFO("dot_product_stats(gen, d_k 8, 2 samples)");
    return dot_product_stats(gen, 8, 2);
  }();
  {
    INFO("dot_product_stats(gen, d_k 8, 2 samples): expected a finite variance >= 0, got " << two.variance);
    CHECK(std::isfinite(two.variance));
    CHECK(two.variance >= 0);
  }
}
