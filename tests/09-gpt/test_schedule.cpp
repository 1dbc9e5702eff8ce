// Hidden suite of chapter 9, part 3: learning_rate, against nanoGPT's get_lr
// (tests/reference/ch09_gpt.py) at every iteration of this chapter's
// schedule and at chosen iterations of three others.
#include "09-gpt/gpt.hpp"

#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

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

// The fixture holds get_lr's double rounded to float32 (relative 6e-8); a
// few operations in double add nothing visible. 1e-6 relative is far below
// an off-by-one in the warm-up (1% at iteration 100 of 100) or a cosine
// over the wrong span.
constexpr Tolerance kSchedule{0.0, 1e-6};

struct Case {
  const char* name;
  LrSchedule s;
};

const std::vector<Case> kCases = {
    {"char", {1e-3, 1e-4, 100, 2000}},
    {"gpt2", {6e-4, 6e-5, 2000, 600000}},
    {"nowarm", {1.0, 0.0, 0, 10}},
    {"short", {1e-3, 1e-4, 1, 5}},
};

std::string describe(const LrSchedule& s) {
  return fmt::format("lr {:g}, min_lr {:g}, warmup_iters {}, lr_decay_iters {}", s.lr, s.min_lr, s.warmup_iters,
                     s.lr_decay_iters);
}

}  // namespace

TEST_CASE("learning_rate: equals nanoGPT's get_lr at every iteration listed, for four schedules",
          "[ch09][learning_rate]") {
  for (const Case& c : kCases) {
    const std::vector<int64_t>& its = fx().i64(fmt::format("lr.{}.it", c.name));
    const std::vector<float>& expected = fx().f32(fmt::format("lr.{}.lr", c.name));
    for (size_t i = 0; i < its.size(); ++i) {
      const double got = [&] {
        INFO(fmt::format("learning_rate({}, {})", its[i], describe(c.s)));  // (a crash inside names its input)
        return learning_rate(its[i], c.s);
      }();
      // One failure per schedule is enough to read: stop at the first.
      if (std::abs(got - expected[i]) > kSchedule.rtol * std::abs(expected[i])) {
        check_close(fmt::format("learning_rate({}, {})", its[i], describe(c.s)), got, expected[i], kSchedule);
        break;
      }
    }
  }
  SUCCEED();
}

TEST_CASE("learning_rate: the warm-up starts at lr / (warmup + 1) and the cosine starts at lr",
          "[ch09][learning_rate]") {
  const LrSchedule s{1e-3, 1e-4, 100, 2000};
  // (a crash inside names its input)
  auto lr_at = [&](int64_t it) {
    INFO("learning_rate(" << it << ", lr 1e-3, min_lr 1e-4, warmup_iters 100, lr_decay_iters 2000)");
    return learning_rate(it, s);
  };
  check_close("learning_rate(0, warm-up 100): the first iteration already learns", lr_at(0), 1e-3 / 101,
              kSchedule);
  check_close("learning_rate(99, warm-up 100): the last of the warm-up", lr_at(99), 1e-3 * 100 / 101,
              kSchedule);
  check_close("learning_rate(100, warm-up 100): the top, where the cosine starts", lr_at(100), 1e-3,
              kSchedule);
  check_close("learning_rate(1050): halfway through the decay, halfway between lr and min_lr", lr_at(1050),
              5.5e-4, kSchedule);
  check_close("learning_rate(2000): the end of the decay", lr_at(2000), 1e-4, kSchedule);
  check_close("learning_rate(5000): after the decay, min_lr", lr_at(5000), 1e-4, kSchedule);
}

TEST_CASE("learning_rate: never rises after the warm-up", "[ch09][learning_rate]") {
  const LrSchedule s{1e-3, 1e-4, 100, 2000};
  auto lr_at = [&](int64_t it) {
    INFO("learning_rate(" << it << ", lr 1e-3, min_lr 1e-4, warmup_iters 100, lr_decay_iters 2000)");
    return learning_rate(it, s);
  };
  double previous = lr_at(100);
  for (int64_t it = 101; it <= 2100; ++it) {
    const double lr = lr_at(it);
    if (!(lr <= previous))
      FAIL("learning_rate(" << it << ") = " << fmt::format("{:.9g}", lr) << " is above learning_rate(" << it - 1
                            << ") = " << fmt::format("{:.9g}", previous)
                            << " (lr 1e-3, min_lr 1e-4, warmup_iters 100, lr_decay_iters 2000): after the "
                               "warm-up the rate only falls, to min_lr, and stays there");
    previous = lr;
  }
}

TEST_CASE("learning_rate: a bad iteration or schedule is refused", "[ch09][learning_rate]") {
  const LrSchedule good{1e-3, 1e-4, 100, 2000};
  {
    INFO("iteration -1");
    CHECK_THROWS_AS(learning_rate(-1, good), std::invalid_argument);
  }
  const std::vector<std::pair<LrSchedule, const char*>> bad = {
      {{1e-3, 1e-4, -1, 2000}, "warmup_iters -1"},
      {{1e-3, 1e-4, 100, 100}, "lr_decay_iters equal to warmup_iters (the cosine would divide by 0)"},
      {{1e-3, 1e-4, 100, 50}, "lr_decay_iters below warmup_iters"},
      {{0.0, 0.0, 100, 2000}, "lr 0"},
      {{-1e-3, 1e-4, 100, 2000}, "a negative lr"},
      {{1e-3, -1e-4, 100, 2000}, "a negative min_lr"},
      {{1e-3, 1e-2, 100, 2000}, "min_lr above lr"},
      {{std::numeric_limits<double>::infinity(), 1e-4, 100, 2000}, "an infinite lr"},
      {{std::numeric_limits<double>::quiet_NaN(), 1e-4, 100, 2000}, "lr NaN"},
      {{1e-3, std::numeric_limits<double>::quiet_NaN(), 100, 2000}, "min_lr NaN"},
  };
  for (const auto& [s, what] : bad) {
    INFO(what << ": " << describe(s));
    CHECK_THROWS_AS(learning_rate(500, s), std::invalid_argument);
  }
}
