// Chapter 8, steps 2 to 5: online softmax, tiled attention, its causal
// variant and its backward.
#include "03-softmax/softmax.hpp"
#include "05-causal-mask/mask.hpp"
#include "08-efficient-attention/efficient.hpp"
#include "sa/measure.hpp"
#include "08-efficient-attention/steps.hpp"

#include "sa/plot.hpp"
#include "sa/gradcheck.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace sa::ch8 {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

float max_abs_diff(const Matrix& a, const Matrix& b) { return (a - b).cwiseAbs().maxCoeff(); }

// Two computations of the same attention (or its gradients) in another
// order differ by float32 rounding: values of order 1, sums of 10 terms for
// the small example and of up to seq_len terms for the large one. Their
// digits depend on the CPU's vector width, so they print as these bounds.
constexpr double kSmallBound = 1e-6, kLargeBound = 1e-4;

std::string naive_skipped(int64_t seq_len) {
  return fmt::format("seq_len {} is above {}: the naive path would hold two {} x {} float matrices ({}), so only "
                     "the tiled path runs.",
                     seq_len, kNaiveMaxSeqLen, seq_len, seq_len, bytes_str(2.0 * double(seq_len) * double(seq_len) * 4));
}

// Chapter 3's backward of attention, built from its pieces with the whole
// (seq_q, seq_k) matrix of weights: the reference the tiled backward must
// match. mask: none, or chapter 5's causal mask.
AttentionGrads reference_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, bool causal) {
  const Attention a = causal ? masked_attention(Q, K, V, causal_mask(Q.rows())) : attention(Q, K, V);
  const float scale = 1.0f / std::sqrt(float(Q.cols()));
  const Matrix dS = softmax_backward(a.weights, dO * V.transpose());
  return {dS * K * scale, dS.transpose() * Q * scale, a.weights.transpose() * dO};
}

// Attention in double precision (the yardstick for finite differences):
// L = Σ O ∘ R for a fixed R, so dL/dO = R.
double loss_double(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& R, bool causal) {
  const Eigen::MatrixXd q = Q.cast<double>(), k = K.cast<double>(), v = V.cast<double>();
  Eigen::MatrixXd s = q * k.transpose() / std::sqrt(double(Q.cols()));
  double loss = 0;
  for (int64_t i = 0; i < s.rows(); ++i) {
    const int64_t n = causal ? i + 1 : s.cols();
    Eigen::RowVectorXd p = s.row(i).head(n);
    p = (p.array() - p.maxCoeff()).exp();
    p /= p.sum();
    loss += (p * v.topRows(n)).dot(R.row(i).cast<double>());
  }
  return loss;
}

}  // namespace

void online_softmax_demo(const Small& small, Figures& figures) {
  const Matrix row = small.Q.row(0) * small.K.transpose() / std::sqrt(float(Small::d_k));
  say(fmt::format("Softmax needs the row's maximum before its first exp (chapter 3), so it reads the row twice. "
                  "Online softmax keeps two numbers while it reads: the maximum m so far and the sum l of exp(x - m) "
                  "so far. When a new maximum arrives, every term already in l was taken against the old m; one "
                  "factor exp(m_old - m_new) moves them all to the new one. The row: query 0's {} scaled scores of "
                  "the small example (Q, K, V of shape ({}, {}), drawn from the seed).",
                  Small::seq_len, Small::seq_len, Small::d_k));
  print_tensor("scores[0]", row, {1, Small::seq_len});
  fmt::print("  {:>3}  {:>9}  {:>9}  {:>9}  {:>16}  {:>9}\n", "j", "x_j", "m before", "m after", "rescale l by", "l after");
  OnlineSoftmax state;
  std::vector<double> js, xs, ms, ls;
  for (int64_t j = 0; j < row.cols(); ++j) {
    const float before = state.max, x = row(0, j);
    online_softmax_update(state, x);
    const std::string rescale = x > before ? (before == -kInf ? "(first score)" : format_value(std::exp(before - x)))
                                           : "1 (no new max)";
    fmt::print("  {:>3}  {:>9}  {:>9}  {:>9}  {:>16}  {:>9}\n", j, format_value(x), format_value(before),
               format_value(state.max), rescale, format_value(state.sum));
    js.push_back(double(j));
    xs.push_back(x);
    ms.push_back(state.max);
    ls.push_back(state.sum);
  }
  const Matrix online = online_softmax_rows(row), classic = softmax_rows(row);
  print_tensor("online_softmax_rows(scores[0]) = exp(x - m) / l", online, {1, Small::seq_len});
  fmt::print("  softmax_rows (chapter 3), largest difference: {} (float32 rounding)\n",
             rounding(max_abs_diff(online, classic), 1e-6));
  OnlineSoftmax masked = state;
  online_softmax_update(masked, -kInf);
  say(fmt::format("A masked score (-inf) leaves the state as it was (m {}, l {}): exp(-inf) adds 0. A row of only "
                  "-inf keeps l = 0 and gets zero weights, as chapter 3's softmax_rows does.",
                  format_value(masked.max), format_value(masked.sum)));

  figures.draw("online_softmax.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Online softmax over query 0's scores: the running maximum m and sum l";
    p.xlabel = "key j (scores read left to right)";
    p.ylabel = "value";
    // The scores last, on top: a score that sets a new maximum sits on m's
    // curve, and drawn first it was hidden under m's marker.
    p.series = {{"running max m", js, ms, plot::Series::Style::LinesPoints},
                {"running sum l = sum of exp(x - m)", js, ls, plot::Series::Style::LinesPoints},
                {"score x_j", js, xs, plot::Series::Style::Points}};
    return plot::lines(path, p);
  });
}

