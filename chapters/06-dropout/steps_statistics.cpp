// Chapter 6, steps 4 and 5: many draws (the kept fraction tends to 1 - p,
// the mean of the dropped-out weights to the weights, with the error of a
// mean of n draws), and the kept fraction against p.
#include "06-dropout/dropout.hpp"
#include "06-dropout/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch6 {

namespace {

// n without its trailing zeros: 1 for 1, 10, 100, ...; 2 for 20, 200; 37 for 370.
int64_t strip_zeros(int64_t n) {
  while (n % 10 == 0) n /= 10;
  return n;
}

}  // namespace

std::vector<Checkpoint> many_draws(const Example& ex, const Options& o, Generator& many) {
  const int64_t seq_len = ex.seq_len;
  const Matrix& weights = ex.att.weights;
  std::vector<Checkpoint> curve;  // for the figure: 1, 2, 5 x 10^k and the last draw
  std::vector<Checkpoint> table_rows;  // for the table: powers of 10 and the last draw
  const double mean_w2 = weights.cast<double>().array().square().mean();
  double worst_sigmas = 0.0;  // largest |kept fraction - (1-p)| in binomial standard deviations
  {
    Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(seq_len, seq_len);
    int64_t kept_total = 0;
    const Eigen::MatrixXd w = weights.cast<double>();
    for (int64_t n = 1; n <= o.draws; ++n) {
      const DropoutResult r = dropout(weights, o.p, many);
      sum += r.output.cast<double>();
      kept_total += count_kept(r.keep);
      const int64_t lead = strip_zeros(n);
      const bool power_of_ten = lead == 1;
      const bool plotted = lead == 1 || lead == 2 || lead == 5;  // evenly spaced on a log axis
      if (!plotted && n != o.draws) continue;
      const Eigen::MatrixXd error = sum / double(n) - w;
      Checkpoint c{n, double(kept_total) / double(n * weights.size()), error.cwiseAbs().maxCoeff(),
                   std::sqrt(error.array().square().mean()), std::sqrt(o.p / (1.0 - o.p) * mean_w2 / double(n))};
      if (plotted || n == o.draws) curve.push_back(c);
      if ((power_of_ten && n >= 10) || n == o.draws) table_rows.push_back(c);
    }
  }
  say(fmt::format("Each draw drops a fresh random set of the {} weights. After n draws we compare the fraction "
                  "kept with 1 - p, and the mean of the n dropped-out matrices with the weights themselves. One "
                  "weight's dropout is w/(1-p) or 0, with variance w^2 p/(1-p); the mean of n draws therefore "
                  "misses by about sqrt(p/(1-p) mean(w^2) / n): ten times the draws, sqrt(10) = 3.2 times smaller "
                  "error.",
                  weights.size()));
  fmt::print("  {:>8}  {:>13}  {:>12}  {:>13}  {:>13}  {:>13}\n", "draws n", "kept fraction", "binomial sd",
             "largest error", "RMS error", "predicted RMS");
  for (const Checkpoint& c : table_rows) {
    const double sd = std::sqrt(o.p * (1.0 - o.p) / double(c.n * weights.size()));
    if (sd > 0) worst_sigmas = std::max(worst_sigmas, std::abs(c.kept_fraction - (1.0 - o.p)) / sd);
    fmt::print("  {:>8}  {:>13.5f}  {:>12.5f}  {:>13.6f}  {:>13.6f}  {:>13}\n", c.n, c.kept_fraction, sd,
               c.max_error, c.rms_error, o.p < 1.0 ? fmt::format("{:.6f}", c.predicted_rms) : "-");
  }
  fmt::print("  1 - p = {:g}\n", 1.0 - o.p);
  if (o.p == 0.0 || o.p == 1.0) {
    say(o.p == 0.0 ? "With p = 0 nothing is ever dropped and nothing is random: every draw is the weights "
                     "themselves, so the error is 0 from the first draw (no convergence figure)."
                   : "With p = 1 everything is dropped every time: the mean stays 0, the error stays at the weights "
                     "themselves, and E[dropout(w)] = w fails. Inverted dropout's promise needs p < 1 (no "
                     "convergence figure).");
    curve.clear();
  } else {
    // Does the measured RMS error follow the prediction? Within a factor of
    // 2 in every row, is what "follows" means here; the first draws of a p
    // near 1 keep almost nothing, and their error is far from its average.
    double lowest = INFINITY, highest = 0;
    for (const Checkpoint& c : table_rows) {
      lowest = std::min(lowest, c.rms_error / c.predicted_rms);
      highest = std::max(highest, c.rms_error / c.predicted_rms);
    }
    const bool follows = lowest >= 0.5 && highest <= 2.0;
    std::string error_sentence;
    if (table_rows.size() < 2 && follows)
      error_sentence = fmt::format("with a single row there is no trend to see yet (its RMS error is {:.2f} times "
                                   "the predicted one; more --draws show it fall)",
                                   lowest);
    else if (table_rows.size() < 2)
      // Far from the prediction after so few draws (p near 1: no weight has
      // survived yet, or one survivor scaled by 1/(1-p)), the error does not
      // simply fall with more draws.
      error_sentence = fmt::format("with a single row there is no trend to see yet (its RMS error is {:.2f} times "
                                   "the predicted one, which holds only once every weight has survived many times: "
                                   "at this p a weight survives once in 1/(1-p) = {:.4g} draws on average)",
                                   lowest, 1.0 / (1.0 - o.p));
    else if (follows)
      error_sentence = fmt::format("the error of the mean follows the predicted 1/sqrt(n) law (measured RMS "
                                   "between {:.2f} and {:.2f} times the prediction)",
                                   bound_below(lowest, 2), bound_above(highest, 2));
    else
      error_sentence = fmt::format("the error of the mean does not follow the predicted 1/sqrt(n) law in "
                                   "every row (measured RMS between {:.2f} and {:.2f} times the prediction): a "
                                   "weight survives once in 1/(1-p) = {:.4g} draws on average, and the law holds only "
                                   "once every weight has survived many times",
                                   bound_below(lowest, 2), bound_above(highest, 2), 1.0 / (1.0 - o.p));
    say(fmt::format("The kept fraction stays within {:.1f} binomial standard deviations sqrt(p(1-p) / (36 n)) "
                    "of 1 - p in every row of the table, and {}. Dropout is noise with mean zero around the "
                    "weights.",
                    bound_above(worst_sigmas, 1), error_sentence));
  }
  return curve;
}

