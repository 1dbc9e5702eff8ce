// Chapter 4, steps 10 to 12: what each head does (entropy and focus), the
// parameter count of every split of d_model, and the einsum reading of the
// whole computation, checked with plain loops.
#include "03-softmax/softmax.hpp"
#include "04-multi-head/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace sa::ch4 {

HeadStats head_stats(const Matrix& w) {
  const auto H = row_entropy(w);
  HeadStats s{};
  s.min_entropy = *std::min_element(H.begin(), H.end());
  s.max_entropy = *std::max_element(H.begin(), H.end());
  for (double h : H) s.mean_entropy += h / double(H.size());
  s.focus = focus(w);
  s.top_weight = w.maxCoeff(&s.top_query, &s.top_key);
  return s;
}

std::vector<HeadStats> what_each_head_does(const Input& in, const QKV& qkv, const MultiHead& mh) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads;
  const std::vector<std::string>& tokens = in.tokens;
  const Matrix& Q = qkv.Q;
  std::vector<HeadStats> stats;
  for (int64_t h = 0; h < n_heads; ++h) stats.push_back(head_stats(mh.weights.view(0, h)));
  const Attention single = attention(Q, qkv.K, qkv.V);  // one head over all d_model columns
  const HeadStats one = head_stats(single.weights);
  const double log_n = std::log(double(seq_len));
  fmt::print("  {:<18} {:>8} {:>8} {:>8} {:>10} {:>7}   {}\n", "", "mean H", "min H", "max H", "H / log n", "focus",
             "strongest weight");
  auto stats_row = [&](const std::string& name, const HeadStats& s) {
    // One key: log n = 0, and H / log n is 0/0 (shown as -).
    fmt::print("  {:<18} {:>8.4f} {:>8.4f} {:>8.4f} {:>10} {:>7.4f}   {} -> {} {:.4f}\n", name, s.mean_entropy,
               s.min_entropy, s.max_entropy, log_n > 0 ? fmt::format("{:.4f}", s.mean_entropy / log_n) : "-", s.focus,
               tokens[size_t(s.top_query)], tokens[size_t(s.top_key)], s.top_weight);
  };
  for (int64_t h = 0; h < n_heads && h < kMaxPanels; ++h) stats_row(fmt::format("head {}", h), stats[size_t(h)]);
  if (n_heads > kMaxPanels) fmt::print("  ... ({})\n", count_of(n_heads - kMaxPanels, "more head"));
  stats_row(fmt::format("one head, d_k {}", d_model), one);
  fmt::print("  {:<18} {:>8.4f} {:>8} {:>8} {:>10} {:>7.4f}\n", "uniform row", log_n, "", "", log_n > 0 ? "1.0000" : "-",
             1.0 / double(seq_len));
  say(fmt::format("Entropy in nats (log {} = {:.4f} is the most a row over {} can have) and focus, the mean "
                  "largest weight (1/{} = {:.4f} for uniform rows, 1 for one-hot). The last row but one is "
                  "chapter 3's single attention over {}, for comparison. Untrained, the weights "
                  "are drawn at random, so whatever differs between heads is chance. Training is what makes them specialise: "
                  "chapter 7 trains heads like these and measures how far their entropy falls.",
                  seq_len, log_n, count_of(seq_len, "key"), seq_len, 1.0 / double(seq_len),
                  d_model == 1 ? std::string("the one column") : fmt::format("all {} columns", d_model)));
  return stats;
}

void count_parameters(const Input& in) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const AttentionParams& params = in.params;
  const int64_t weight_count = 4 * d_model * d_model, bias_count = 4 * d_model;
  fmt::print("  W_q, W_k, W_v, W_o   4 x {} x {} = {}\n", d_model, d_model, weight_count);
  fmt::print("  their biases         4 x {}      = {}\n", d_model, bias_count);
  fmt::print("  total                4 d_model^2 + 4 d_model = {}   (counted from the layers: {})\n",
             weight_count + bias_count, params.parameter_count());
  fmt::print("  per head: a ({}, {}) slice of each of W_q, W_k, W_v = 3 x {} x {} = {}; x {} = {} = 3 "
             "d_model^2\n",
             d_model, d_k, d_model, d_k, 3 * d_model * d_k, count_of(n_heads, "head"), 3 * n_heads * d_model * d_k);
  fmt::print("\n  {:>8} {:>6}  {:>17}  {:>17}  {:>20}\n", "n_heads", "d_k", "parameters", "without biases",
             "score products");
  for (int64_t h = 1; h <= d_model; ++h) {
    if (d_model % h != 0) continue;
    const int64_t dk = d_model / h;
    // Every head of every configuration uses the same four (d_model, d_model)
    // layers; only the way their columns are grouped changes.
    fmt::print("  {:>8} {:>6}  {:>17}  {:>17}  {:>20}{}\n", h, dk, 4 * d_model * d_model + 4 * d_model,
               4 * d_model * d_model, fmt::format("{} x {}^2 x {} = {}", h, seq_len, dk, h * seq_len * seq_len * dk),
               h == n_heads ? "   <- this run" : h == 1 ? "   <- one head of width d_model" : "");
  }
  if (d_model == 1)
    say(fmt::format("With d_model 1 a single head is the only split: it has {} parameters. With a wider d_model "
                    "the table lists every split into heads, all with the same count: multi-head attention does "
                    "not add weights, it regroups them.",
                    weight_count + bias_count));
  else if (n_heads == 1)
    say(fmt::format("One head of {} has {} parameters, and the table shows that any split into more heads has the "
                    "same: multi-head attention does not add weights, it regroups them. What grows with the heads is "
                    "the number of attention maps, n_heads x seq^2 weights.",
                    d_model, weight_count + bias_count));
  else
    say(fmt::format("{} of {} and one head of {} have the same {} parameters: multi-head attention does not "
                  "add weights, it regroups them. The work of the scores is the same too (n_heads x seq^2 x d_k "
                  "= seq^2 x d_model multiplications). What grows with the heads is the number of attention maps, "
                  "n_heads x seq^2 weights, and what each map can express: one routing decision per head.",
                  count_of(n_heads, "head"), d_k, d_model,
                  weight_count + bias_count));
}