// The query rows of the small example whose running maximum grows in the
// most key blocks, the ones that show the rescaling best: every such row
// (a tie is common) and how many blocks that is. The demo shows the last.
struct MostRescales {
  std::vector<int64_t> rows;
  int64_t count = 0;
};
MostRescales rows_with_most_rescales(const Small& small) {
  constexpr int64_t T = Small::seq_len, B = Small::block;
  const Matrix S = small.Q * small.K.transpose();
  MostRescales best{{}, -1};
  for (int64_t r = 0; r < T; ++r) {
    int64_t count = 0;
    float m = S.row(r).head(B).maxCoeff();
    for (int64_t k0 = B; k0 < T; k0 += B) {
      const float block_max = S.row(r).segment(k0, std::min(B, T - k0)).maxCoeff();
      count += block_max > m;
      m = std::max(m, block_max);
    }
    if (count > best.count) best = {{}, count};
    if (count == best.count) best.rows.push_back(r);
  }
  return best;
}

// "2 and 5", "2, 5 and 7": the rows that tie with the one shown.
std::string and_list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + std::to_string(v[i]);
  return s;
}

void tiled_forward_demo(const Small& small, const Large& large, const Options& o) {
  constexpr int64_t T = Small::seq_len, B = Small::block;
  const MostRescales most = rows_with_most_rescales(small);
  const int64_t row = most.rows.back();
  const std::vector<int64_t> others(most.rows.begin(), most.rows.end() - 1);
  const int64_t later_blocks = (T + B - 1) / B - 1;
  say(fmt::format("Online softmax a tile at a time: query rows in blocks of {}, key rows in blocks of {}. For each "
                  "query block, every key block gives a ({}, {}) tile of scores; each query row keeps its m, its l "
                  "and its output so far, acc = sum of exp(x - m) v, all rescaled by exp(m_old - m_new) when m "
                  "grows. At the end, output = acc / l. With seq_len {} the last blocks hold only {} rows. Query "
                  "{}, whose maximum grows at {} of the {} later key blocks (no query's grows more often{}), after "
                  "each key block:",
                  B, B, B, B, T, T % B, row, most.count, later_blocks,
                  others.empty() ? std::string()
                                 : fmt::format("; {} {} with it", others.size() == 1 ? "query" : "queries",
                                               and_list(others) + (others.size() == 1 ? " ties" : " tie"))));
  const float scale = 1.0f / std::sqrt(float(Small::d_k));
  float m = -kInf, l = 0;
  RowVector acc = RowVector::Zero(Small::d_k);
  for (int64_t k0 = 0; k0 < T; k0 += B) {
    const int64_t n = std::min(B, T - k0);
    RowVector s = small.Q.row(row) * small.K.middleRows(k0, n).transpose() * scale;
    const float m_new = std::max(m, s.maxCoeff());
    const float alpha = std::exp(m - m_new);
    s = (s.array() - m_new).exp().matrix();
    l = alpha * l + s.sum();
    acc = alpha * acc + s * small.V.middleRows(k0, n);
    m = m_new;
    fmt::print("  keys {}..{}: m {}, rescale {}, l {}, acc {}\n", k0, k0 + n - 1, format_value(m),
               k0 == 0 ? "(first block)" : format_value(alpha), format_value(l), format_row(acc));
  }
  const TiledAttention tiled = tiled_attention(small.Q, small.K, small.V, false, B);
  const Attention naive = attention(small.Q, small.K, small.V);
  fmt::print("  output[{}] = acc / l: {}\n", row, format_row(acc / l));
  print_tensor("tiled_attention(Q, K, V, block 4).output", tiled.output, {T, Small::d_k});
  print_tensor("lse = m + log(l), one per query row (kept for the backward)", tiled.lse.transpose(), {T});
  fmt::print("  chapter 3's attention, largest difference: {}\n",
             rounding(max_abs_diff(tiled.output, naive.output), kSmallBound));

  const int64_t N = large.Q.rows();
  say(fmt::format("Now Q, K, V of shape ({}, {}), tiles of {} x {}:", N, o.d_k, o.block, o.block));
  TiledAttention big;
  auto run_tiled = [&] { big = tiled_attention(large.Q, large.K, large.V, false, o.block); };
  const auto tiled_extra = measure::extra_bytes(run_tiled, N * o.d_k * 4);
  const double tiled_ms = measure::median_ms(run_tiled, 0.2);
  print_shape("output", {N, o.d_k});
  print_shape("lse", {N});
  fmt::print("  tiled: {:.3f} ms, extra memory {}\n", tiled_ms, measured_bytes_str(tiled_extra));
  if (!large.naive_fits) {
    say(naive_skipped(N));
    return;
  }
  Attention reference;
  auto run_naive = [&] { reference = attention(large.Q, large.K, large.V); };
  const auto naive_extra = measure::extra_bytes(run_naive, N * o.d_k * 4);
  const double naive_ms = measure::median_ms(run_naive, 0.2);
  fmt::print("  naive: {:.3f} ms, extra memory {}\n", naive_ms, measured_bytes_str(naive_extra));
  const float diff = max_abs_diff(big.output, reference.output);
  fmt::print("  largest difference from chapter 3's attention: {} (float32 rounding of sums taken in "
             "another order)\n",
             rounding(diff, kLargeBound));
}

