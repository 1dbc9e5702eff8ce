// Hidden suite of chapter 6: dropout, dropout_backward.
// Values come from PyTorch 1.13's F.dropout on the CPU
// (tests/reference/ch06_dropout.py): same seed, same keep mask, bit for bit.
#include "06-dropout/dropout.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "03-softmax/softmax.hpp"
#include "01-qkv-projection/running_example.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/gradcheck.hpp"
#include "sa/text.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("06-dropout.txt");
  return f;
}

// Masks compare exactly; a failure names the first differing element and
// how many differ.
void require_same_mask(const std::string& what, const Mask& actual, const Mask& expected) {
  require_shape(what, Shape{actual.rows(), actual.cols()}, Shape{expected.rows(), expected.cols()});
  int64_t differ = 0;
  std::string first;
  for (int64_t i = 0; i < actual.rows(); ++i)
    for (int64_t j = 0; j < actual.cols(); ++j)
      if (actual(i, j) != expected(i, j) && differ++ == 0)
        first = fmt::format("[{}, {}]: got {}, PyTorch {}", i, j, actual(i, j) ? "kept" : "dropped",
                            expected(i, j) ? "kept" : "dropped");
  // One sentence that names the input, the count and the first difference.
  if (differ > 0)
    FAIL(fmt::format("{}: {} of {} elements differ from PyTorch's mask, the first at {}", what, differ,
                     actual.size(), first));
  SUCCEED();
}

int64_t count_kept(const Mask& keep) { return keep.cast<int64_t>().sum(); }

bool all_finite(const Matrix& m) { return m.allFinite(); }

struct SeedCase {
  const char* name;
  uint64_t seed;
  double p;  // the Python literal, as a double
};
// The same table as tests/reference/ch06_dropout.py.
const std::vector<SeedCase> kSeedCases{{"a", 0, 0.1},  {"b", 1, 0.5}, {"c", 2, 0.25},          {"d", 3, 0.15},
                                       {"e", 4, 0.9}, {"f", 5, 0.3}, {"g", 2024, 0.123456789}, {"h", 6, 0.45}};

}  // namespace

// ---- dropout -----------------------------------------------------------------

TEST_CASE("dropout: the keep mask and output match F.dropout for the same seed", "[ch06][dropout]") {
  for (const SeedCase& c : kSeedCases) {
    const std::string prefix = fmt::format("seed.{}", c.name);
    const auto& config = fx().i64(prefix + ".config");
    REQUIRE(uint64_t(config[0]) == c.seed);            // the table above and the script agree
    REQUIRE(fx().scalar(prefix + ".p") == float(c.p));
    const Matrix x = fx().matrix(prefix + ".x");
    Generator gen(c.seed);
    const std::string what = fmt::format("dropout(x {}, p = {}) with seed {}", shape_str(x), c.p, c.seed);
    INFO(what);  // (a crash inside names its input)
    const DropoutResult r = dropout(x, c.p, gen);
    // The mask is decided by the random draws alone: bit for bit.
    require_same_mask(what + ", its mask keep", r.keep, fx().mask(prefix + ".keep"));
    // x * (1.0f / float(1 - p)), one float multiplication rounded like PyTorch's.
    require_close(what + ", its output", r.output, fx().matrix(prefix + ".y"), kBitExact);
  }
}

TEST_CASE("dropout: a second call continues the stream where the first stopped", "[ch06][dropout]") {
  const Matrix x = fx().matrix("twice.x");
  Generator gen(77);
  gen.rand(x.rows(), x.cols());  // PyTorch drew x from this seed first
  const std::string call = fmt::format("dropout(x {}, p = 0.4) with seed 77", shape_str(x));
  const DropoutResult first = [&] {
    INFO("first " + call);
    return dropout(x, 0.4, gen);
  }();
  const DropoutResult second = [&] {
    INFO("second " + call + " on the same generator");
    return dropout(x, 0.4, gen);
  }();
  require_same_mask("first " + call, first.keep, fx().mask("twice.keep1"));
  require_same_mask("second " + call + " on the same generator", second.keep, fx().mask("twice.keep2"));
}

