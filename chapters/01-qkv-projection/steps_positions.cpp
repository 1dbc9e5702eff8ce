// Chapter 1, step 10: how the sinusoidal encodings of two positions relate,
// by their dot products and by the fixed map that moves every position by k.
#include "01-qkv-projection/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch1 {

namespace {

// PE(p + k) from PE(p) for every p, with one fixed matrix: each (sin, cos)
// pair of frequency w turns by the angle w·k,
//   sin(w(p + k)) =  sin(wp) cos(wk) + cos(wp) sin(wk)
//   cos(w(p + k)) = -sin(wp) sin(wk) + cos(wp) cos(wk),
// so M_k is block diagonal with one 2 x 2 rotation per pair, and
// PE(p + k) = PE(p) M_k (rows are positions). With an odd d_model the last
// column is a sine without its cosine; M_k leaves it as it is (0 on the
// diagonal would be as wrong): no fixed linear map can advance it.
Matrix offset_map(int64_t d_model, int64_t k) {
  Matrix M = Matrix::Zero(d_model, d_model);
  for (int64_t j = 0; j + 1 < d_model; j += 2) {
    const double w = 1.0 / std::pow(10000.0, double(j) / double(d_model));
    const float c = float(std::cos(w * double(k))), s = float(std::sin(w * double(k)));
    M(j, j) = c;       // new sin gets  sin(wp) cos(wk)
    M(j + 1, j) = s;   //             + cos(wp) sin(wk)
    M(j, j + 1) = -s;  // new cos gets -sin(wp) sin(wk)
    M(j + 1, j + 1) = c;  //           + cos(wp) cos(wk)
  }
  if (d_model % 2 == 1) M(d_model - 1, d_model - 1) = 1.0f;
  return M;
}

}  // namespace

// Step 10: how the encodings of two positions relate. Returns PE · PEᵀ over
// `positions` positions for the figure.
Matrix show_position_similarity(const Options& o, int64_t positions) {
  const Matrix PE = positional_encoding(positions, o.d_model);
  const Matrix S = PE * PE.transpose();  // S[p, q] = PE(p) . PE(q)
  const int64_t pairs = o.d_model / 2;  // (sin, cos) pairs; an odd d_model ends with a lone sine
  say(fmt::format("The dot product of two positions' encodings, PE(p) . PE(q), over {} positions with d_model {}. "
                  "Each (sin, cos) pair of frequency w adds sin(wp) sin(wq) + cos(wp) cos(wq) = cos(w (p - q)), "
                  "which depends on the offset p - q only, not on where the two positions are{}.",
                  positions, o.d_model,
                  pairs == 0 ? "; with d_model 1 there is no pair, only one sine column"
                  : o.d_model % 2 == 1 ? fmt::format(" (here {} and one lone sine)", count_of(pairs, "pair"))
                                       : fmt::format(" (here {})", count_of(pairs, "pair"))));
  const int64_t shown = std::min<int64_t>(8, positions);
  std::vector<std::string> labels;
  for (int64_t p = 0; p < shown; ++p) labels.push_back(std::to_string(p));
  print_labelled("PE PE^T, first positions", S.topLeftCorner(shown, shown), labels, labels,
                 {.precision = 2, .axes = "(rows: position p, columns: position q)"}, {positions, positions});
  // The same offset gives the same number wherever it sits (measured over
  // every pair p, p + k of the positions).
  double worst = 0;
  for (int64_t k = 0; k < positions; ++k)
    for (int64_t p = 0; p + k < positions; ++p) worst = std::max(worst, double(std::abs(S(p, p + k) - S(0, k))));
  std::string by_offset;
  for (int64_t k : {0, 1, 2, 4, 8, 16, 32})
    if (k < positions) by_offset += fmt::format("{}k = {}: {:.2f}", by_offset.empty() ? "" : ", ", k, S(0, k));
  fmt::print("  by offset: {}\n", by_offset);
  // An odd d_model's lone sine makes the difference real, so it is printed
  // as a number; otherwise it is rounding in sums of d_model terms of size 1.
  if (o.d_model % 2 == 1)
    fmt::print("  largest |PE(p) . PE(p + k) - PE(0) . PE(k)| over all p, k: {:.1e} (d_model is odd: the last column, "
               "a sine without its cosine, adds sin(wp) sin(wq), which is not a function of p - q)\n",
               worst);
  else
    fmt::print("  largest |PE(p) . PE(p + k) - PE(0) . PE(k)| over all p, k: {} (float32 rounding)\n",
               rounding(worst, rounding_bound(double(o.d_model))));
  if (pairs > 0)
    say(fmt::format("At offset 0 every pair adds cos 0 = 1, the largest a cosine can be: PE(0) . PE(0) = {:.2f}, one "
                    "per pair{}.{}",
                    S(0, 0),
                    o.d_model % 2 == 1 ? " (the lone sine is 0 at position 0; elsewhere it adds up to 1 more)" : "",
                    pairs < 8 ? ""
                    : o.plots ? " Nearby positions stay close to it; further away the fast pairs cancel out and the "
                                "sum falls, with ripples where some frequencies come back in phase: the band along "
                                "the diagonal of pe_similarity.png."
                              : " Nearby positions stay close to it; further away the fast pairs cancel out and the "
                                "sum falls, with ripples where some frequencies come back in phase."));
  // The relative-offset property: one matrix per k moves every position.
  if (pairs == 0) {
    say("With no (sin, cos) pair there is no fixed map from PE(p) to PE(p + k) either: sin(w (p + k)) needs "
        "cos(wp), which this encoding does not hold.");
    return S;
  }
  std::string moved;
  for (int64_t k : {1, 5, 10}) {
    if (k >= positions) continue;
    const Matrix M = offset_map(o.d_model, k);
    const int64_t pairs = o.d_model - o.d_model % 2;  // the columns M advances
    const Matrix moved_pe = PE.topRows(positions - k) * M;
    const float err = pairs == 0 ? 0.0f
                                 : (moved_pe.leftCols(pairs) - PE.bottomRows(positions - k).leftCols(pairs))
                                       .cwiseAbs()
                                       .maxCoeff();
    moved += fmt::format("{}k = {}: {}", moved.empty() ? "" : ", ", k, rounding(err, 1e-6));
  }
  say(fmt::format("PE(p + k) is a fixed linear map of PE(p), the same for every p: M_k turns each (sin, cos) pair "
                  "by the angle w k. Largest |PE(p) M_k - PE(p + k)| over every p{}: {}.",
                  o.d_model % 2 == 1 ? " (on the paired columns; the lone last sine has no such map)" : "", moved));
  return S;
}

}  // namespace sa::ch1
