// Hidden suite of chapter 9, part 2: sampling_probs and sample_token.
// Probabilities come from nanoGPT's generate run by PyTorch, tokens from
// torch.multinomial after torch.manual_seed (tests/reference/ch09_gpt.py,
// which also checks that no draw there is a near tie, so a probability that
// differs in its last bit cannot change a token: tokens compare exactly).
#include "09-gpt/gpt.hpp"

#include "sa/rng.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("09-gpt.txt");
  return f;
}

RowVector row(const Matrix& m) { return m.row(0); }

// The first index where two token lists differ, and both tokens, or "".
std::string first_difference(const std::vector<int64_t>& got, const std::vector<int64_t>& expected) {
  if (got.size() != expected.size()) return fmt::format("{} tokens, expected {}", got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected[i])
      return fmt::format("draw {} (0-based) picked token {}, expected {} ({})", i, got[i], expected[i],
                         i == 0 ? "the very first draw" : "the earlier draws agree");
  return "";
}

}  // namespace

// One division per logit, then softmax over 65 entries, against PyTorch's
// float32: kFloat32 (a sum of 65 terms in another order). A temperature
// applied after the softmax, or a top-k that keeps k + 1, moves some
// probability by more than 1e-3.

TEST_CASE("sampling_probs: equals nanoGPT's logits / T, top-k, softmax for each temperature and k",
          "[ch09][sampling_probs]") {
  const RowVector logits = row(fx().matrix("probs.logits"));
  const std::vector<std::pair<double, int64_t>> cases = {{1.0, 65}, {0.5, 65}, {1.7, 65},
                                                         {0.8, 10}, {1.0, 1},  {2.0, 5}};
  for (const auto& [temperature, k] : cases) {
    const std::string name = fmt::format("probs.t{}.k{}", temperature, k);
    const std::string call =
        fmt::format("sampling_probs(probs.logits (1, 65), temperature {}, top_k {})", temperature, k);
    INFO(call);  // names the input should the call crash or throw
    const RowVector got = sampling_probs(logits, temperature, k);
    require_close(call, Matrix(got), fx().matrix(name), kFloat32);
  }
}

TEST_CASE("sampling_probs: top-k keeps every logit tied with the k-th largest", "[ch09][sampling_probs]") {
  // Logits (1, 3, 3, 2, 3, 0, -1): with k = 2 the 2nd largest is 3, tied
  // three times, so three tokens stay (nanoGPT: logits < v[-1] are hidden);
  // with k = 4 the 4th largest is 2: four tokens stay.
  const RowVector tied = row(fx().matrix("probs.tied.logits"));
  {
    INFO("sampling_probs((1, 3, 3, 2, 3, 0, -1), temperature 1, top_k 2)");  // (a crash inside names its input)
    require_close("sampling_probs((1, 3, 3, 2, 3, 0, -1), temperature 1, top_k 2)",
                  Matrix(sampling_probs(tied, 1.0, 2)), fx().matrix("probs.tied.k2"), kFloat32);
  }
  INFO("sampling_probs((1, 3, 3, 2, 3, 0, -1), temperature 1, top_k 4)");
  require_close("sampling_probs((1, 3, 3, 2, 3, 0, -1), temperature 1, top_k 4)", Matrix(sampling_probs(tied, 1.0, 4)),
                fx().matrix("probs.tied.k4"), kFloat32);
}

