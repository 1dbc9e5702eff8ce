// Hidden suite of chapter 9, part 4: clip_grad_norm and adamw_step, against
// torch.nn.utils.clip_grad_norm_ and torch.optim.AdamW
// (tests/reference/ch09_gpt.py).
#include "09-gpt/gpt.hpp"

#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
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

std::vector<std::span<float>> spans(std::vector<std::vector<float>>& tensors) {
  std::vector<std::span<float>> s;
  for (auto& t : tensors) s.emplace_back(t);
  return s;
}

std::vector<std::vector<float>> clip_inputs() {
  return {fx().f32("clip.g0"), fx().f32("clip.g1"), fx().f32("clip.g2")};
}

}  // namespace

// ===========================================================================
// clip_grad_norm
// ===========================================================================
// The norm is a sum of 29 squares, the clipped values one multiplication
// each: kFloat32 and kElementwise. Clipping each tensor by its own norm
// moves the first and last tensors by a factor of 2 or more.

TEST_CASE("clip_grad_norm: above max_norm, every tensor is scaled by one factor, as clip_grad_norm_",
          "[ch09][clip_grad_norm]") {
  auto g = clip_inputs();
  const double total = [&] {
    INFO("clip_grad_norm(clip.g0 (3, 4), g1 (5), g2 (2, 3, 2); max_norm 1)");  // (a crash inside names its input)
    return clip_grad_norm(spans(g), 1.0);
  }();
  check_close("clip_grad_norm(clip.g0 (3, 4), g1 (5), g2 (2, 3, 2); max_norm 1): the returned norm", total,
              fx().f32("clip.clipped.total")[0], kFloat32);
  for (int k = 0; k < 3; ++k)
    require_close(fmt::format("clip.g{} after clip_grad_norm(all three tensors, max_norm 1)", k), g[size_t(k)],
                  fx().f32(fmt::format("clip.clipped.g{}", k)), kElementwise);
  double sq = 0;
  for (const auto& t : g)
    for (float x : t) sq += double(x) * x;
  check_close("the norm of all three tensors after clipping to 1", std::sqrt(sq), 1.0, kFloat32);
}

TEST_CASE("clip_grad_norm: at or below max_norm, the gradients are left exactly as they are", "[ch09][clip_grad_norm]") {
  auto g = clip_inputs();
  const auto before = g;
  const double total = [&] {
    INFO("clip_grad_norm(clip.g0 (3, 4), g1 (5), g2 (2, 3, 2); max_norm 100)");
    return clip_grad_norm(spans(g), 100.0);
  }();
  check_close("clip_grad_norm(clip.g0, g1, g2; max_norm 100): the returned norm", total,
              fx().f32("clip.unclipped.total")[0], kFloat32);
  for (int k = 0; k < 3; ++k)
    require_close(fmt::format("clip.g{} after clip_grad_norm with max_norm 100 (norm {:.4f})", k, total), g[size_t(k)],
                  before[size_t(k)], kBitExact);
}

TEST_CASE("clip_grad_norm: norms 5 and 12 make 13, and both tensors are divided by 13", "[ch09][clip_grad_norm]") {
  // Clipping one by one would divide (3, 0, 4) by 5 and (0, 12) by 12.
  std::vector<std::vector<float>> g = {{3, 0, 4}, {0, 12}};
  const double total = [&] {
    INFO("clip_grad_norm((3, 0, 4), (0, 12); max_norm 1)");
    return clip_grad_norm(spans(g), 1.0);
  }();
  check_close("clip_grad_norm((3, 0, 4), (0, 12); max_norm 1): the norm", total, 13.0, kElementwise);
  const double f = 1.0 / (13.0 + 1e-6);
  check_close("(3, 0, 4)[0] after clipping", g[0][0], 3 * f, kElementwise);
  check_close("(3, 0, 4)[2] after clipping", g[0][2], 4 * f, kElementwise);
  check_close("(0, 12)[1] after clipping", g[1][1], 12 * f, kElementwise);
}