void einsum_reading(const Input& in, const QKV& qkv, const Tensor4& scores, const Tensor4& head_out,
                    const Matrix& output) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const Matrix& Q = qkv.Q;
  const AttentionParams& params = in.params;
  fmt::print("  {:<7} {:<36} {}\n", "letter", "index over", "size here");
  const std::vector<std::tuple<char, std::string, int64_t>> letters{
      {'b', "batch (which sequence)", 1},          {'h', "head", n_heads},
      {'q', "query position", seq_len},            {'k', "key position", seq_len},
      {'d', "feature inside a head (d_k)", d_k},   {'m', "model feature (d_model)", d_model}};
  for (const auto& [letter, meaning, size] : letters) fmt::print("  {:<7} {:<36} {}\n", letter, meaning, size);
  fmt::print("\n");
  const std::vector<std::pair<std::string, std::string>> einsums{
      {"Q       = einsum(\"bqm,mhd->bhqd\", X, W_q) + b_q", "W_q read as (m, h, d): the split is free"},
      {"scores  = einsum(\"bhqd,bhkd->bhqk\", Q, K) / sqrt(d)", "sum over d: one dot product per b, h, q, k"},
      {"weights = softmax(scores) along k", "every (b, h, q) row sums to 1"},
      {"heads   = einsum(\"bhqk,bhkd->bhqd\", weights, V)", "sum over k: a weighted average of values"},
      {"output  = einsum(\"bhqd,hdm->bqm\", heads, W_o) + b_o", "sum over h and d: combine and W_o at once"}};
  for (const auto& [formula, note] : einsums) fmt::print("  {:<52} {}\n", formula, note);
  say("An index that appears in the inputs but not after the arrow is summed over. Written like this the split "
      "and the combine disappear: feature d of head h is simply column m = h * d_k + d of the unsplit Q, and "
      "W_o read as (h, d, m) is W_o cut into one block of rows per head. Checked with plain loops on the "
      "unsplit matrices:");
  // "bhqd,bhkd->bhqk" straight from the formula, reading head h's feature
  // d at column h * d_k + d of the unsplit Q and K.
  double diff = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t q = 0; q < seq_len; ++q)
      for (int64_t k = 0; k < seq_len; ++k) {
        double dot = 0;
        for (int64_t d = 0; d < d_k; ++d) dot += double(Q(q, h * d_k + d)) * double(qkv.K(k, h * d_k + d));
        diff = std::max(diff, std::abs(dot / std::sqrt(double(d_k)) - double(scores(0, h, q, k))));
      }
  fmt::print("  loops over \"bhqd,bhkd->bhqk\" vs step 4's scores:  largest difference {}\n",
             rounding(diff, rounding_bound(Eigen::Map<const Eigen::ArrayXf>(scores.data(), scores.size())
                                               .abs()
                                               .maxCoeff())));
  // "bhqd,hdm->bqm": row h * d_k + d of W_o belongs to head h, feature d.
  diff = 0;
  for (int64_t q = 0; q < seq_len; ++q)
    for (int64_t m = 0; m < d_model; ++m) {
      double sum = (*params.W_o.b)(m);
      for (int64_t h = 0; h < n_heads; ++h)
        for (int64_t d = 0; d < d_k; ++d) sum += double(head_out(0, h, q, d)) * double(params.W_o.W(h * d_k + d, m));
      diff = std::max(diff, std::abs(sum - double(output(q, m))));
    }
  fmt::print("  loops over \"bhqd,hdm->bqm\" vs step 8's output:   largest difference {}\n",
             rounding(diff, rounding_bound(output.cwiseAbs().maxCoeff())));
  fmt::print("  (double-precision loops against float32 products: rounding only)\n");
}

}  // namespace sa::ch4
