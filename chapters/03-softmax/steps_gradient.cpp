// Chapter 3, steps 7 and 8: the gradient of softmax (its Jacobian, the
// backward pass that does without it, central differences), and chapter 2's
// vanishing gradient measured through it.
#include "03-softmax/steps.hpp"

#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "sa/gradcheck.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch3 {

namespace {

// J = diag(p) - p pᵀ for one row p: J[i][j] = dp_i / dx_j. Built only to
// look at it; softmax_backward never needs it.
Matrix softmax_jacobian(const Matrix& p) {
  Matrix J = -(p.transpose() * p);
  J.diagonal() += p.transpose();
  return J;
}

}  // namespace

void softmax_gradient() {
  say("  For p = softmax(x): dp_i/dx_j = p_i (delta_ij - p_j), i.e. the Jacobian J = diag(p) - p p^T. It is "
      "symmetric, and each of its rows sums to 0 (adding a constant to x changes nothing).");
  const Matrix x_g = row_matrix({2.0f, 1.0f, 0.1f});
  const Matrix p_g = softmax_rows(x_g);
  const Matrix J = softmax_jacobian(p_g);
  fmt::print("  x = {}   p = softmax(x) = {}\n", format_row(x_g, 0, 1), format_row(p_g));
  print_tensor("J = diag(p) - p p^T", J, {3, 3});
  fmt::print("  row sums of J: {}, {}, {}   (0 up to float32 rounding)\n", rounding(J.row(0).sum(), 1e-6),
             rounding(J.row(1).sum(), 1e-6), rounding(J.row(2).sum(), 1e-6));
  const Matrix dy = row_matrix({0.5f, -1.0f, 2.0f});
  const Matrix dx_J = dy * J;
  const Matrix dx = softmax_backward(p_g, dy);
  say("  A backward pass does not build J. Given dy = dL/dp from the layer above, it needs dx = dy^T J, which "
      "simplifies to dx = p * (dy - <p, dy>) (elementwise): one dot product per row, O(n) instead of O(n^2).");
  fmt::print("  dy = {}   <p, dy> = {:.4f}\n", format_row(dy, 0, 1), (p_g.array() * dy.array()).sum());
  fmt::print("  {:<35} = {}\n", "dy^T J", format_row(dx_J));
  fmt::print("  {:<35} = {}   largest difference {}\n", "softmax_backward: p * (dy - <p,dy>)", format_row(dx),
             rounding((dx - dx_J).cwiseAbs().maxCoeff(), 1e-6));
  {
    // Central differences of L(x) = <dy, softmax(x)>, in float: h = 1e-2
    // keeps the rounding (~1e-7 / h) and the truncation (~h^2) near 1e-5.
    const float h = 1e-2f;
    Matrix fd(1, 3), moved = x_g;
    for (int64_t j = 0; j < 3; ++j)
      fd(0, j) = float(central_difference(moved(0, j), h, [&] {
        return double((dy.array() * softmax_rows(moved).array()).sum());
      }));
    fmt::print("  {:<35} = {}   largest difference {}\n", "central differences (h = 0.01)", format_row(fd),
               rounding((fd - dx).cwiseAbs().maxCoeff(), 1e-5));
  }
}