TEST_CASE("clip_grad_norm: the factor is max_norm / (norm + 1e-6), also for a small norm and at max_norm",
          "[ch09][clip_grad_norm]") {
  // PyTorch divides by norm + 1e-6 and multiplies by min(factor, 1) whatever
  // the norm. For a norm of order 1 the 1e-6 is invisible; for a norm of
  // 5e-4 it is 0.2%: leaving it out, or scaling only when the norm is above
  // max_norm, moves these values by 2e-3 relative. The tolerance is
  // relative only (1e-5, a few float operations): the values are of order
  // 1e-4, where kElementwise's 1e-6 absolute would be 1%.
  constexpr Tolerance kRelative{0.0, 1e-5};
  for (double max_norm : {1e-4, 5e-4}) {
    std::vector<std::vector<float>> g = {{3e-4f, 0.0f}, {4e-4f}};
    const double norm = std::sqrt(double(g[0][0]) * g[0][0] + double(g[1][0]) * g[1][0]);  // 5e-4
    const double factor = std::min(max_norm / (norm + 1e-6), 1.0);
    const std::string call = fmt::format("clip_grad_norm((3e-4, 0), (4e-4); max_norm {:g})", max_norm);
    const double total = [&] {
      INFO(call);
      return clip_grad_norm(spans(g), max_norm);
    }();
    check_close(call + ": the norm", total, norm, kRelative);
    check_close(fmt::format("(3e-4, 0)[0] after {}, times max_norm / (norm + 1e-6) = {:.7f}", call, factor), g[0][0],
                3e-4f * factor, kRelative);
    check_close(fmt::format("(4e-4)[0] after {}, times max_norm / (norm + 1e-6) = {:.7f}", call, factor), g[1][0],
                4e-4f * factor, kRelative);
  }
  // Exactly at max_norm. 3e-4 and 4e-4 are not floats, so the norm above
  // rounds to 5.00000024e-4, just over max_norm 5e-4: a `norm <= max_norm`
  // that skips the scaling still scaled there. 3/4096 and 4/4096 are exact,
  // and so is their norm 5/4096, in float and in double; PyTorch still
  // multiplies them by max_norm / (max_norm + 1e-6) = 0.99918.
  {
    const double max_norm = 5.0 / 4096;
    std::vector<std::vector<float>> g = {{3.0f / 4096, 0.0f}, {4.0f / 4096}};
    const double factor = max_norm / (max_norm + 1e-6);
    const std::string call = "clip_grad_norm((3/4096, 0), (4/4096); max_norm 5/4096, exactly their norm)";
    const double total = [&] {
      INFO(call);
      return clip_grad_norm(spans(g), max_norm);
    }();
    check_close(call + ": the norm", total, max_norm, kRelative);
    check_close(fmt::format("(3/4096, 0)[0] after {}, times max_norm / (norm + 1e-6) = {:.7f}", call, factor), g[0][0],
                3.0 / 4096 * factor, kRelative);
    check_close(fmt::format("(4/4096)[0] after {}, times max_norm / (norm + 1e-6) = {:.7f}", call, factor), g[1][0],
                4.0 / 4096 * factor, kRelative);
  }
}

TEST_CASE("clip_grad_norm: gradients of zeros stay zeros, and no tensor at all has norm 0", "[ch09][clip_grad_norm]") {
  std::vector<std::vector<float>> g = {{0, 0}, {0}};
  {
    INFO("clip_grad_norm((0, 0), (0); max_norm 1)");
    check_close("clip_grad_norm((0, 0), (0); max_norm 1)", clip_grad_norm(spans(g), 1.0), 0.0, kBitExact);
  }
  check_close("(0, 0)[1] after clipping", g[0][1], 0.0, kBitExact);
  std::vector<std::vector<float>> none;
  INFO("clip_grad_norm of no tensors (max_norm 1)");
  check_close("clip_grad_norm of no tensors", clip_grad_norm(spans(none), 1.0), 0.0, kBitExact);
}