TEST_CASE("dropout: the running example's weights, straight after the parameters", "[ch06][dropout]") {
  // Chapter 3's weights, rebuilt from seed 42 with chapters 1 and 3, then one
  // dropout with p = 0.1 on the same generator, as the chapter program does.
  Generator gen(42);
  const QKV qkv = make_running_example(gen, tokenize("the cat sat on the mat"), 64, 64).qkv;
  const Matrix weights = attention(qkv.Q, qkv.K, qkv.V).weights;
  const DropoutResult r = [&] {
    INFO("dropout(weights (6, 6), p = 0.1) of the running example");
    return dropout(weights, 0.1, gen);
  }();
  // The weights go through softmax and matrix products: kFloat32. The mask
  // depends only on the draws: bit for bit.
  require_close("attention weights (6, 6) of the running example", weights, fx().matrix("run.weights"), kFloat32);
  require_same_mask("dropout(weights (6, 6), p = 0.1) of the running example, its mask keep", r.keep, fx().mask("run.keep"));
  require_close("dropout(weights (6, 6), p = 0.1) of the running example: output", r.output,
                fx().matrix("run.dropped"), kFloat32);
}

TEST_CASE("dropout: the output is x * keep / (1 - p) with the mask it returns", "[ch06][dropout]") {
  Generator data(3);
  const Matrix x = data.randn(9, 11);
  for (double p : {0.2, 0.5, 0.75}) {
    Generator gen(5);
    INFO(fmt::format("dropout(x (9, 11) from randn, p = {}) with seed 5", p));
    const DropoutResult r = dropout(x, p, gen);
    require_shape(fmt::format("dropout(x (9, 11), p = {}).output", p), r.output, 9, 11);
    require_shape(fmt::format("dropout(x (9, 11), p = {}).keep", p), Shape{r.keep.rows(), r.keep.cols()},
                  Shape{9, 11});
    const float scale = 1.0f / float(1.0 - p);
    Matrix expected = Matrix::Zero(9, 11);
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t j = 0; j < 11; ++j)
        if (r.keep(i, j)) expected(i, j) = x(i, j) * scale;
    // One float multiplication per survivor; the mask is the function's own.
    require_close(fmt::format("dropout(x (9, 11), p = {}).output against x * keep * {}", p, scale), r.output, expected,
                  kBitExact);
  }
}

TEST_CASE("dropout: p = 0 is the identity, bit for bit, and draws nothing", "[ch06][dropout]") {
  const Matrix x = fx().matrix("seed.d.x");
  Generator gen(8);
  const Matrix drawn = gen.rand(4, 4);  // as in the script: x3 = torch.rand(4, 4) + 0.5
  const DropoutResult r = [&] {
    INFO("dropout(x " << shape_str(x) << ", p = 0)");
    return dropout(x, 0.0, gen);
  }();
  require_close(fmt::format("dropout(x {}, p = 0).output", shape_str(x)), r.output, x, kBitExact);
  // x is (7, 13): a mask made (cols, rows) would still be all true, so its
  // shape is checked with its entries.
  require_mask(fmt::format("dropout(x {}, p = 0).keep, every element kept", shape_str(x)), r.keep,
               Mask::Constant(x.rows(), x.cols(), true));
  // PyTorch returns its input without touching the generator: the next
  // numbers are the ones that follow torch.rand(4, 4).
  {
    INFO("dropout(x (4, 4), p = 1)");
    (void)dropout(drawn, 1.0, gen);
  }
  const Matrix next = gen.rand(1, 6);
  require_close("torch.rand(6) after dropout(x (7, 13), p = 0) and dropout(x (4, 4), p = 1), which draw nothing",
                std::vector<float>(next.data(), next.data() + 6), fx().f32("nodraw.rand"), kBitExact);
}

