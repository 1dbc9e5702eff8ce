// Chapter 2, steps 4 and 5: why sqrt(d_k), measured: the variance of q.k
// for random vectors at d_k = 4 ... --max-d-k, raw and scaled, and what the
// two spreads look like at one d_k.
#include "02-scaling/steps.hpp"

#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch2 {

std::vector<int64_t> d_k_values(int64_t max_d_k) {
  std::vector<int64_t> values;
  for (int64_t d = 4; d <= max_d_k; d *= 2) values.push_back(d);
  return values;
}

Measured measure_variance(uint64_t seed, const Options& o) {
  say("Take q and k with independent entries of mean 0 and variance 1. Each product q[d] k[d] has mean "
      "E[q]E[k] = 0 and variance E[q^2]E[k^2] = 1. A dot product adds d_k such independent products, and "
      "variances of independent terms add:");
  fmt::print("\n      Var(q . k) = d_k        so      Var(q . k / sqrt(d_k)) = d_k / d_k = 1\n\n");
  say("The typical raw score is sqrt(d_k) in size: 8 at d_k = 64, 22.6 at d_k = 512. Dividing by sqrt(d_k), "
      "not by d_k, is exactly what brings the variance back to 1.");
  const double rel_se_gauss = std::sqrt(2.0 / double(o.samples - 1));
  gap();
  say(fmt::format(
      "The experiment: for each d_k, draw q = randn({0}, d_k), then k = randn({0}, d_k), and take the "
      "{0} row-wise dot products (dot_product_stats). How close should the measured variance be? From "
      "n = {0} samples a variance has a relative standard error of about sqrt(2/(n-1)) = {1:.2f}%. A "
      "product q[d] k[d] has heavier tails than a Gaussian (fourth moment 9, not 3), which adds a little:",
      o.samples, 100.0 * rel_se_gauss));
  fmt::print("\n      relative standard error (s.e.) = sqrt(2/(n-1) + 6/(n d_k))\n\n");
  say("The last two columns give that error and how many of them the measured variance misses the theory by.");

  Measured m;
  Generator stats_gen(seed);  // torch.manual_seed(seed), then the loop below
  fmt::print("\n  {:>5} | {:>9} {:>10} {:>6} | {:>12} {:>12} {:>6} | {:>9} {:>10}\n", "d_k", "mean q.k",
             "var q.k", "theory", "mean scaled", "var scaled", "theory", "rel. s.e.", "off (s.e.)");
  fmt::print("  {:-<5}-+-{:-<9}-{:-<10}-{:-<6}-+-{:-<12}-{:-<12}-{:-<6}-+-{:-<9}-{:-<10}\n", "", "", "", "", "", "", "",
             "", "");
  double worst_sigma = 0;
  for (const int64_t d_k : d_k_values(o.max_d_k)) {
    const DotStats s = dot_product_stats(stats_gen, d_k, o.samples);
    const double rel_se = std::sqrt(2.0 / double(o.samples - 1) + 6.0 / (double(o.samples) * double(d_k)));
    const double sigmas = (s.scaled_variance - 1.0) / rel_se;
    worst_sigma = std::max(worst_sigma, std::abs(sigmas));
    fmt::print("  {:>5} | {:>+9.4f} {:>10.3f} {:>6} | {:>+12.4f} {:>12.4f} {:>6} | {:>8.2f}% {:>+10.2f}\n", d_k,
               s.mean, s.variance, d_k, s.scaled_mean, s.scaled_variance, 1, 100.0 * rel_se, sigmas);
    m.d_k.push_back(double(d_k));
    m.stats.push_back(s);
  }
  fmt::print("  theory of both means: 0.  off = (measured variance / theory - 1) / rel. s.e.\n\n");
  // How often chance alone makes the largest of N independent misses at
  // least this big: 1 - (1 - P(|z| >= w))^N, with P(|z| >= w) = erfc(w / sqrt 2).
  const double p_worst = 1.0 - std::pow(1.0 - std::erfc(worst_sigma / std::sqrt(2.0)), double(m.d_k.size()));
  // Said from the table: what theory predicts, and whether these rows agree.
  std::string verdict = m.d_k.size() > 1
                            ? "In theory the raw variance doubles with every doubling of d_k and the scaled one "
                              "stays at 1. "
                            : fmt::format("In theory the raw variance is d_k = {} and the scaled one 1. ",
                                          m.d_k.front());
  verdict += fmt::format("The largest miss here is {:.2f} standard errors", worst_sigma);
  if (o.samples >= 30)
    verdict += fmt::format("; with {} independent row{}, chance alone gives a miss at least that large in {:.0f}% "
                           "of runs (try other --seed values).",
                           m.d_k.size(), m.d_k.size() == 1 ? "" : "s", 100.0 * p_worst);
  else
    verdict += fmt::format(", but with {} samples a variance estimate is too rough for that yardstick (it assumes "
                           "many samples): use --samples 1000 or more to see the law.",
                           o.samples);
  say(verdict);
  return m;
}

HistogramScores spread_at_d_k(uint64_t seed, int64_t hist_d_k) {
  Generator hist_gen(seed);
  const Matrix Q_big = hist_gen.randn(kHistogramQueries, hist_d_k);
  const Matrix K_big = hist_gen.randn(kHistogramKeys, hist_d_k);
  const Matrix hist_raw = Q_big * K_big.transpose();
  const Matrix hist_scaled = scaled_scores(Q_big, K_big);
  print_shape("Q", {kHistogramQueries, hist_d_k}, "entries ~ N(0, 1)");
  print_shape("K", {kHistogramKeys, hist_d_k}, "entries ~ N(0, 1)");
  const Spread hr = spread(hist_raw), hs = spread(hist_scaled);
  print_shape("Q K^T", {kHistogramQueries, kHistogramKeys});
  fmt::print("    std {:7.3f} (theory sqrt({}) = {:.3f}), range [{:.2f}, {:.2f}]\n", hr.std, hist_d_k,
             std::sqrt(double(hist_d_k)), hist_raw.minCoeff(), hist_raw.maxCoeff());
  print_shape("Q K^T / sqrt(d_k)", {kHistogramQueries, kHistogramKeys});
  fmt::print("    std {:7.3f} (theory 1), range [{:.2f}, {:.2f}]\n", hs.std, hist_scaled.minCoeff(),
             hist_scaled.maxCoeff());
  say("The shape of the distribution is the same; only its width changes, by sqrt(d_k).");
  return {hist_raw, hist_scaled};
}

}  // namespace sa::ch2