TEST_CASE("clip_grad_norm: a bad max_norm or a gradient holding NaN or inf is refused, and nothing is scaled",
          "[ch09][clip_grad_norm]") {
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    auto g = clip_inputs();
    INFO("clip_grad_norm(clip.g0, g1, g2; max_norm " << bad << ")");
    CHECK_THROWS_AS(clip_grad_norm(spans(g), bad), std::invalid_argument);
  }
  for (float poison : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<std::vector<float>> g = {{3, 4}, {1, poison}};
    const std::string call = fmt::format("clip_grad_norm((3, 4), (1, {}); max_norm 1)", poison);
    {
      INFO(call << ": a gradient holding " << poison);
      CHECK_THROWS_AS(clip_grad_norm(spans(g), 1.0), std::invalid_argument);
    }
    if (!(g[0][0] == 3.0f && g[0][1] == 4.0f))
      FAIL_CHECK(call << " was refused but scaled the first tensor to (" << g[0][0] << ", " << g[0][1]
                      << "), expected (3, 4) as it was (check the norm before scaling)");
  }
}

// ===========================================================================
// adamw_step
// ===========================================================================
// Five steps of element-wise operations (a few float ops each), compared
// with PyTorch's: kElementwise. Decay through the gradient (L2) moves the
// "strong" configuration's weights by order 0.1, the nanogpt one's by 1e-5
// to 1e-4 of values of order 1, both far above it.

namespace {

struct AdamWCase {
  const char* name;
  AdamWConfig cfg;
};
const std::vector<AdamWCase> kAdamW = {
    {"nanogpt", {1e-3, 0.9, 0.99, 1e-8, 0.1}},
    {"strong", {0.1, 0.9, 0.999, 1e-8, 0.5}},
};

std::string describe(const AdamWConfig& c, double wd) {
  return fmt::format("lr {:g}, betas ({:g}, {:g}), eps {:g}, weight_decay {:g}", c.lr, c.beta1, c.beta2, c.eps, wd);
}

}  // namespace

TEST_CASE("adamw_step: five steps of torch.optim.AdamW, a decayed matrix and an undecayed bias",
          "[ch09][adamw_step]") {
  for (const AdamWCase& c : kAdamW) {
    std::vector<float> W = fx().f32(fmt::format("adamw.{}.W0", c.name)), b = fx().f32(fmt::format("adamw.{}.b0", c.name));
    std::vector<float> mW(W.size(), 0), vW(W.size(), 0), mb(b.size(), 0), vb(b.size(), 0);
    AdamWConfig no_decay = c.cfg;
    no_decay.weight_decay = 0;  // the bias's parameter group
    for (int t = 1; t <= 5; ++t) {
      {
        INFO(fmt::format("adamw_step(W (4, 5), step {} of 5, {})", t, describe(c.cfg, c.cfg.weight_decay)));
        adamw_step(W, fx().f32(fmt::format("adamw.{}.gW{}", c.name, t)), mW, vW, t, c.cfg);
      }
      {
        INFO(fmt::format("adamw_step(b, step {} of 5, {})", t, describe(no_decay, 0.0)));
        adamw_step(b, fx().f32(fmt::format("adamw.{}.gb{}", c.name, t)), mb, vb, t, no_decay);
      }
      // As (4, 5) matrices, so that a failure names the entry [row, column].
      const std::vector<float>& W_t = fx().f32(fmt::format("adamw.{}.W{}", c.name, t));
      require_close(fmt::format("W (4, 5) after step {} of adamw_step ({})", t, describe(c.cfg, c.cfg.weight_decay)),
                    Matrix(Eigen::Map<const Matrix>(W.data(), 4, 5)),
                    Matrix(Eigen::Map<const Matrix>(W_t.data(), 4, 5)), kElementwise);
      require_close(fmt::format("b (5) after step {} of adamw_step ({})", t, describe(c.cfg, 0.0)), b,
                    fx().f32(fmt::format("adamw.{}.b{}", c.name, t)), kElementwise);
    }
  }
}

TEST_CASE("adamw_step: a weight with gradient 0 only decays, by exactly (1 - lr weight_decay)", "[ch09][adamw_step]") {
  // m and v stay 0, so Adam's part is 0 / (0 + eps) = 0: the decay is all.
  AdamWConfig cfg;
  cfg.lr = 0.1;
  cfg.weight_decay = 0.5;
  std::vector<float> p = {2.0f, -4.0f}, g = {0.0f, 0.0f}, m(2, 0.0f), v(2, 0.0f);
  {
    INFO("adamw_step(p = (2, -4), g = (0, 0), t = 1, lr 0.1, weight_decay 0.5)");
    adamw_step(p, g, m, v, 1, cfg);
  }
  check_close("p[0] = 2 after one step with g = 0, lr 0.1, weight_decay 0.5", p[0], 2.0 * 0.95, kElementwise);
  check_close("p[1] = -4 after one step with g = 0, lr 0.1, weight_decay 0.5", p[1], -4.0 * 0.95, kElementwise);
  check_close("m[0] after a step with g = 0: the decay never enters the moments", m[0], 0.0, kBitExact);
  check_close("v[1] after a step with g = 0", v[1], 0.0, kBitExact);
}

