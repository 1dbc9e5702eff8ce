// Hidden suite of chapter 7, part 2: the attention-pattern analyzer
// (patterns.hpp) on matrices whose numbers can be worked out by
// hand, and the classes on them.
//
// Tolerance: the weights are float32 (0.1f is not 0.1), the metrics sums of
// at most 100 of them taken in double, so a right answer is within 1e-7 of
// the hand value; 1e-6 leaves room and is still far below any mistake (a
// window off by one moves local focus by at least 1/n of a row's weight, a
// missed row by 1/rows).
#include "07-training/patterns.hpp"
#include "support/compare.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <stdexcept>
#include <string>

using namespace sa;
using namespace sa::test;

namespace {

constexpr double kMargin = 1e-6;

Matrix uniform(int64_t rows, int64_t cols) { return Matrix::Constant(rows, cols, 1.0f / float(cols)); }

// Row 0 attends to itself, every later row to the token before it.
Matrix previous_token(int64_t n) {
  Matrix P = Matrix::Zero(n, n);
  P(0, 0) = 1;
  for (int64_t i = 1; i < n; ++i) P(i, i - 1) = 1;
  return P;
}

// Every row puts half its weight on the first key and half on the last.
Matrix two_ends(int64_t n) {
  Matrix P = Matrix::Zero(n, n);
  P.col(0).setConstant(0.5f);
  P.col(n - 1).setConstant(0.5f);
  return P;
}

// `call` names the input, e.g. "attention_pattern(uniform (4, 4), window 3)".
void check_stats(const std::string& call, const PatternStats& s, double entropy, double focus, double diagonal,
                 double local) {
  check_close(call + ".entropy", s.entropy, entropy, {kMargin, 0.0});
  check_close(call + ".focus", s.focus, focus, {kMargin, 0.0});
  check_close(call + ".diagonal", s.diagonal, diagonal, {kMargin, 0.0});
  check_close(call + ".local", s.local, local, {kMargin, 0.0});
}

// What a classification check prints: the class that came out, the one
// expected, and the statistics it was decided from.
void check_class(const std::string& call, const PatternStats& s, PatternClass expected) {
  const PatternClass got = classify_pattern(s);
  if (got == expected) {
    SUCCEED();
    return;
  }
  FAIL_CHECK(fmt::format("classify_pattern({}): got \"{}\", expected \"{}\" (entropy {:.4f}, focus {:.4f}, "
                         "diagonal {:.4f}, local {:.4f})",
                         call, pattern_name(got), pattern_name(expected), s.entropy, s.focus, s.diagonal, s.local));
}

}  // namespace

TEST_CASE("attention_pattern: entropy, focus, diagonal and local focus of hand-derived heads",
          "[ch07][attention_pattern]") {
  SECTION("attending to itself: entropy 0, everything else 1") {
    INFO("attention_pattern(identity (4, 4), window 3)");  // (a crash inside names its input)
    check_stats("attention_pattern(identity (4, 4), window 3)", attention_pattern(Matrix::Identity(4, 4)), 0.0, 1.0,
                1.0, 1.0);
  }
  SECTION("uniform over 4 keys: entropy ln 4; a window of 1 clips at both ends") {
    {
      INFO("attention_pattern(uniform (4, 4), window 3)");
      check_stats("attention_pattern(uniform (4, 4), window 3)", attention_pattern(uniform(4, 4), 3), std::log(4.0),
                  0.25, 0.25, 1.0);
    }
    // Rows 0 and 3 see 2 keys of the band, rows 1 and 2 see 3: (2 + 3 + 3 + 2) / 4 / 4.
    INFO("attention_pattern(uniform (4, 4), window 1).local");
    CHECK(attention_pattern(uniform(4, 4), 1).local == Approx(0.625).margin(kMargin));
  }
  SECTION("the previous token: one-hot rows, only row 0 on the diagonal") {
    {
      INFO("attention_pattern(previous token (6, 6), window 1)");
      check_stats("attention_pattern(previous token (6, 6), window 1)", attention_pattern(previous_token(6), 1), 0.0,
                  1.0, 1.0 / 6.0, 1.0);
    }
    // A window of 0 is the diagonal itself.
    INFO("attention_pattern(previous token (6, 6), window 0).local");
    CHECK(attention_pattern(previous_token(6), 0).local == Approx(1.0 / 6.0).margin(kMargin));
  }
  SECTION("every query on the first key: local only while key 0 is within 3 positions") {
    Matrix P = Matrix::Zero(8, 8);
    P.col(0).setOnes();
    // Rows 0..3 have key 0 in their band, rows 4..7 do not: local 4/8.
    INFO("attention_pattern(all on key 0 (8, 8), window 3)");
    check_stats("attention_pattern(all on key 0 (8, 8), window 3)", attention_pattern(P, 3), 0.0, 1.0, 1.0 / 8.0, 0.5);
  }
  SECTION("half on the first key, half on the last: entropy ln 2") {
    // Every row has exactly one of the two ends within 3 positions; rows 0
    // and 7 have half their weight on the diagonal: (0.5 + 0.5) / 8.
    INFO("attention_pattern(half on the first and last key (8, 8), window 3)");
    check_stats("attention_pattern(half on the first and last key (8, 8), window 3)", attention_pattern(two_ends(8), 3),
                std::log(2.0), 0.5, 0.125, 0.5);
  }
  SECTION("not square: the diagonal runs over the shorter side") {
    Matrix P(2, 3);
    P << 0.5f, 0.25f, 0.25f,  //
        0.2f, 0.6f, 0.2f;
    const double h0 = -(0.5 * std::log(0.5) + 2 * 0.25 * std::log(0.25));
    const double h1 = -(2 * double(0.2f) * std::log(double(0.2f)) + double(0.6f) * std::log(double(0.6f)));
    // window 1: row 0 keeps keys 0..1 (0.75), row 1 keys 0..2 (1.0).
    INFO("attention_pattern(P (2, 3), window 1)");
    check_stats("attention_pattern(P (2, 3), window 1)", attention_pattern(P, 1), (h0 + h1) / 2,
                (0.5 + double(0.6f)) / 2, (0.5 + double(0.6f)) / 2, 0.875);
  }
  SECTION("tall, 3 queries over 2 keys: the diagonal averages over its 2 entries, not the 3 rows") {
    Matrix P(3, 2);
    P << 0.8f, 0.2f,  //
        0.3f, 0.7f,   //
        0.5f, 0.5f;
    auto h = [](double a, double b) { return -(a * std::log(a) + b * std::log(b)); };
    const double a = 0.8f, b = 0.2f, c = 0.3f, d = 0.7f;
    // window 0: rows 0 and 1 keep their diagonal entry, row 2 has no key 2.
    INFO("attention_pattern(P (3, 2), window 0)");
    check_stats("attention_pattern(P (3, 2), window 0)", attention_pattern(P, 0),
                (h(a, b) + h(c, d) + std::log(2.0)) / 3, (a + d + 0.5) / 3, (a + d) / 2, (a + d) / 3);
  }
  SECTION("refuses an empty matrix and a negative window") {
    CHECK_REFUSES("attention_pattern(P (0, 0)): no weights", attention_pattern(Matrix(0, 0)), std::invalid_argument);
    CHECK_REFUSES("attention_pattern(P (3, 3), window -1)", attention_pattern(uniform(3, 3), -1),
                  std::invalid_argument);
  }
}