void causal_demo(const Small& small, const Large& large, const Options& o, Figures& figures) {
  constexpr int64_t T = Small::seq_len, B = Small::block;
  const int64_t nb = (T + B - 1) / B;
  say("Under chapter 5's causal mask, query i sees keys 0..i. A tile whose first key comes after its last query is "
      "hidden entirely: it is skipped, never computed. A tile the diagonal crosses is computed and masked element "
      "by element. The rest are computed whole. For the small example (F full, M masked, . skipped):");
  for (int64_t qb = 0; qb < nb; ++qb) {
    std::string line;
    for (int64_t kb = 0; kb < nb; ++kb) line += kb < qb ? " F" : kb == qb ? " M" : " .";
    fmt::print("  queries {}..{}:{}\n", qb * B, std::min(T, (qb + 1) * B) - 1, line);
  }
  const TiledAttention tiled = tiled_attention(small.Q, small.K, small.V, true, B);
  const Attention masked = masked_attention(small.Q, small.K, small.V, causal_mask(T));
  print_tensor("tiled_attention(Q, K, V, causal, block 4).output", tiled.output, {T, Small::d_k});
  fmt::print("  chapter 5's masked_attention, largest difference: {}\n",
             rounding(max_abs_diff(tiled.output, masked.output), kSmallBound));

  const int64_t N = large.Q.rows(), nbl = (N + o.block - 1) / o.block;
  const int64_t computed = nbl * (nbl + 1) / 2;
  say(fmt::format("At seq_len {} with tiles of {}: {} x {} tiles, of which {} computed ({} of them masked on the "
                  "diagonal) and {} skipped.",
                  N, o.block, nbl, nbl, computed, nbl, nbl * nbl - computed));
  TiledAttention full, causal;
  const double full_ms = measure::median_ms([&] { full = tiled_attention(large.Q, large.K, large.V, false, o.block); }, 0.2);
  const double causal_ms = measure::median_ms([&] { causal = tiled_attention(large.Q, large.K, large.V, true, o.block); }, 0.2);
  fmt::print("  full {:.3f} ms, causal {:.3f} ms: {:.2f} of the time for {:.2f} of the tiles\n", full_ms, causal_ms,
             causal_ms / full_ms, double(computed) / double(nbl * nbl));
  // Checks that hold at any size, without the naive path: query 0 sees only
  // key 0 (its output is V's row 0), and the last query sees every key (its
  // row equals the unmasked one).
  fmt::print("  query 0 sees only key 0: |output[0] - V[0]| {}; the last query sees every key: |causal - "
             "full| on its row {}\n",
             rounding((causal.output.row(0) - large.V.row(0)).cwiseAbs().maxCoeff(), kSmallBound),
             rounding((causal.output.row(N - 1) - full.output.row(N - 1)).cwiseAbs().maxCoeff(), kLargeBound));
  if (large.naive_fits) {
    const Attention ref = masked_attention(large.Q, large.K, large.V, causal_mask(N));
    fmt::print("  chapter 5's masked_attention, largest difference: {}\n",
               rounding(max_abs_diff(causal.output, ref.output), kLargeBound));
  } else {
    say(naive_skipped(N));
  }

  // The schedule of the large run (at most 32 x 32 tiles drawn).
  const int64_t drawn = std::min<int64_t>(nbl, 32);
  figures.draw("causal_schedule.png", [&](const std::string& path) {
    plot::Heatmap h;
    // (two lines: with "the first 32 x 32 tiles" one line ran past the canvas)
    h.title = fmt::format("Which tiles causal tiled attention computes\nseq_len {}, tiles of {} x {}{}", N, o.block,
                          o.block, drawn < nbl ? fmt::format(" (the first {} x {} tiles)", drawn, drawn) : "");
    // Three kinds of tile, so three flat colours and their names, not a scale.
    h.categories = {"skipped (above the diagonal)", "computed, then masked", "computed in full"};
    h.category_colours = {"#f2f2f2", "#9ecae1", "#2171b5"};
    h.values = Matrix(drawn, drawn);
    for (int64_t i = 0; i < drawn; ++i)
      for (int64_t j = 0; j < drawn; ++j) h.values(i, j) = j < i ? 2.0f : j == i ? 1.0f : 0.0f;
    // Every tile is drawn the same size; a last tile that the sequence
    // does not fill says how many rows and columns it has.
    const int64_t last = N - (nbl - 1) * o.block;
    const bool partial = drawn == nbl && last < o.block;
    for (int64_t i = 0; i < drawn; ++i) {
      const std::string first = std::to_string(i * o.block);
      h.row_labels.push_back(partial && i == drawn - 1 ? fmt::format("{} ({})", first, last) : first);
      h.col_labels.push_back(h.row_labels.back());
    }
    h.xlabel = "first key of the tile" +
               (partial ? fmt::format(" (in brackets: the last tile's {})", count_of(last, "key")) : "");
    h.ylabel = "first query of the tile" +
               (partial ? fmt::format(" (in brackets: its {})", count_of(last, "query", "queries")) : "");
    h.annotate = false;  // the colours and the legend say it
    return plot::heatmap(path, h, 1000, 700);
  });
}