TEST_CASE("dropout: p = 1 gives zeros, never NaN or inf", "[ch06][dropout]") {
  Matrix x = fx().matrix("seed.f.x");
  x(0, 0) = 1e30f;  // a huge value times 1 / (1 - 1) = inf would be inf or NaN
  Generator gen(1);
  const DropoutResult r = [&] {
    INFO("dropout(x " << shape_str(x) << " with x[0, 0] = 1e30, p = 1)");
    return dropout(x, 1.0, gen);
  }();
  require_shape(fmt::format("dropout(x {}, p = 1).output", shape_str(x)), r.output, x.rows(), x.cols());
  if (!all_finite(r.output))
    FAIL_CHECK(fmt::format("dropout(x {}, p = 1) with x[0, 0] = 1e30: output[0, 0] is {}, expected 0 (a scale of "
                           "1 / (1 - 1) makes inf or NaN)",
                           shape_str(x), r.output(0, 0)));
  require_close(fmt::format("dropout(x {}, p = 1).output", shape_str(x)), r.output, Matrix::Zero(x.rows(), x.cols()),
                kBitExact);
  require_mask(fmt::format("dropout(x {}, p = 1).keep, nothing kept", shape_str(x)), r.keep,
               Mask::Constant(x.rows(), x.cols(), false));
  // Not square, so that a mask of the transposed shape shows.
  const Matrix wide = Matrix::Ones(2, 5);
  const DropoutResult w = [&] {
    INFO("dropout(ones (2, 5), p = 1)");
    return dropout(wide, 1.0, gen);
  }();
  require_close("dropout(ones (2, 5), p = 1).output", w.output, Matrix::Zero(2, 5), kBitExact);
  require_mask("dropout(ones (2, 5), p = 1).keep, nothing kept", w.keep, Mask::Constant(2, 5, false));
}

TEST_CASE("dropout: p outside [0, 1] is refused", "[ch06][dropout]") {
  const Matrix x = Matrix::Ones(3, 3);
  Generator gen(1);
  const std::vector<std::pair<double, const char*>> bad = {
      {1.5, "1.5"}, {-0.1, "-0.1"}, {std::numeric_limits<double>::quiet_NaN(), "NaN"}, {1.0000001, "1.0000001"}};
  for (const auto& [p, name] : bad) {
    INFO("dropout(x (3, 3), p = " << name << ") must refuse p outside [0, 1] with std::invalid_argument");
    CHECK_THROWS_AS(dropout(x, p, gen), std::invalid_argument);
  }
}

TEST_CASE("dropout: the kept fraction is within 5 binomial sigmas of 1 - p", "[ch06][dropout]") {
  // Each of the n elements is kept independently with probability 1 - p, so
  // the number kept is Binomial(n, 1 - p): mean n (1 - p), standard
  // deviation sqrt(n p (1 - p)). For n = 10000 and p = 0.5 that is 5000 +- 50;
  // 5 sigmas (a chance of about 6e-7 for a correct implementation) is a
  // fraction of +-0.025, while dropping with probability 1 - p instead of p,
  // or one draw per row, misses by far more.
  const Matrix x = Matrix::Ones(100, 100);
  const double n = double(x.size());
  for (double p : {0.05, 0.1, 0.3, 0.5, 0.9}) {
    Generator gen(7);
    const DropoutResult r = [&] {
      INFO(fmt::format("dropout(ones (100, 100), p = {}) with seed 7", p));
      return dropout(x, p, gen);
    }();
    const double kept = double(count_kept(r.keep));
    const double sigma = std::sqrt(n * p * (1 - p));
    INFO(fmt::format("dropout(ones (100, 100), p = {}): kept {} of {}, expected {} +- 5 x {:.1f}", p, kept, n,
                     n * (1 - p), sigma));
    CHECK(std::abs(kept - n * (1 - p)) <= 5 * sigma);
    // Every kept element carries the same scaled value (1/(1-p) rounded to
    // float), every dropped one 0; summed in double the total is exact.
    INFO(fmt::format("dropout(ones (100, 100), p = {}): sum of the output {:.9g}, expected kept x 1/(1-p) = "
                     "{} x {:.9g}",
                     p, r.output.cast<double>().sum(), kept, double(1.0f / float(1.0 - p))));
    CHECK(r.output.cast<double>().sum() == kept * double(1.0f / float(1.0 - p)));
  }
}

