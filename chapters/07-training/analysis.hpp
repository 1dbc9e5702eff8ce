// Chapter 7: reading a model's attention. Used by the chapter program
// (both tasks) and by the analysis command (analyze.cpp) on a checkpoint.
//
// Header-only, shared by both tracks.
#pragma once

#include "07-training/model.hpp"
#include "07-training/patterns.hpp"

#include "sa/cli.hpp"
#include "sa/plot.hpp"
#include "sa/printable.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace sa {

// The weights of head h of layer `layer` for sequence b of the model's last
// forward, as a (seq, seq) matrix: row i is query i.
inline Matrix head_weights(const TinyTransformer& model, int64_t layer, int64_t b, int64_t h) {
  const int64_t T = model.workspace().seq, H = model.config().n_heads;
  return model.weights(layer).middleRows((b * H + h) * T, T);
}

// The weights a head would have if every query spread evenly over the keys
// its mask lets it see: the baseline every number of a head is read against.
inline Matrix uniform_weights(int64_t seq, bool causal) {
  Matrix P = Matrix::Zero(seq, seq);
  for (int64_t i = 0; i < seq; ++i) {
    const int64_t visible = causal ? i + 1 : seq;
    P.row(i).head(visible).setConstant(1.0f / float(visible));
  }
  return P;
}

// The ids of a --text in a vocabulary given as its token strings
// (tokens[id]), matched without regard to case ("sep" finds "SEP"). The
// text is checked as the chapters' --text is (checked_text: a byte-order
// mark dropped, bytes that are not UTF-8 and control characters refused,
// rather than shown raw in the message about an unknown token). An unknown
// token is a UsageError that names it and shows what the vocabulary holds.
inline std::vector<int64_t> encode_text(const std::string& text, const std::vector<std::string>& tokens) {
  std::vector<std::string> lowered;
  for (const std::string& t : tokens) lowered.push_back(lower_case(t));
  const Vocabulary vocab(lowered);
  if (vocab.size() != int64_t(tokens.size()))
    throw UsageError("the vocabulary holds the same token twice (ignoring case): cannot look words up in it");
  std::vector<int64_t> ids;
  for (const std::string& word : tokenize(checked_text(text))) {
    const auto it = std::find(lowered.begin(), lowered.end(), word);
    if (it == lowered.end()) {
      std::string known;
      for (size_t k = 0; k < tokens.size() && k < 24; ++k) known += (k ? " " : "") + tokens[k];
      if (tokens.size() > 24) known += fmt::format(" ... ({} in all)", tokens.size());
      throw UsageError(fmt::format("unknown token '{}': the vocabulary is {}", word, known));
    }
    ids.push_back(int64_t(it - lowered.begin()));
  }
  return ids;
}

// encode_text of the option --text: a refusal names the option, and says
// when the text is its default, which the reader never typed (a checkpoint
// of the reversal task knows no 'the').
inline std::vector<int64_t> encode_text_option(const std::string& text, const std::vector<std::string>& tokens,
                                               bool given) {
  try {
    return encode_text(text, tokens);
  } catch (const UsageError& e) {
    throw UsageError(given ? fmt::format("--text: {}", e.what())
                           : fmt::format("--text, left at its default '{}': {}", printable(text, 80), e.what()));
  }
}

struct Link {
  int64_t query = 0, key = 0;
  float weight = 0;
};

// The k largest weights of a head, largest first. Rows with a single
// visible key (the first query of a causal head) are skipped when
// `skip_forced`: their weight 1 is the mask's doing, not something learned.
inline std::vector<Link> strongest_links(const Matrix& P, int64_t k, bool skip_forced) {
  std::vector<Link> all;
  for (int64_t i = 0; i < P.rows(); ++i) {
    if (skip_forced && (P.row(i).array() > 0).count() <= 1) continue;
    for (int64_t j = 0; j < P.cols(); ++j) all.push_back({i, j, P(i, j)});
  }
  std::stable_sort(all.begin(), all.end(), [](const Link& a, const Link& b) { return a.weight > b.weight; });
  all.resize(std::min(all.size(), size_t(std::max<int64_t>(0, k))));
  return all;
}

// Where a link points, in words: "itself", "1 back", "next", "2 ahead".
inline std::string link_direction(const Link& l) {
  const int64_t d = l.key - l.query;
  if (d == 0) return "itself";
  if (d == 1) return "the next token";
  if (d == -1) return "the previous token";
  return d < 0 ? fmt::format("{} back", -d) : fmt::format("{} ahead", d);
}

// The mean weight a query puts on the token right after it (queries 0 ..
// seq-2): with a next-token loss, that token is the answer. Always 0 for a
// causal head.
inline double next_token_weight(const Matrix& P) {
  if (P.rows() < 2) return 0.0;
  double s = 0;
  for (int64_t i = 0; i + 1 < P.rows() && i + 1 < P.cols(); ++i) s += P(i, i + 1);
  return s / double(P.rows() - 1);
}

// Every head of every layer as a heatmap panel (rows: layers), sequence b
// of the model's last forward, labelled with `labels`.
inline std::vector<plot::Heatmap> heatmap_panels(const TinyTransformer& model, int64_t b, const std::vector<std::string>& labels) {
  std::vector<plot::Heatmap> panels;
  for (int64_t l = 0; l < model.config().n_layers; ++l)
    for (int64_t h = 0; h < model.config().n_heads; ++h) {
      plot::Heatmap p =
          plot::weights_heatmap(fmt::format("layer {}, head {}", l, h), head_weights(model, l, b, h), labels);
      p.xlabel = "key (attended to)";
      p.ylabel = "query (token)";  // the rows are labelled with their tokens, not their positions
      p.annotate = false;
      panels.push_back(std::move(p));
    }
  return panels;
}

// One line of the pattern analyzer's table: the four numbers of patterns.hpp with a
// window of 3 and the class they give, then the window-1 variant.
inline void print_analyzer_row(const std::string& who, const std::string& when, const Matrix& P) {
  const PatternStats st = attention_pattern(P, 3), near = attention_pattern(P, 1);
  fmt::print("  {:<18} {:<9}  {:7.3f} {:6.3f} {:8.3f} {:8.3f}  {:<15}  {:8.3f}  {}\n", who, when, st.entropy, st.focus,
             st.diagonal, st.local, pattern_name(classify_pattern(st)), near.local,
             pattern_name(classify_pattern(near)));
}

}  // namespace sa
