// Chapter 2, step 7: length against angle. A score q . k = |q| |k| cos(theta)
// is the two lengths times the cosine of the angle between the vectors, and
// a longer key can win against a better-aligned one.
#include "02-scaling/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace sa::ch2 {

Geometry show_dot_product_geometry(const QKV& qkv, const std::vector<std::string>& tokens) {
  say("The dot product has a second reading: q . k = |q| |k| cos(theta), the two lengths times the cosine of "
      "the angle between the vectors. The angle says how well they point the same way; the lengths scale it. "
      "A longer key can win against a better-aligned one. By hand, in 2 dimensions, with q = (1, 0):");
  const float k1x = 1.0f, k1y = 0.1f, k2x = 3.0f, k2y = 3.0f;
  const double n1 = std::hypot(k1x, k1y), n2 = std::hypot(k2x, k2y);
  fmt::print("  k1 = ({}, {}): |k1| = {:.3f}, cos = {:.3f}, q . k1 = {}\n", k1x, k1y, n1, k1x / n1, k1x);
  fmt::print("  k2 = ({}, {}): |k2| = {:.3f}, cos = {:.3f}, q . k2 = {}\n", k2x, k2y, n2, k2x / n2, k2x);
  say("k1 points almost exactly along q (about 6 degrees off) and k2 at 45 degrees, yet k2 scores three times "
      "higher: it is more than four times longer.");

  const int64_t n = qkv.Q.rows();
  const Eigen::VectorXf q_len = qkv.Q.rowwise().norm(), k_len = qkv.K.rowwise().norm();
  const Matrix scores = qkv.Q * qkv.K.transpose();
  Geometry g;
  g.min_lengths = std::numeric_limits<double>::infinity();
  int64_t differ = 0, zero_rows = 0;
  std::string example;
  for (int64_t i = 0; i < n; ++i) {
    int64_t by_score = 0, by_angle = 0;
    double best_cos = -2;
    for (int64_t j = 0; j < n; ++j) {
      const double lengths = double(q_len(i)) * double(k_len(j));
      // A zero vector has no direction: count its pairs as cos 0 (no angle to speak of).
      const double c = lengths > 0 ? double(scores(i, j)) / lengths : 0.0;
      g.cosines.push_back(c);
      g.scores.push_back(scores(i, j));
      g.min_lengths = std::min(g.min_lengths, lengths);
      g.max_lengths = std::max(g.max_lengths, lengths);
      if (scores(i, j) > scores(i, by_score)) by_score = j;
      if (c > best_cos) best_cos = c, by_angle = j;
    }
    if (q_len(i) == 0.0f) ++zero_rows;
    // Cosines that tie within float rounding are one alignment: in one
    // dimension, or for parallel keys, every cosine is ±1, and the key with
    // the highest score is then as well aligned as any.
    const double score_cos = g.cosines[size_t(i * n + by_score)];
    if (score_cos < best_cos - 1e-5) {
      ++differ;
      if (example.empty()) {
        const double cos_score = scores(i, by_score) / (q_len(i) * k_len(by_score)),
                     cos_angle = scores(i, by_angle) / (q_len(i) * k_len(by_angle));
        // As many digits as it takes for the two cosines to read apart.
        int digits = 3;
        while (digits < 6 && fmt::format("{:.{}f}", cos_score, digits) == fmt::format("{:.{}f}", cos_angle, digits))
          ++digits;
        example = fmt::format("Query {} ('{}') scores highest with key {} ('{}': |k| {:.2f}, cos {:.{}f}, score "
                              "{:.3f}), but points most nearly the same way as key {} ('{}': |k| {:.2f}, cos "
                              "{:.{}f}, score {:.3f}).",
                              i, tokens[size_t(i)], by_score, tokens[size_t(by_score)], k_len(by_score), cos_score,
                              digits, scores(i, by_score), by_angle, tokens[size_t(by_angle)], k_len(by_angle),
                              cos_angle, digits, scores(i, by_angle));
      }
    }
  }
  fmt::print("  lengths in the running example: |q| from {:.3f} to {:.3f}, |k| from {:.3f} to {:.3f}\n",
             q_len.minCoeff(), q_len.maxCoeff(), k_len.minCoeff(), k_len.maxCoeff());
  const std::string zero_note =
      zero_rows ? fmt::format(" ({} query of length 0 has no direction)", zero_rows) : std::string();
  if (differ == 0)
    say(fmt::format("In {} of the running example, the key with the highest score is also the best-aligned "
                    "one{}: here length never overturned the angle.",
                    n == 1 ? std::string("the one row") : fmt::format("every one of the {} rows", n), zero_note));
  else
    say(fmt::format("In {} of the {} rows of the running example, the key with the highest score is not the "
                    "best-aligned one{}. {}",
                    differ, n, zero_note, example));
  say("Scaling by 1/sqrt(d_k) divides every score alike, so it changes neither of these rankings; it only "
      "keeps the sizes in a range softmax handles well. Lengths are learned like everything else: a key "
      "that grows during training makes every score it takes part in larger in size, for or against it.");
  return g;
}

}  // namespace sa::ch2