TEST_CASE("dropout: averaged over many draws the output approaches x (E[output] = x)", "[ch06][dropout]") {
  // One element's output is x / (1 - p) with probability 1 - p, else 0: mean
  // x, variance x^2 p / (1 - p). The mean of n independent draws therefore
  // has standard deviation |x| sqrt(p / ((1 - p) n)), 0.0046 |x| for p = 0.3
  // and n = 20000. We allow 5 of those per element (plus 1e-6 for float
  // sums). Forgetting the 1/(1-p) scale misses by 0.3 |x|, 65 sigmas.
  Generator data(12);
  const Matrix x = data.rand(6, 6);
  const double p = 0.3;
  const int n = 20000;
  Generator gen(11);
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(6, 6);
  {
    INFO("dropout(x (6, 6) from rand, p = 0.3), drawn 20000 times from seed 11");
    for (int k = 0; k < n; ++k) sum += dropout(x, p, gen).output.cast<double>();
  }
  const Eigen::MatrixXd mean = sum / n;
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const double sd = std::abs(x(i, j)) * std::sqrt(p / ((1 - p) * n));
      INFO(fmt::format("dropout(x (6, 6), p = 0.3) element [{}, {}]: mean of {} draws {:.6f}, expected x = {:.6f} "
                       "within 5 sigma = {:.6f}",
                       i, j, n, mean(i, j), x(i, j), 5 * sd));
      CHECK(std::abs(mean(i, j) - x(i, j)) <= 5 * sd + 1e-6);
    }
}

// ---- dropout_backward ----------------------------------------------------------

TEST_CASE("dropout_backward: matches PyTorch autograd for the forward's mask", "[ch06][dropout_backward]") {
  // x.grad of F.dropout(x, 0.42) for an upstream gradient d_out: one float
  // multiplication per kept element, like the forward: bit for bit. (At
  // p = 0.42, float(1 / (1 - p)) is one ulp off PyTorch's 1.0f / float(1 - p).)
  const Matrix d_x = [&] {
    INFO("dropout_backward(d_out " << shape_str(fx().matrix("bw.d_out")) << ", keep of the forward, p = 0.42)");
    return dropout_backward(fx().matrix("bw.d_out"), fx().mask("bw.keep"), 0.42);
  }();
  require_close(fmt::format("dropout_backward(d_out {}, keep, p = 0.42)", shape_str(fx().matrix("bw.d_out"))), d_x,
                fx().matrix("bw.d_x"), kBitExact);
}

TEST_CASE("dropout_backward: a given mask is applied as PyTorch applies its own", "[ch06][dropout_backward]") {
  // With its mask fixed, dropout is the linear map x -> x * keep / (1 - p),
  // and its backward is the same map applied to the gradient. PyTorch
  // computes it as x * (keep / (1 - p)) in float32: bit for bit.
  const Matrix y = [&] {
    INFO("dropout_backward(x " << shape_str(fx().matrix("fixed.x")) << ", a hand-made keep, p = 0.48)");
    return dropout_backward(fx().matrix("fixed.x"), fx().mask("fixed.keep"), 0.48);
  }();
  require_close(fmt::format("dropout_backward(x {}, a hand-made keep, p = 0.48) = x * keep / (1 - 0.48)",
                            shape_str(fx().matrix("fixed.x"))),
                y, fx().matrix("fixed.y"), kBitExact);
}

TEST_CASE("dropout_backward: zero exactly where the forward dropped, 1/(1-p) elsewhere", "[ch06][dropout_backward]") {
  Generator data(21);
  const Matrix x = data.randn(12, 10);
  const double p = 0.4;
  Generator gen(22);
  const Mask keep = [&] {
    INFO("dropout(x (12, 10) from randn, p = 0.4) with seed 22, the forward whose keep this test uses");
    return dropout(x, p, gen).keep;
  }();
  const Matrix ones = Matrix::Ones(12, 10);
  const Matrix d_x = [&] {
    INFO("dropout_backward(ones (12, 10), keep, p = 0.4)");
    return dropout_backward(ones, keep, p);
  }();
  const float scale = 1.0f / float(1.0 - p);
  int64_t mismatched_entries = 0;
  std::string first;  // the first entry that differs, in words
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 10; ++j) {
      const float expected = keep(i, j) ? scale : 0.0f;
      if (d_x(i, j) == expected) continue;
      if (mismatched_entries++ == 0)
        first = fmt::format("; the first at [{}, {}], {} in the forward: got {}, expected {}", i, j,
                            keep(i, j) ? "kept" : "dropped", d_x(i, j), expected);
    }
  if (mismatched_entries > 0)
    FAIL_CHECK(fmt::format("dropout_backward(ones (12, 10), keep, p = 0.4): {} of 120 gradient entries are not "
                           "keep ? 1/(1-p) = {} : 0{}",
                           mismatched_entries, scale, first));
  // And for a general upstream gradient.
  const Matrix g = data.randn(12, 10);
  INFO("dropout_backward(g (12, 10), keep, p = 0.4)");
  require_close("dropout_backward(g (12, 10), keep, p = 0.4)", dropout_backward(g, keep, p),
                Matrix(g.cwiseProduct(keep.cast<float>()) * scale), kBitExact);
}