TEST_CASE("sampling_probs: top_k = 1 puts all the mass on the largest logit, and a hidden token gets exactly 0",
          "[ch09][sampling_probs]") {
  RowVector logits(5);
  logits << 0.5f, 2.0f, -1.0f, 1.9f, 0.0f;
  const RowVector p = [&] {
    INFO("sampling_probs((0.5, 2, -1, 1.9, 0), temperature 0.7, top_k 1)");
    return sampling_probs(logits, 0.7, 1);
  }();
  require_shape("sampling_probs((0.5, 2, -1, 1.9, 0), 0.7, top_k 1)", Matrix(p), 1, 5);
  for (int64_t i = 0; i < 5; ++i)
    check_close(fmt::format("sampling_probs((0.5, 2, -1, 1.9, 0), 0.7, top_k 1)[{}]", i), p(i), i == 1 ? 1.0 : 0.0,
                kBitExact);
  const RowVector p3 = [&] {
    INFO("sampling_probs((0.5, 2, -1, 1.9, 0), temperature 1, top_k 3)");
    return sampling_probs(logits, 1.0, 3);
  }();
  require_shape("sampling_probs((0.5, 2, -1, 1.9, 0), 1, top_k 3)", Matrix(p3), 1, 5);
  for (int64_t i : {2, 4})
    check_close(fmt::format("sampling_probs((0.5, 2, -1, 1.9, 0), 1, top_k 3)[{}], outside the top 3", i), p3(i), 0.0,
                kBitExact);
  // Hidden means -inf, not a large negative number: logits below -1e9 are
  // finite floats, and a token hidden with -1e9 would rise above the one kept
  // (nanoGPT writes -float('Inf')).
  RowVector low(2);
  low << -2e9f, -3e9f;
  const RowVector p_low = [&] {
    INFO("sampling_probs((-2e9, -3e9), temperature 1, top_k 1)");
    return sampling_probs(low, 1.0, 1);
  }();
  for (int64_t i = 0; i < 2; ++i)
    check_close(fmt::format("sampling_probs((-2e9, -3e9), 1, top_k 1)[{}]{}", i, i == 0 ? "" : ", hidden"), p_low(i),
                i == 0 ? 1.0 : 0.0, kBitExact);
}

TEST_CASE("sampling_probs: large logits or a low temperature do not overflow exp", "[ch09][sampling_probs]") {
  // exp overflows float above 88.7: softmax must subtract the largest scaled
  // logit first (chapter 3), or these give inf / inf = NaN. Expected by hand:
  // the scaled logits are x / T, and softmax depends only on their differences.
  struct Case {
    std::vector<float> logits;
    double temperature;
  };
  const std::vector<Case> cases = {{{100.0f, 99.0f, 97.0f, -5.0f}, 1.0},  // differences 0, -1, -3, -105
                                   {{9.0f, 8.9f, 8.5f, 0.0f}, 0.05}};      // scaled 180, 178, 170, 0
  for (const Case& c : cases) {
    const int64_t n = int64_t(c.logits.size());
    RowVector logits(n);
    for (int64_t i = 0; i < n; ++i) logits(i) = c.logits[size_t(i)];
    const std::string call = fmt::format("sampling_probs(({}), temperature {}, top_k {})",
                                         fmt::join(c.logits, ", "), c.temperature, n);
    INFO(call);
    const double top = c.logits[0] / c.temperature;  // the largest scaled logit
    double sum = 0;
    Matrix expected(1, n);
    for (int64_t i = 0; i < n; ++i) sum += std::exp(double(c.logits[size_t(i)]) / c.temperature - top);
    for (int64_t i = 0; i < n; ++i)
      expected(0, i) = float(std::exp(double(c.logits[size_t(i)]) / c.temperature - top) / sum);
    require_close(call, Matrix(sampling_probs(logits, c.temperature, n)), expected, kFloat32);
  }
}

TEST_CASE("sampling_probs: a logit of -inf is a token that can never be drawn, not an error",
          "[ch09][sampling_probs]") {
  // A masked logit (as chapter 5's masks write them) gets probability
  // exactly 0; only NaN and +inf are refused.
  RowVector logits(4);
  logits << 1.0f, -std::numeric_limits<float>::infinity(), 0.0f, 2.0f;
  const std::string call = "sampling_probs((1, -inf, 0, 2), temperature 1, top_k 4)";
  INFO(call);
  const RowVector p = sampling_probs(logits, 1.0, 4);
  require_shape(call, Matrix(p), 1, 4);
  const double sum = std::exp(-1.0) + std::exp(-2.0) + 1.0;
  Matrix expected(1, 4);
  expected << float(std::exp(-1.0) / sum), 0.0f, float(std::exp(-2.0) / sum), float(1.0 / sum);
  require_close(call, Matrix(p), expected, kFloat32);
}