TEST_CASE("attention_pattern: the classes, and what the absolute thresholds do on short inputs",
          "[ch07][attention_pattern]") {
  {
    INFO("attention_pattern(identity (5, 5), window 3)");
    check_class("identity (5, 5), window 3", attention_pattern(Matrix::Identity(5, 5)), PatternClass::SelfFocused);
  }
  // One-hot on the neighbour: local with a window of 1; with a window of 0
  // it is no longer local but still concentrated (focus 1, entropy 0).
  {
    INFO("attention_pattern(previous token (6, 6), window 1)");
    check_class("previous token (6, 6), window 1", attention_pattern(previous_token(6), 1), PatternClass::LocallyFocused);
  }
  {
    INFO("attention_pattern(previous token (6, 6), window 0)");
    check_class("previous token (6, 6), window 0", attention_pattern(previous_token(6), 0), PatternClass::Concentrated);
  }
  // Focus exactly 0.5 is not "> 0.5": the two-ended head is mixed.
  {
    INFO("attention_pattern(half on the first and last key (8, 8), window 3)");
    check_class("half on the first and last key (8, 8), window 3", attention_pattern(two_ends(8), 3),
                PatternClass::Mixed);
  }
  // Uniform over 10 keys: entropy ln 10 = 2.30 > 2, and a window of 3
  // keeps only 0.58 of the weight: distributed.
  const PatternStats wide = [&] {
    INFO("attention_pattern(uniform (10, 10), window 3)");
    return attention_pattern(uniform(10, 10), 3);
  }();
  {
    INFO("attention_pattern(uniform (10, 10), window 3).local");
    CHECK(wide.local == Approx(0.58).margin(kMargin));
  }
  check_class("uniform (10, 10), window 3", wide, PatternClass::Distributed);
  // The trap the chapter shows: over 6 tokens a window of 3 holds
  // (4 + 5 + 6 + 6 + 5 + 4) / 36 = 0.83 of a uniform head's weight, so a
  // head that learned nothing is "locally focused"; a window of 1 says mixed.
  const PatternStats short_uniform = [&] {
    INFO("attention_pattern(uniform (6, 6), window 3)");
    return attention_pattern(uniform(6, 6), 3);
  }();
  {
    INFO("attention_pattern(uniform (6, 6), window 3).local");
    CHECK(short_uniform.local == Approx(30.0 / 36.0).margin(kMargin));
  }
  check_class("uniform (6, 6), window 3", short_uniform, PatternClass::LocallyFocused);
  {
    INFO("attention_pattern(uniform (6, 6), window 1)");
    check_class("uniform (6, 6), window 1", attention_pattern(uniform(6, 6), 1), PatternClass::Mixed);
  }
  CHECK(pattern_name(PatternClass::LocallyFocused) == "locally focused");
}