void backward_demo(const Small& small, const Large& large, const Options& o) {
  say("The backward needs the weights P of every tile again. Storing them would bring back the (seq_len, seq_len) "
      "matrix; instead each tile recomputes its scores S and P = exp(S - lse) from the one number per row the "
      "forward kept. With D = rowsum(dO * O): dV += P^T dO, dP = dO V^T, dS = P * (dP - D), dQ += dS K / sqrt(d_k), "
      "dK += dS^T Q / sqrt(d_k): chapter 3's softmax_backward, tile by tile.");
  const Matrix& dO = small.dO;
  for (const bool causal : {false, true}) {
    const TiledAttention fwd = tiled_attention(small.Q, small.K, small.V, causal, Small::block);
    const AttentionGrads g = tiled_attention_backward(small.Q, small.K, small.V, fwd, dO, causal, Small::block);
    const AttentionGrads ref = reference_backward(small.Q, small.K, small.V, dO, causal);
    fmt::print("  {}: against chapter 3's pieces, largest difference dQ {}, dK {}, dV {}\n",
               causal ? "causal" : "full  ", rounding(max_abs_diff(g.dQ, ref.dQ), kSmallBound),
               rounding(max_abs_diff(g.dK, ref.dK), kSmallBound), rounding(max_abs_diff(g.dV, ref.dV), kSmallBound));
    // Central differences in double of L = sum(O * dO) for one entry of each.
    constexpr double h = 1e-3;
    auto numeric = [&](int which, int64_t i, int64_t j) {
      Matrix args[3] = {small.Q, small.K, small.V};
      return central_difference(args[which](i, j), float(h),
                                [&] { return loss_double(args[0], args[1], args[2], dO, causal); });
    };
    fmt::print("          finite differences: dQ[3, 1] {} vs {}, dK[2, 0] {} vs {}, dV[5, 2] {} vs {}\n",
               format_value(g.dQ(3, 1), 5), format_value(numeric(0, 3, 1), 5), format_value(g.dK(2, 0), 5),
               format_value(numeric(1, 2, 0), 5), format_value(g.dV(5, 2), 5),
               format_value(numeric(2, 5, 2), 5));
  }

  const int64_t N = large.Q.rows();
  const TiledAttention fwd = tiled_attention(large.Q, large.K, large.V, false, o.block);
  AttentionGrads g;
  auto run_backward = [&] { g = tiled_attention_backward(large.Q, large.K, large.V, fwd, large.dO, false, o.block); };
  const auto extra = measure::extra_bytes(run_backward, 3 * N * o.d_k * 4);
  const double backward_ms = measure::median_ms(run_backward, 0.2);
  const double forward_ms = measure::median_ms([&] { tiled_attention(large.Q, large.K, large.V, false, o.block); }, 0.2);
  // The backward does 2.5 times the forward's operations: measured faster
  // than the forward, one of the two timings was disturbed (on a busy core
  // this printed 0.7), and the reason it is slower would contradict it.
  const std::string work =
      "it computes the scores again and four more products where the forward has one, 10 against 4 T^2 d_k "
      "operations";
  say(backward_ms >= forward_ms
          ? fmt::format("At seq_len {}: the backward takes {:.3f} ms, {:.1f} times the forward ({:.3f} ms): {}. "
                        "Extra memory: {}.",
                        N, backward_ms, backward_ms / forward_ms, forward_ms, work, measured_bytes_str(extra))
          : fmt::format("At seq_len {}: the backward took {:.3f} ms, {:.2f} times the forward ({:.3f} ms), although "
                        "{}: one of the two timings was disturbed (another program on this core?), run again. "
                        "Extra memory: {}.",
                        N, backward_ms, backward_ms / forward_ms, forward_ms, work, measured_bytes_str(extra)));
  // Identities that hold at any size: the columns of P sum over queries to
  // what dO sums to, and softmax ignores a shift of all scores, so the keys'
  // gradients sum to zero.
  // Sums of N rows: their rounding grows with the sum of the terms' sizes.
  fmt::print("  sum over rows of dV - sum over rows of dO: {} (P's rows sum to 1); sum over rows of dK: {} "
             "(dS's rows sum to 0)\n",
             rounding((g.dV.colwise().sum() - large.dO.colwise().sum()).cwiseAbs().maxCoeff(),
                      rounding_bound(large.dO.cwiseAbs().colwise().sum().maxCoeff())),
             rounding(g.dK.colwise().sum().cwiseAbs().maxCoeff(),
                      rounding_bound(g.dK.cwiseAbs().colwise().sum().maxCoeff())));
  if (large.naive_fits) {
    const AttentionGrads ref = reference_backward(large.Q, large.K, large.V, large.dO, false);
    fmt::print("  against chapter 3's pieces: largest difference dQ {}, dK {}, dV {}\n",
               rounding(max_abs_diff(g.dQ, ref.dQ), kLargeBound), rounding(max_abs_diff(g.dK, ref.dK), kLargeBound),
               rounding(max_abs_diff(g.dV, ref.dV), kLargeBound));
  } else {
    say(naive_skipped(N));
  }
}

}  // namespace sa::ch8