std::vector<NormRow> vanishing_gradient(uint64_t seed, const Options& o) {
  say(fmt::format("  For each d_k: {}, {}the {} scores q.k of one query q against {} keys k, all with "
                  "independent N(0, 1) components (drawn q, then K, per row, from a generator seeded {}). For "
                  "each row, the Frobenius norm ||J||_F of softmax's Jacobian, without and with the division "
                  "by sqrt(d_k). For reference: a uniform row has ||J||_F = sqrt(n-1)/n = {:.4f}, a one-hot row "
                  "has 0.",
                  count_of(o.samples, "row"), o.samples == 1 ? "" : "each ", kKeys, kKeys, seed,
                  std::sqrt(double(kKeys - 1)) / double(kKeys)));
  std::vector<NormRow> norms;
  {
    Generator exp_gen(seed);
    fmt::print("\n  {:>5}  {:>8}   {:^17}   {:^17}   {:^17}\n", "", "", "mean ||J||_F", "||J||_F < 0.01",
               "mean largest p");
    fmt::print("  {:>5}  {:>8}   {:>8} {:>8}   {:>8} {:>8}   {:>8} {:>8}\n", "d_k", "std(q.k)", "unscaled", "scaled",
               "unscaled", "scaled", "unscaled", "scaled");
    for (int64_t d_k = 4; d_k <= 1024; d_k *= 2) {
      double sum_sq = 0, raw_norm = 0, scaled_norm = 0, raw_dead = 0, scaled_dead = 0, raw_max = 0, scaled_max = 0;
      for (int64_t s = 0; s < o.samples; ++s) {
        const Matrix q = exp_gen.randn(1, d_k);
        const Matrix K = exp_gen.randn(kKeys, d_k);
        const Matrix raw = q * K.transpose();
        sum_sq += raw.squaredNorm();
        const Matrix p_raw = softmax_rows(raw);
        const Matrix p_scaled = softmax_rows(scaled_scores(q, K));
        const double raw_J = softmax_jacobian(p_raw).norm(), scaled_J = softmax_jacobian(p_scaled).norm();
        raw_norm += raw_J;
        scaled_norm += scaled_J;
        raw_dead += raw_J < kDead;
        scaled_dead += scaled_J < kDead;
        raw_max += p_raw.maxCoeff();
        scaled_max += p_scaled.maxCoeff();
      }
      const double n = double(o.samples);
      norms.push_back({d_k, std::sqrt(sum_sq / (n * kKeys)), raw_norm / n, scaled_norm / n, raw_dead / n,
                       scaled_dead / n, raw_max / n, scaled_max / n});
      const NormRow& r = norms.back();
      fmt::print("  {:>5}  {:>8.2f}   {:>8.4f} {:>8.4f}   {:>7.1f}% {:>7.1f}%   {:>8.4f} {:>8.4f}\n", r.d_k, r.score_std,
                 r.raw_norm, r.scaled_norm, 100 * r.raw_dead, 100 * r.scaled_dead, r.raw_max, r.scaled_max);
    }
  }
  double worst_scaled_dead = 0;
  for (const NormRow& r : norms) worst_scaled_dead = std::max(worst_scaled_dead, r.scaled_dead);
  const double shrink = norms.back().raw_norm > 0 ? norms.front().raw_norm / norms.back().raw_norm : 0.0;
  double scaled_lo = norms.front().scaled_norm, scaled_hi = scaled_lo;
  for (const NormRow& r : norms) scaled_lo = std::min(scaled_lo, r.scaled_norm), scaled_hi = std::max(scaled_hi, r.scaled_norm);
  // A handful of rows shows single draws, not the law: then the numbers
  // are stated as they came out, and the law is left for more rows.
  if (o.samples < 100) {
    say(fmt::format("\n  {}: here the unscaled norm went from {:.4f} at d_k = 4 to {:.4f} at d_k = 1024, and the "
                    "scaled one stayed between {:.2f} and {:.2f}. The law shows from --samples 100 or so (the "
                    "default is 2000): unscaled, the Jacobian shrinks as d_k grows, scaled it does not.",
                    o.samples == 1 ? std::string("With 1 row per d_k each number is one draw, not a mean one can "
                                                 "read a law from")
                                   : fmt::format("With only {} rows per d_k the means are rough, not a law one can "
                                                 "read off", o.samples),
                    norms.front().raw_norm, norms.back().raw_norm, bound_below(scaled_lo, 2),
                    bound_above(scaled_hi, 2)));
    return norms;
  }
  say(fmt::format("\n  Unscaled, the scores' spread grows like sqrt(d_k) (chapter 2), the largest weight tends "
                  "towards 1, and the Jacobian, the only path by which a gradient reaches the scores and through "
                  "them Q and K, {} from {:.4f} at d_k = 4 to {:.4f} at d_k = 1024{}. The mean "
                  "hides how uneven it is: at d_k = 1024, {:.0f}% of the rows have ||J||_F < {} and pass "
                  "practically nothing back. Scaled, the scores keep variance 1, and the norm stays between {:.2f} "
                  "and {:.2f} at every d_k, with {}.",
                  shrink > 1 || shrink == 0 ? "shrinks" : "goes", norms.front().raw_norm, norms.back().raw_norm,
                  shrink > 1 ? fmt::format(", {:.1f} times less", shrink)
                  : shrink == 0 ? std::string(", to nothing measurable") : std::string(),
                  100 * norms.back().raw_dead, kDead, bound_below(scaled_lo, 2), bound_above(scaled_hi, 2),
                  worst_scaled_dead == 0 ? std::string("not one row that small")
                  // A share that rounds to 0.0% is a few rows: count them.
                  : 100 * worst_scaled_dead < 0.05
                      ? fmt::format("at most {} in {} that small",
                                    count_of(std::lround(worst_scaled_dead * double(o.samples)), "row"), o.samples)
                      : fmt::format("at most {:.1f}% of rows that small", bound_above(100 * worst_scaled_dead, 1))));
  return norms;
}

}  // namespace sa::ch3
