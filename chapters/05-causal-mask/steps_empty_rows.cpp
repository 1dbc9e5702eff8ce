// Chapter 5, step 9: a query that may see nothing. The book's softmax gives
// its row zeros; PyTorch 1.13's gave NaN, which spreads through the next
// layer; an additive -1e9 gives a finite, wrong row.
#include "01-qkv-projection/qkv.hpp"
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "05-causal-mask/mask.hpp"
#include "05-causal-mask/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sa::ch5 {

namespace {

int64_t count_nan(const Matrix& m) { return m.array().isNaN().count(); }

// softmax as PyTorch 1.13 computes it, kept only to show what it gives on a
// row that is all -inf: the row maximum is -inf, x - max is -inf - (-inf) =
// NaN, and NaN spreads to the whole row. The book's softmax_rows (chapter 3)
// returns zeros there instead.
Matrix torch_1_13_softmax(const Matrix& scores) {
  Matrix w(scores.rows(), scores.cols());
  for (int64_t i = 0; i < scores.rows(); ++i) {
    const float m = scores.row(i).maxCoeff();
    const Eigen::Array<float, 1, Eigen::Dynamic> e = (scores.row(i).array() - m).exp();
    w.row(i) = (e / e.sum()).matrix();
  }
  return w;
}

}  // namespace

void query_that_sees_nothing(const Example& ex, const Mask& causal) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const QKV& qkv = ex.qkv;
  const Matrix& scores = ex.scores;
  const AttentionParams& params = ex.params;
  say("With a causal mask alone every row keeps its diagonal. But masks combine: a sequence of length 0, or a "
      "left-padded sequence under the causal mask (its first queries are padding and may only look at earlier "
      "positions, which are padding too) leaves rows with no key at all. Softmax of [-inf, ..., -inf] is 0/0.");
  {
    const Mask nothing = padding_masks({0}, seq_len)[0];
    const Attention a = masked_attention(qkv.Q, qkv.K, qkv.V, nothing);
    fmt::print("\n  (a) a sequence of length 0: padding_masks({{0}}, {})[0] forbids every key\n", seq_len);
    fmt::print("    weights row 0   {}\n", row_str(a.weights, 0, 0));
    fmt::print("    weights: largest |w| {:g}, NaN entries {};  output: largest |y| {:g}, NaN entries {}\n",
               a.weights.cwiseAbs().maxCoeff(), count_nan(a.weights), a.output.cwiseAbs().maxCoeff(),
               count_nan(a.output));
  }
  // Left padding: the first `left_pad` positions are padding, so no query
  // may look at them; under the causal mask their own queries have nothing
  // else to look at.
  const int64_t left_pad = std::max<int64_t>(1, seq_len / 3);
  Mask real_keys(seq_len, seq_len);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = 0; j < seq_len; ++j) real_keys(i, j) = j >= left_pad;
  const Mask left_causal = mask_and(causal, real_keys);
  // The sentence's own vectors stay in those positions: the mask alone
  // decides that they are padding.
  std::vector<std::string> left_labels = tokens;
  std::fill(left_labels.begin(), left_labels.begin() + left_pad, kPad);
  fmt::print("\n  (b) the same sentence, its first {} treated as left padding, under the causal mask\n",
             left_pad == 1 ? std::string("position") : fmt::format("{} positions", left_pad));
  print_labelled("mask_and(causal, keys j >= " + std::to_string(left_pad) + ")", as_numbers(left_causal), left_labels,
                 left_labels, {.precision = 0});
  const Matrix left_scores = apply_mask(scores, left_causal);
  const Attention book = masked_attention(qkv.Q, qkv.K, qkv.V, left_causal);
  print_labelled("weights = masked_attention(Q, K, V, mask).weights", book.weights, left_labels, left_labels);
  fmt::print("    output rows 0..{}: largest |y| {:g};  NaN entries in weights {}, in output {}\n", left_pad - 1,
             book.output.topRows(left_pad).cwiseAbs().maxCoeff(), count_nan(book.weights), count_nan(book.output));

  fmt::print("\n  (c) the same rows with PyTorch 1.13's softmax (exp(x - max) / sum, max = -inf)\n");
  const Matrix torch_weights = torch_1_13_softmax(left_scores);
  const Matrix torch_output = torch_weights * qkv.V;
  for (int64_t i = 0; i <= std::min<int64_t>(left_pad, seq_len - 1); ++i)
    fmt::print("    row {} ({:<5})  {}\n", i, left_labels[size_t(i)], row_str(torch_weights, i));
  fmt::print("    NaN entries: weights {} of {}, output {} of {}\n", count_nan(torch_weights), torch_weights.size(),
             count_nan(torch_output), torch_output.size());
  {
    // One more attention layer on top, with the same mask: the NaN rows are
    // masked keys now, yet 0 x NaN = NaN in the weighted sum of values.
    const QKV again_book = project_qkv(book.output, params.W_q, params.W_k, params.W_v);
    const Attention layer2_book = masked_attention(again_book.Q, again_book.K, again_book.V, left_causal);
    const QKV again_torch = project_qkv(torch_output, params.W_q, params.W_k, params.W_v);
    const Matrix layer2_torch_w =
        torch_1_13_softmax(apply_mask(scaled_scores(again_torch.Q, again_torch.K), left_causal));
    const Matrix layer2_torch = layer2_torch_w * again_torch.V;
    fmt::print("    a second masked attention layer on these outputs, same mask:\n");
    fmt::print("      PyTorch 1.13 semantics: NaN in {} of {} ({} of {})\n", count_nan(layer2_torch),
               count_of(layer2_torch.size(), "output entry", "output entries"),
               (layer2_torch.array().isNaN().rowwise().any()).count(), count_of(seq_len, "row"));
    fmt::print("      the book:               NaN in {} of {}\n", count_nan(layer2_book.output),
               count_of(layer2_book.output.size(), "output entry", "output entries"));
  }
  say("In PyTorch 1.13 a row with nothing to see becomes NaN, and NaN does not stay put: in the next layer those "
      "rows are keys that every query is forbidden to see, so their weight is exactly 0, but their values are NaN "
      "and 0 x NaN = NaN, so every output of the layer is NaN (and so are the loss and every gradient). The book "
      "defines the empty row instead: weights 0, output 0. Nothing is read, nothing is made up, and the rows "
      "that had something to see are unchanged.");

  fmt::print("\n  (d) an additive mask of -1e9 instead of -inf (seen in some code): row 0 gets\n");
  {
    Matrix additive = scores;
    for (int64_t i = 0; i < seq_len; ++i)
      for (int64_t j = 0; j < seq_len; ++j)
        if (!left_causal(i, j)) additive(i, j) += -1e9f;
    fmt::print("    {}   (uniform 1/{}: {})\n", row_str(softmax_rows(additive), 0), seq_len,
               seq_len > 1 ? "it attends to the padding and the future" : "its one key, the padding itself");
  }
  say("Finite, but wrong in silence: float32 cannot tell -1e9 + 0.3 from -1e9 - 0.2, so every masked score is the "
      "same number and softmax spreads the row evenly over exactly the keys it was told to ignore.");
}

}  // namespace sa::ch5