TEST_CASE("dropout_backward: agrees with central finite differences, the mask held fixed", "[ch06][dropout_backward]") {
  // L(x) = sum(G * dropout(x)). Re-seeding replays the same mask, so L is
  // linear in x and (L(x + h e) - L(x - h e)) / 2h is exact up to the float
  // rounding of the one output that moves: about 1e-7 / (2h) = 5e-6 for h = 0.01.
  Generator data(31);
  const Matrix x = data.rand(5, 6);
  const Matrix G = data.randn(5, 6);
  const double p = 0.25;
  const uint64_t seed = 32;
  auto loss = [&](const Matrix& at) {
    Generator gen(seed);
    return dropout(at, p, gen).output.cast<double>().cwiseProduct(G.cast<double>()).sum();
  };
  Generator gen(seed);
  const DropoutResult r = [&] {
    INFO("dropout(x (5, 6) from rand, p = 0.25) with seed 32");
    return dropout(x, p, gen);
  }();
  const Matrix d_x = [&] {
    INFO("dropout_backward(G (5, 6), keep, p = 0.25)");
    return dropout_backward(G, r.keep, p);
  }();
  const float h = 0.01f;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      Matrix moved = x;
      const double numeric = [&] {
        INFO(fmt::format("dropout(x (5, 6) with x[{}, {}] moved by +-0.01, p = 0.25) with seed 32, for finite "
                         "differences",
                         i, j));
        return central_difference(moved(i, j), h, [&] { return loss(moved); });
      }();
      check_close(fmt::format("dropout_backward(G (5, 6), keep, p = 0.25): d_x[{}, {}] ({}) against finite "
                              "differences",
                              i, j, r.keep(i, j) ? "kept" : "dropped"),
                  d_x(i, j), numeric, Tolerance{1e-4, 0.0});
    }
}

TEST_CASE("dropout_backward: p = 0, p = 1, and bad input", "[ch06][dropout_backward]") {
  Generator data(41);
  const Matrix g = data.randn(4, 7);
  const Mask all = Mask::Constant(4, 7, true);
  {
    INFO("dropout_backward(g (4, 7), all kept, p = 0)");
    require_close("dropout_backward(g (4, 7), all kept, p = 0)", dropout_backward(g, all, 0.0), g, kBitExact);
  }
  const Matrix d_x = [&] {
    INFO("dropout_backward(g (4, 7), none kept, p = 1)");
    return dropout_backward(g, Mask::Constant(4, 7, false), 1.0);
  }();
  require_close("dropout_backward(g (4, 7), none kept, p = 1)", d_x, Matrix::Zero(4, 7), kBitExact);
  // p = 1 gives zeros even for a mask that claims survivors: no 1 / 0.
  const Matrix d_none = [&] {
    INFO("dropout_backward(g (4, 7), a mask of all true, p = 1)");
    return dropout_backward(g, all, 1.0);
  }();
  require_close("dropout_backward(g (4, 7), a mask of all true, p = 1): zeros, not inf or NaN (no 1 / 0)", d_none,
                Matrix::Zero(4, 7), kBitExact);
  // (NaN passes `p < 0 || p > 1`, and would make every kept gradient NaN)
  const std::vector<std::pair<double, const char*>> bad = {
      {1.5, "1.5"}, {-0.5, "-0.5"}, {std::numeric_limits<double>::quiet_NaN(), "NaN"}};
  for (const auto& [p, name] : bad) {
    INFO("dropout_backward(g (4, 7), mask (4, 7), p = " << name << ") must refuse p outside [0, 1]");
    CHECK_THROWS_AS(dropout_backward(g, all, p), std::invalid_argument);
  }
  INFO("dropout_backward(g (4, 7), a mask of shape (7, 4), p = 0.5) must refuse a mask of another shape than g");
  CHECK_THROWS_AS(dropout_backward(g, Mask::Constant(7, 4, true), 0.5), std::invalid_argument);
}
