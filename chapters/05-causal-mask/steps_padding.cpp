// Chapter 5, steps 7 and 8: padding masks for a batch of sequences of
// different lengths, alone and together with the causal mask; and the
// lengths of that batch, read from --lengths.
#include "01-qkv-projection/qkv.hpp"
#include "05-causal-mask/mask.hpp"
#include "05-causal-mask/steps.hpp"

#include "sa/cli.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

namespace sa::ch5 {

namespace {

// "--lengths 6,4,2" -> {6, 4, 2}, every length in [0, seq_len]. One clear
// line (UsageError) for anything else.
std::vector<int64_t> parse_lengths(const std::string& text, int64_t seq_len) {
  std::vector<int64_t> lengths;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int64_t value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    // A number too large for int64_t is still a number: refused for its sign
    // or its size, like any other.
    const bool too_large = error == std::errc::result_out_of_range && end == item.data() + item.size();
    if (!too_large && (item.empty() || error != std::errc() || end != item.data() + item.size()))
      throw UsageError(fmt::format("--lengths: '{}' is not a whole number (give lengths like 6,4,2)", item));
    if (too_large ? item[0] == '-' : value < 0)
      throw UsageError(fmt::format("--lengths: {} is negative; a sequence has 0 or more tokens", item));
    if (too_large || value > seq_len)
      throw UsageError(fmt::format("--lengths: {} is longer than the text's {}, the length everything is padded to",
                                   item, count_of(seq_len, "token")));
    lengths.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (int64_t(lengths.size()) > kMaxBatch)
    throw UsageError(fmt::format("--lengths: {} sequences given, at most {} are shown", lengths.size(), kMaxBatch));
  return lengths;
}

}  // namespace

std::vector<int64_t> batch_lengths(const Options& o, int64_t seq_len) {
  return o.lengths == "auto" ? std::vector<int64_t>{seq_len, (2 * seq_len + 1) / 3, seq_len / 3}
                             : parse_lengths(o.lengths, seq_len);
}

std::vector<std::string> padded_labels(const std::vector<std::string>& tokens, int64_t length) {
  std::vector<std::string> labels(tokens.begin(), tokens.begin() + length);
  labels.resize(tokens.size(), kPad);
  return labels;
}

PaddedBatch padded_batch(const Example& ex, const Options& o, const std::vector<int64_t>& lengths, FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len, batch = int64_t(lengths.size());
  const Matrix& X = ex.X;
  const AttentionParams& params = ex.params;
  say(
      fmt::format("Sequences in a batch must have the same length, so shorter ones are padded to {}. Here sequence "
                  "b is the first lengths[b] tokens of the sentence; its padding positions hold the zero vector "
                  "(a <pad> embedding would do as well: the point is that nothing may read it). The padding mask "
                  "allows key j iff j < length, for every query.",
                  seq_len));
  Matrix X_batch = Matrix::Zero(batch * seq_len, o.d_model);
  for (int64_t b = 0; b < batch; ++b)
    X_batch.middleRows(b * seq_len, lengths[size_t(b)]) = X.topRows(lengths[size_t(b)]);
  const QKV batch_qkv = project_qkv(X_batch, params.W_q, params.W_k, params.W_v);
  print_shape("X (padded batch)", {batch, seq_len, o.d_model}, "(batch, seq_len, d_model)");
  print_shape("Q, K, V", {batch, seq_len, o.d_model});
  const std::vector<Mask> pad_masks = padding_masks(lengths, seq_len);
  print_shape("padding masks", {batch, seq_len, seq_len}, "one (seq, seq) mask per sequence");
  auto sequence = [&](const Matrix& m, int64_t b) { return Matrix(m.middleRows(b * seq_len, seq_len)); };
  std::vector<Attention> pad_att;
  for (int64_t b = 0; b < batch; ++b) {
    const auto labels = padded_labels(tokens, lengths[size_t(b)]);
    fmt::print("\n  sequence {} (length {}): {}\n", b, lengths[size_t(b)], labels);
    print_labelled(fmt::format("padding_masks(...)[{}]", b), as_numbers(pad_masks[size_t(b)]), labels, labels,
                   {.precision = 0});
    pad_att.push_back(masked_attention(sequence(batch_qkv.Q, b), sequence(batch_qkv.K, b), sequence(batch_qkv.V, b),
                                       pad_masks[size_t(b)]));
    fig.pad_weights.push_back(pad_att.back().weights);
    print_labelled(fmt::format("weights of sequence {}", b), pad_att.back().weights, labels, labels);
  }
  {
    // Fill every padding position with junk and run again: the real tokens'
    // outputs must not move.
    Matrix X_junk = X_batch;
    for (int64_t b = 0; b < batch; ++b)
      X_junk.middleRows(b * seq_len + lengths[size_t(b)], seq_len - lengths[size_t(b)]).setConstant(100.0f);
    const QKV junk = project_qkv(X_junk, params.W_q, params.W_k, params.W_v);
    double real_diff = 0, pad_diff = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t L = lengths[size_t(b)];
      const Attention a =
          masked_attention(sequence(junk.Q, b), sequence(junk.K, b), sequence(junk.V, b), pad_masks[size_t(b)]);
      const Matrix diff = (a.output - pad_att[size_t(b)].output).cwiseAbs();
      if (L > 0) real_diff = std::max(real_diff, double(diff.topRows(L).maxCoeff()));
      if (L < seq_len) pad_diff = std::max(pad_diff, double(diff.bottomRows(seq_len - L).maxCoeff()));
    }
    int64_t real_count = 0, pad_count = 0, pad_with_choice = 0;  // pad_with_choice: <pad> queries seeing 2+ keys
    for (int64_t L : lengths) {
      real_count += L;
      pad_count += seq_len - L;
      if (L >= 2) pad_with_choice += seq_len - L;
    }
    if (pad_count == 0) {
      fmt::print("\n");
      say("No sequence is padded here: every length is the text's, so there is no padding to refill with junk.");
    } else {
      fmt::print("\n  every padding position refilled with 100s, then attention again:\n");
      if (real_count > 0) fmt::print("    largest change in the outputs of real tokens    {:g}\n", real_diff);
      fmt::print("    largest change in the outputs of <pad> queries  {:.4g}\n", pad_diff);
      std::string pad_sentence;
      if (pad_diff > 0)
        pad_sentence = "The <pad> rows are queries too and still produce outputs, here from whatever their junk "
                       "asks for, so those changed";
      else if (pad_with_choice == 0) {
        // A sequence of length 1 has <pad> queries only when the text is longer.
        const bool has_1 = seq_len > 1 && std::count(lengths.begin(), lengths.end(), 1) > 0;
        const bool has_0 = std::count(lengths.begin(), lengths.end(), 0) > 0;
        pad_sentence = fmt::format(
            "The <pad> rows are queries too, but here their outputs did not change: {}{}{}",
            has_1 ? "in a sequence of length 1 a <pad> query sees one key, weighted 1 whatever it asks" : "",
            has_1 && has_0 ? ", and " : "",
            has_0 ? "in a sequence of length 0 a <pad> query sees no key at all (step 9)" : "");
      }
      else
        pad_sentence = "The <pad> rows are queries too and produce outputs from what their junk asks for, although "
                       "this refill happened to leave them unchanged";
      say(fmt::format("{}{}; whatever comes next, a loss for instance, must ignore those rows.",
                      real_count > 0 ? "The real tokens cannot tell what the padding holds: its scores become -inf "
                                       "and its values are multiplied by weights of exactly 0. "
                                     : "There are no real tokens in this batch, only padding. ",
                      pad_sentence));
    }
  }
  return {lengths, batch_qkv, pad_masks};
}

