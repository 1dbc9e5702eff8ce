// Chapter 6, steps 7 and 8: the backward pass through dropout (the same
// mask, the same scale, checked by finite differences), and the edges p = 0,
// p = 1 and p outside [0, 1].
#include "06-dropout/dropout.hpp"
#include "06-dropout/steps.hpp"

#include "sa/gradcheck.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sa::ch6 {

namespace {

// True when `after` is at the same place in its stream as `before` was:
// the call in between drew nothing.
bool drew_nothing(Generator before, Generator after) { return before.random() == after.random(); }

}  // namespace

void backward_pass(const Example& ex, const Options& o, const Draw& draw, Generator& gen) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const QKV& qkv = ex.qkv;
  const Matrix& weights = ex.att.weights;
  const Generator& before_draw = draw.before_draw;
  const DropoutResult& drop = draw.drop;
  const int64_t kept = draw.kept;
  const std::string scale = scale_text(o.p);
  say("With the mask fixed, dropout multiplies each weight by its own factor m_ij = keep_ij / (1-p). The Jacobian "
      "is diagonal, so the gradient takes the same path back: dL/dw_ij = dL/dy_ij * m_ij. A dropped weight gets "
      "no gradient in this step; a kept one gets the incoming gradient times 1/(1-p). Nothing new is drawn: the "
      "forward must keep its mask for the backward.");
  // An upstream gradient dL/d(output), as some loss would send back; drawn
  // on the main generator right after step 2's dropout, like torch.randn(1, 6, 64) would be.
  const Matrix G = gen.randn(seq_len, kDK);
  const Matrix d_dropped = G * qkv.V.transpose();  // output = dropped V  =>  dL/d(dropped) = G V^T
  const Matrix d_weights = dropout_backward(d_dropped, drop.keep, o.p);
  print_shape("dL/d(output) = G", {1, seq_len, kDK}, "drawn from N(0, 1) for the demonstration");
  print_labelled("dL/d(dropout(weights)) = G V^T", d_dropped, tokens, tokens);
  print_labelled("dL/d(weights) = dropout_backward(G V^T, keep, p)", d_weights, tokens, tokens);
  {
    int64_t zero_where_dropped = 0, scaled_where_kept = 0;
    const float s = o.p < 1.0 ? 1.0f / float(1.0 - o.p) : 0.0f;
    for (int64_t i = 0; i < seq_len; ++i)
      for (int64_t j = 0; j < seq_len; ++j) {
        if (!drop.keep(i, j)) zero_where_dropped += d_weights(i, j) == 0.0f;
        if (drop.keep(i, j)) scaled_where_kept += d_weights(i, j) == d_dropped(i, j) * s;
      }
    // (At p = 0 nothing is dropped and at p = 1 nothing is kept: that half
    // of the count is left out rather than printed as 0/0.)
    std::vector<std::string> counts;
    if (kept < weights.size())
      counts.push_back(fmt::format("exactly 0 where dropped: {}/{}", zero_where_dropped, weights.size() - kept));
    if (kept > 0)
      counts.push_back(fmt::format("exactly {} x incoming where kept: {}/{}", scale, scaled_where_kept, kept));
    fmt::print("  {}\n", fmt::join(counts, ";  "));
  }
  // Finite differences: L(w) = sum(G * (dropout(w) V)), the same mask replayed
  // by copying the generator as it was before step 2's draw.
  auto loss = [&](const Matrix& w) {
    Generator replay = before_draw;
    // In double from here on, so that float rounding of the product does
    // not drown the small difference the step h makes.
    const Eigen::MatrixXd y = dropout(w, o.p, replay).output.cast<double>() * qkv.V.cast<double>();
    return y.cwiseProduct(G.cast<double>()).sum();
  };
  std::vector<std::pair<int64_t, int64_t>> probes;
  for (bool want_kept : {true, false})
    for (int64_t k = 0; k < weights.size(); ++k)
      if (drop.keep(k / seq_len, k % seq_len) == want_kept) {
        probes.emplace_back(k / seq_len, k % seq_len);
        break;
      }
  const float h = 1e-3f;
  for (const auto& [i, j] : probes) {
    Matrix moved = weights;
    const double numeric = central_difference(moved(i, j), h, [&] { return loss(moved); });
    fmt::print("  weight [{}, {}] (query '{}', key '{}', {}): backward {:.5f}, finite differences {:.5f}\n", i, j,
               tokens[size_t(i)], tokens[size_t(j)], drop.keep(i, j) ? "kept" : "dropped", d_weights(i, j), numeric);
  }
  say("Finite differences replay the same mask by copying the generator as it was before the draw: with a fresh "
      "mask on each side the difference would measure the noise, not the gradient.");
}

void the_edges(const Example& ex, uint64_t seed) {
  const Matrix& weights = ex.att.weights;
  Generator g0(seed);
  const Generator g0_before = g0;
  const DropoutResult r0 = dropout(weights, 0.0, g0);
  fmt::print("  p = 0: output identical to the weights bit for bit: {}; kept {}/{}; random numbers drawn: {}\n",
             r0.output == weights ? "yes" : "no", count_kept(r0.keep), weights.size(),
             drew_nothing(g0_before, g0) ? "none" : "some");
  Generator g1(seed);
  const Generator g1_before = g1;
  const DropoutResult r1 = dropout(weights, 1.0, g1);
  fmt::print("  p = 1: all zeros: {}; NaN or inf entries: {}; kept {}/{}; random numbers drawn: {}\n",
             r1.output.isZero(0.0f) ? "yes" : "no", r1.output.size() - r1.output.array().isFinite().count(),
             count_kept(r1.keep), weights.size(), drew_nothing(g1_before, g1) ? "none" : "some");
  say("At p = 1 the scale 1/(1-p) would be 1/0 = inf, and a dropped weight would be 0 * inf = NaN; dropout "
      "returns zeros without ever forming the scale. Neither end draws random numbers, as in PyTorch, so the "
      "generator's stream is the same as in Python afterwards.");
  for (double bad : {1.5, -0.1}) {
    try {
      Generator g(seed);
      (void)dropout(weights, bad, g);
      fmt::print("  p = {:g}: accepted (wrong!)\n", bad);
    } catch (const std::invalid_argument& e) {
      fmt::print("  p = {:g}: refused: {}\n", bad, e.what());
    }
  }
  say("On the command line the same rule holds: --p 1.5 prints one line and exits with status 2.");
}

}  // namespace sa::ch6