TEST_CASE("sampling_probs: a bad temperature, top_k, or logits are refused", "[ch09][sampling_probs]") {
  const RowVector logits = RowVector::LinSpaced(6, -1.0f, 1.0f);
  const double inf = std::numeric_limits<double>::infinity();
  // Each bad temperature on two rows. On (-1 ... 1), temperature 0 makes a
  // +inf that chapter 3's softmax_rows refuses by itself; on logits that are
  // all below 0 it makes every logit -inf, which softmax_rows turns into a
  // row of zeros, not a distribution: only the temperature's own check
  // refuses that.
  const RowVector negative = RowVector::LinSpaced(6, -3.0f, -0.5f);
  for (const auto& [row, name] : {std::pair{&logits, "(-1, -0.6, -0.2, 0.2, 0.6, 1)"},
                                  std::pair{&negative, "(-3, -2.5, -2, -1.5, -1, -0.5), all below 0"}})
    for (double t : {0.0, -1.0, inf, std::nan("")}) {
      INFO("sampling_probs(logits " << name << ", temperature " << t << ", top_k 3)");
      CHECK_THROWS_AS(sampling_probs(*row, t, 3), std::invalid_argument);
    }
  for (int64_t k : {int64_t(0), int64_t(-1), int64_t(7)}) {
    INFO("sampling_probs(logits (-1, -0.6, -0.2, 0.2, 0.6, 1), temperature 1, top_k " << k << "): a vocabulary of 6");
    CHECK_THROWS_AS(sampling_probs(logits, 1.0, k), std::invalid_argument);
  }
  {
    INFO("sampling_probs(logits (-1, -0.6, -0.2, 0.2, 0.6, 1), temperature 1, top_k 6): k = vocabulary keeps every "
         "token");
    CHECK_NOTHROW(sampling_probs(logits, 1.0, 6));
  }
  RowVector bad = logits;
  bad(2) = std::numeric_limits<float>::quiet_NaN();
  {
    INFO("sampling_probs(logits (-1, -0.6, nan, 0.2, 0.6, 1), temperature 1, top_k 3): a NaN logit");
    CHECK_THROWS_AS(sampling_probs(bad, 1.0, 3), std::invalid_argument);
  }
  bad(2) = std::numeric_limits<float>::infinity();
  {
    INFO("sampling_probs(logits (-1, -0.6, inf, 0.2, 0.6, 1), temperature 1, top_k 3): a +inf logit");
    CHECK_THROWS_AS(sampling_probs(bad, 1.0, 3), std::invalid_argument);
  }
  INFO("sampling_probs(logits (), temperature 1, top_k 1): an empty row");
  CHECK_THROWS_AS(sampling_probs(RowVector(0), 1.0, 1), std::invalid_argument);
}

TEST_CASE("sample_token: 200 draws from one seed are torch.multinomial's, for four seeds and five distributions",
          "[ch09][sample_token]") {
  for (const std::string name : {"uniform4", "skewed", "zeros", "t0.8k10", "t1k65"}) {
    const RowVector probs = row(fx().matrix("draw." + name + ".p"));
    for (uint64_t seed : {0, 7, 42, 1234}) {
      Generator gen(seed);
      std::vector<int64_t> got;
      {
        INFO("sample_token(draw." << name << ".p, " << probs.size() << " entries) 200 times after Generator(" << seed
                                  << ")");
        for (int i = 0; i < 200; ++i) got.push_back(sample_token(probs, gen));
      }
      const std::string diff = first_difference(got, fx().i64(fmt::format("draw.{}.s{}", name, seed)));
      if (!diff.empty())
        FAIL_CHECK("sample_token(draw." << name << ".p, " << probs.size() << " entries) 200 times after Generator("
                                        << seed << "), against torch.multinomial after torch.manual_seed(" << seed
                                        << "): " << diff);
    }
  }
}

TEST_CASE("sample_token: each token takes one draw per entry, so distributions of different sizes share a generator",
          "[ch09][sample_token]") {
  // Generator(5), then (uniform4, zeros, skewed) 30 times: 4, 6 and 5
  // draws a token. Skipping entries of probability 0 shifts every later draw.
  const RowVector u4 = row(fx().matrix("draw.uniform4.p")), z = row(fx().matrix("draw.zeros.p")),
                  sk = row(fx().matrix("draw.skewed.p"));
  Generator gen(5);
  std::vector<int64_t> got;
  {
    INFO("sample_token of uniform4 (4 entries), zeros (6) and skewed (5) in turn, 30 times after Generator(5)");
    for (int i = 0; i < 30; ++i)
      for (const RowVector* p : {&u4, &z, &sk}) got.push_back(sample_token(*p, gen));
  }
  const std::string diff = first_difference(got, fx().i64("draw.mixed.s5"));
  if (!diff.empty()) FAIL_CHECK("90 tokens from uniform4, zeros and skewed in turn after Generator(5): " << diff);
}