void padding_and_causal(const Example& ex, const PaddedBatch& padded, const Mask& causal, const Attention& causal_att,
                        FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const std::vector<int64_t>& lengths = padded.lengths;
  const int64_t seq_len = ex.seq_len, batch = int64_t(lengths.size());
  const QKV& batch_qkv = padded.qkv;
  const std::vector<Mask>& pad_masks = padded.masks;
  auto sequence = [&](const Matrix& m, int64_t b) { return Matrix(m.middleRows(b * seq_len, seq_len)); };
  say("A decoder with a padded batch needs both rules: key j is visible to query i iff j <= i and j < length. "
      "mask_and combines them element by element.");
  std::vector<Attention> pad_causal_att;
  for (int64_t b = 0; b < batch; ++b) {
    const Mask both = mask_and(causal, pad_masks[size_t(b)]);
    pad_causal_att.push_back(
        masked_attention(sequence(batch_qkv.Q, b), sequence(batch_qkv.K, b), sequence(batch_qkv.V, b), both));
    fig.pad_causal_weights.push_back(pad_causal_att.back().weights);
  }
  {
    const int64_t b = std::min<int64_t>(1, batch - 1);
    const auto labels = padded_labels(tokens, lengths[size_t(b)]);
    print_labelled(fmt::format("mask_and(causal, padding[{}])  (length {})", b, lengths[size_t(b)]),
                   as_numbers(mask_and(causal, pad_masks[size_t(b)])), labels, labels, {.precision = 0});
    print_labelled(fmt::format("weights of sequence {}", b), pad_causal_att[size_t(b)].weights, labels, labels);
  }
  fmt::print("\n  {:>9}  {:>7}  {:>22}  {:>28}\n", "sequence", "length", "upper-triangle sum",
             "real rows vs step 4 (max diff)");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t L = lengths[size_t(b)];
    const Attention& a = pad_causal_att[size_t(b)];
    const double diff =
        L > 0 ? double((a.output.topRows(L) - causal_att.output.topRows(L)).cwiseAbs().maxCoeff()) : 0.0;
    fmt::print("  {:>9}  {:>7}  {:>22g}  {:>28}\n", b, L, upper_sum(a.weights),
               L > 0 ? rounding(diff, rounding_bound(causal_att.output.topRows(L).cwiseAbs().maxCoeff()))
                     : std::string("(no real rows)"));
  }
  say("Each sequence is a prefix of the sentence, and a causal query only ever sees a prefix: so the real rows of "
      "every padded sequence reproduce the first rows of step 4's causal output (up to float32 rounding), however "
      "much padding follows. That is also why a model can generate one token at a time and keep the keys and "
      "values of the tokens it has already seen.");
}

}  // namespace sa::ch5
