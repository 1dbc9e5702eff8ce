// Chapter 1, step 11: one token followed from its word to its attention
// output, with the shapes of this run.
#include "01-qkv-projection/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch1 {

namespace {

// The first three values of row `row` of m, with "..." when there are more.
std::string first_values(const Matrix& m, int64_t row) {
  const int64_t n = std::min<int64_t>(3, m.cols());
  std::string s = format_row(Matrix(m.row(row).head(n)));
  if (m.cols() > n) s.insert(s.size() - 1, ", ...");
  return s;
}

}  // namespace

// Prints the path of the last token, reusing the rows steps 4 to 8
// computed. Scaling, softmax and weights V are chapters 2 and 3, whose
// library this program does not link; their formulas are short enough to
// apply here to one row, in double.
TokenPath show_token_path(const Options& o, const TokenIds& text, const Matrix& E, const Positioned& pos,
                          const QKV& qkv, const Matrix& scores) {
  const std::vector<std::string>& tokens = text.tokens;
  const Matrix &PE = pos.PE, &X = pos.X;
  const int64_t vocab = text.vocab.size();
  const int64_t seq_len = int64_t(tokens.size());
  const TokenPath p{seq_len - 1, tokens.back(), text.ids.back(), seq_len, vocab, o.d_model, o.d_k};
  say(fmt::format("Every token takes the same path, each with its own rows. Here is the last one, \"{}\" at "
                  "position {}, with the shapes of this run. Up to q, k and v the path uses this token alone. {}",
                  p.word, p.t,
                  seq_len == 1 ? "Then its q meets the only key there is, its own, so its scores and weights have "
                                 "a single entry: seq_len = 1."
                               : fmt::format("Then its q meets the keys of {} tokens, so its scores and weights "
                                             "have one entry per token: seq_len = {}.",
                                             seq_len == 2 ? "both" : fmt::format("all {}", seq_len), seq_len)));
  const double scale = std::sqrt(double(o.d_k));
  Eigen::RowVectorXd scaled = scores.row(p.t).cast<double>() / scale;
  Eigen::RowVectorXd weights = (scaled.array() - scaled.maxCoeff()).exp();  // max first: no overflow
  weights /= weights.sum();
  const Eigen::RowVectorXd output = weights * qkv.V.cast<double>();

  struct Line {
    std::string name, shape, via, values;
  };
  auto shape = [](int64_t rows, int64_t cols) { return shape_str(Shape{rows, cols}); };
  const std::string pe_row = fmt::format("PE[{}]", p.t);
  const std::vector<Line> here{
      {fmt::format("e = table[{}]", p.id), shape(1, o.d_model), "table " + shape(vocab, o.d_model),
       first_values(E, p.t)},
      {pe_row, shape(1, o.d_model), "PE " + shape(seq_len, o.d_model), first_values(PE, p.t)},
      {"x = e + " + pe_row, shape(1, o.d_model), "", first_values(X, p.t)},
      {"q = x W_q + b_q", shape(1, o.d_k), "W_q " + shape(o.d_model, o.d_k), first_values(qkv.Q, p.t)},
      {"k = x W_k + b_k", shape(1, o.d_k), "W_k " + shape(o.d_model, o.d_k), first_values(qkv.K, p.t)},
      {"v = x W_v + b_v", shape(1, o.d_k), "W_v " + shape(o.d_model, o.d_k), first_values(qkv.V, p.t)},
      {"scores = q K^T", shape(1, seq_len), "K^T " + shape(o.d_k, seq_len), first_values(scores, p.t)}};
  const std::vector<Line> later{
      {"scores / sqrt(d_k)", shape(1, seq_len), fmt::format("sqrt({}) = {:.4g}", o.d_k, scale),
       first_values(Matrix(scaled.cast<float>()), 0)},
      {"weights = softmax", shape(1, seq_len), fmt::format("over {} key{}", seq_len, seq_len == 1 ? "" : "s"),
       first_values(Matrix(weights.cast<float>()), 0)},
      {"output = weights V", shape(1, o.d_k), "V " + shape(seq_len, o.d_k),
       first_values(Matrix(output.cast<float>()), 0)}};
  size_t name_w = 0, shape_w = 0, via_w = 0;
  for (const auto* lines : {&here, &later})
    for (const Line& l : *lines) {
      name_w = std::max(name_w, l.name.size());
      shape_w = std::max(shape_w, l.shape.size());
      via_w = std::max(via_w, l.via.size());
    }
  auto print_lines = [&](const std::vector<Line>& lines) {
    for (const Line& l : lines)
      fmt::print("    {:<{}}  {:<{}}  {:<{}}  {}\n", l.name, name_w, l.shape, shape_w, l.via, via_w, l.values);
  };
  fmt::print("  \"{}\": position {}, id {}\n", p.word, p.t, p.id);
  fmt::print("  in this chapter (row {} of E, PE, X, Q, K, V and the scores above):\n", p.t);
  print_lines(here);
  fmt::print("  in chapters 2 and 3 (computed here from their formulas):\n");
  print_lines(later);
  const std::string width = o.d_k == 1 ? "1 number" : fmt::format("{} numbers", o.d_k);
  const std::string figure = o.plots ? " The figure qkv_flow.png draws the same path." : "";
  say(seq_len == 1 ? fmt::format("The one weight is 1, so the output is v itself: {}.{}", width, figure)
                   : fmt::format("The weights add up to {:.4f}, and the output mixes the {} rows of V with them: "
                                 "{}, as wide as v.{}",
                                 weights.sum(), seq_len, width, figure));
  return p;
}

}  // namespace sa::ch1