TEST_CASE("sample_token: never picks a token of probability 0, and follows the probabilities", "[ch09][sample_token]") {
  RowVector p(4);
  p << 0.0f, 0.7f, 0.0f, 0.3f;
  Generator gen(3);
  int64_t ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const int64_t t = [&] {
      INFO("sample_token((0, 0.7, 0, 0.3)), draw " << i << " of 20000 after Generator(3)");
      return sample_token(p, gen);
    }();
    INFO("draw " << i << " picked token " << t << " of probability " << (t >= 0 && t < 4 ? p(t) : -1.0f));
    REQUIRE((t == 1 || t == 3));
    ones += t == 1;
  }
  // 20000 draws of probability 0.7: standard deviation sqrt(n 0.7 0.3) = 65,
  // so 5 standard deviations is 0.7 ± 0.016.
  check_close("share of token 1 (probability 0.7) in 20000 draws", double(ones) / n, 0.7, {0.016, 0.0});
}

TEST_CASE("sampling_probs then sample_token: the characters nanoGPT's generate picks", "[ch09][sample_token]") {
  // The whole path from logits: temperature 0.8, top-k 10, then the draws.
  const RowVector logits = row(fx().matrix("probs.logits"));
  const RowVector probs = [&] {
    INFO("sampling_probs(probs.logits (1, 65), temperature 0.8, top_k 10)");
    return sampling_probs(logits, 0.8, 10);
  }();
  Generator gen(42);
  std::vector<int64_t> got;
  {
    INFO("sample_token(sampling_probs(probs.logits, 0.8, 10)) 200 times after Generator(42)");
    for (int i = 0; i < 200; ++i) got.push_back(sample_token(probs, gen));
  }
  const std::string diff = first_difference(got, fx().i64("draw.t0.8k10.s42"));
  if (!diff.empty())
    FAIL_CHECK("sample_token(sampling_probs(probs.logits, 0.8, 10)) 200 times after Generator(42): " << diff);
}

TEST_CASE("sample_token: a bad distribution is refused", "[ch09][sample_token]") {
  Generator gen(0);
  RowVector p(3);
  p << 0.5f, -0.1f, 0.6f;
  {
    INFO("sample_token((0.5, -0.1, 0.6)): a negative probability");
    CHECK_THROWS_AS(sample_token(p, gen), std::invalid_argument);
  }
  p << 0.5f, std::numeric_limits<float>::quiet_NaN(), 0.5f;
  {
    INFO("sample_token((0.5, nan, 0.5)): a NaN probability");
    CHECK_THROWS_AS(sample_token(p, gen), std::invalid_argument);
  }
  p << 0.5f, std::numeric_limits<float>::infinity(), 0.5f;
  {
    INFO("sample_token((0.5, inf, 0.5)): an infinite probability");
    CHECK_THROWS_AS(sample_token(p, gen), std::invalid_argument);
  }
  p.setZero();
  {
    INFO("sample_token((0, 0, 0)): probabilities that sum to 0");
    CHECK_THROWS_AS(sample_token(p, gen), std::invalid_argument);
  }
  INFO("sample_token(()): an empty row");
  CHECK_THROWS_AS(sample_token(RowVector(0), gen), std::invalid_argument);
}

TEST_CASE("sample_token: a refused distribution takes no draw from the generator", "[ch09][sample_token]") {
  // Checked before the first draw, as torch.multinomial checks: a caller
  // that catches the refusal and goes on draws what it would have drawn.
  // The bad entry comes last, so a check made inside the drawing loop has
  // drawn for the others first.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::vector<float>, const char*>> bad = {
      {{0.5f, 0.6f, -0.1f}, "sample_token((0.5, 0.6, -0.1)): a negative probability last"},
      {{0.5f, 0.5f, nan}, "sample_token((0.5, 0.5, nan)): a NaN probability last"},
      {{0.5f, 0.5f, inf}, "sample_token((0.5, 0.5, inf)): an infinite probability last"},
      {{0.0f, 0.0f, 0.0f}, "sample_token((0, 0, 0)): probabilities that sum to 0"},
  };
  for (const auto& [values, what] : bad) {
    INFO(what);
    RowVector p(Eigen::Index(values.size()));
    for (size_t i = 0; i < values.size(); ++i) p(Eigen::Index(i)) = values[i];
    Generator gen(7), fresh(7);
    CHECK_THROWS_AS(sample_token(p, gen), std::invalid_argument);
    INFO("the generator's next uniform_double() after the refusal, against a fresh Generator(7)'s first");
    CHECK(gen.uniform_double() == fresh.uniform_double());
  }
}