TEST_CASE("adamw_step: weight_decay 0 is chapter 7's adam_step", "[ch09][adamw_step]") {
  // The last gradient, 1e-7, is of eps's order: there eps's place shows
  // (added to sqrt(v_hat): a step of 0.91 lr; inside the root: 0.001 lr).
  std::vector<float> p1 = {0.5f, -1.0f, 2.0f, 1.0f}, p2 = p1, g = {0.1f, -0.3f, 0.02f, 1e-7f};
  std::vector<float> m1(4, 0), v1(4, 0), m2(4, 0), v2(4, 0);
  AdamWConfig w{1e-2, 0.9, 0.999, 1e-8, 0.0};
  for (int t = 1; t <= 3; ++t) {
    {
      INFO("adamw_step(p = (0.5, -1, 2, 1), g = (0.1, -0.3, 0.02, 1e-7), step " << t << " of 3, lr 1e-2, weight_decay 0)");
      adamw_step(p1, g, m1, v1, t, w);
    }
    adam_step(p2, g, m2, v2, t, AdamConfig{1e-2, 0.9, 0.999, 1e-8});
  }
  require_close("adamw_step with weight_decay 0, three steps, against adam_step", p1, p2, kElementwise);
}

TEST_CASE("adamw_step: spans of different lengths, a step number below 1, a negative decay are refused",
          "[ch09][adamw_step]") {
  std::vector<float> p(3, 1), g(3, 0.1f), m(3, 0), v(3, 0), short_g(2, 0.1f);
  const AdamWConfig cfg;
  // Each refused call must leave p, m and v as they were: checked after
  // each, so that the message names the call that changed them.
  const auto unchanged = [&](const std::string& call) {
    if (!(p[0] == 1.0f && p[1] == 1.0f && p[2] == 1.0f && m[0] == 0.0f && v[0] == 0.0f))
      FAIL_CHECK(call << " was refused but changed its tensors: p = (" << p[0] << ", " << p[1] << ", " << p[2]
                      << "), m[0] = " << m[0] << ", v[0] = " << v[0] << "; expected p = (1, 1, 1), m and v 0 "
                      << "(check the arguments before the decay)");
  };
  {
    INFO("a gradient of 2 values for a parameter of 3");
    CHECK_THROWS_AS(adamw_step(p, short_g, m, v, 1, cfg), std::invalid_argument);
  }
  unchanged("adamw_step with a gradient of 2 values for a parameter of 3");
  // m and v too: chapter 7's adam_step refuses them, but after the decay.
  std::vector<float> short_m(2, 0), short_v(2, 0);
  {
    INFO("m of 2 values for a parameter of 3");
    CHECK_THROWS_AS(adamw_step(p, g, short_m, v, 1, cfg), std::invalid_argument);
  }
  unchanged("adamw_step with m of 2 values for a parameter of 3");
  {
    INFO("v of 2 values for a parameter of 3");
    CHECK_THROWS_AS(adamw_step(p, g, m, short_v, 1, cfg), std::invalid_argument);
  }
  unchanged("adamw_step with v of 2 values for a parameter of 3");
  {
    INFO("step number 0 (the first step is 1)");
    CHECK_THROWS_AS(adamw_step(p, g, m, v, 0, cfg), std::invalid_argument);
  }
  unchanged("adamw_step at step number 0");
  AdamWConfig negative = cfg;
  negative.weight_decay = -0.1;
  {
    INFO("weight_decay -0.1");
    CHECK_THROWS_AS(adamw_step(p, g, m, v, 1, negative), std::invalid_argument);
  }
  unchanged("adamw_step with weight_decay -0.1");
}