std::vector<SweepPoint> kept_fraction_against_p(const Example& ex, Generator& many) {
  const Matrix& weights = ex.att.weights;
  std::vector<SweepPoint> sweep;
  {
    fmt::print("  {:>5}  {:>8}  {:>13}  {:>10}\n", "p", "1 - p", "kept fraction", "difference");
    for (int k = 0; k <= 10; ++k) {
      const double p = k / 10.0;
      int64_t kept_sum = 0;
      for (int64_t d = 0; d < kSweepDraws; ++d) kept_sum += count_kept(dropout(weights, p, many).keep);
      const double fraction = double(kept_sum) / double(kSweepDraws * weights.size());
      sweep.push_back({p, fraction});
      fmt::print("  {:>5.1f}  {:>8.1f}  {:>13.5f}  {:>+10.5f}\n", p, 1.0 - p, fraction, fraction - (1.0 - p));
    }
  }
  say(fmt::format("{} draws of {} weights per p: {} Bernoulli trials, so the measured fraction has a standard "
                  "deviation of at most sqrt(0.25 / {}) = {:.4f}. The two ends are exact: p = 0 keeps everything, "
                  "p = 1 keeps nothing.",
                  kSweepDraws, weights.size(), kSweepDraws * weights.size(), kSweepDraws * weights.size(),
                  std::sqrt(0.25 / double(kSweepDraws * weights.size()))));
  return sweep;
}

}  // namespace sa::ch6
