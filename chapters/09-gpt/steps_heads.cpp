// Chapter 9, step 12: what the trained heads read in a verse. Chapter 8's
// tiled attention never stores the weights; they are rebuilt here from the
// log-sum-exp it keeps for the backward, exp(score - lse), as its backward
// does.
#include "09-gpt/steps.hpp"

#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch9 {

namespace {

// The first verse of the Bible, in the training text: its 55 characters
// fit the default context of 64.
constexpr std::string_view kVerse = "In the beginning God created the heaven and the earth.";

struct HeadWeights {
  int64_t layer = 0, head = 0;
  Matrix W;                 // (n, n), row i the weights of query i, 0 above the diagonal
  double on_previous = 0;   // mean weight on the character just before (queries 1 to n-1)
  double on_itself = 0;     // mean weight on the query's own position
  double distance = 0;      // mean number of characters back the weight sits, Σ_j w_ij (i - j)
};

// The three means of `h.W`, which holds the weights.
void measure(HeadWeights& h) {
  const int64_t n = h.W.rows();
  for (int64_t i = 1; i < n; ++i) {
    h.on_previous += h.W(i, i - 1) / double(n - 1);
    h.on_itself += h.W(i, i) / double(n - 1);
    for (int64_t j = 0; j <= i; ++j) h.distance += h.W(i, j) * double(i - j) / double(n - 1);
  }
}

HeadWeights head_weights(const Gpt& model, int64_t layer, int64_t head) {
  const GptConfig& c = model.config();
  const GptWorkspace& w = model.workspace();
  const int64_t n = w.seq, d = c.d_model, d_k = c.d_k();
  const Matrix& qkv = w.blocks[size_t(layer)].qkv;
  const auto Q = qkv.block(0, head * d_k, n, d_k);
  const auto K = qkv.block(0, d + head * d_k, n, d_k);
  const ColVector& lse = w.blocks[size_t(layer)].heads[size_t(head)].lse;
  HeadWeights h{layer, head, Matrix::Zero(n, n)};
  const float scale = 1.0f / std::sqrt(float(d_k));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) h.W(i, j) = std::exp((Q.row(i).dot(K.row(j))) * scale - lse(i));
  measure(h);
  return h;
}

std::string label(char c) { return c == ' ' ? "_" : std::string(1, c); }

}  // namespace

void heads_demo(Gpt& model, const CharVocab& vocab, Figures& figures) {
  const GptConfig& c = model.config();
  const std::string verse(kVerse.substr(0, size_t(std::min<int64_t>(int64_t(kVerse.size()), c.seq_len))));
  model.forward(encode(vocab, verse), 1);
  say(fmt::format("The trained model reads \"{}\" (Genesis 1:1{}). Chapter 8's tiled attention kept only each "
                  "query's log-sum-exp; every weight comes back as exp(score - lse). For each head: the mean "
                  "weight a character puts on the one just before it, on itself, and how many characters back "
                  "its weight sits on average (over the {} characters after the first).",
                  verse, verse.size() < kVerse.size() ? ", its first characters: the model knows fewer positions" : "",
                  verse.size() - 1));
  fmt::print("  {:>5}  {:>4}  {:>13}  {:>9}  {:>14}\n", "layer", "head", "on previous", "on itself",
             "distance back");
  // The yardstick: a head that weighs every key it sees alike, 1 / (i + 1).
  HeadWeights even{-1, -1, Matrix::Zero(int64_t(verse.size()), int64_t(verse.size()))};
  for (int64_t i = 0; i < even.W.rows(); ++i) even.W.row(i).head(i + 1).setConstant(1.0f / float(i + 1));
  measure(even);
  fmt::print("  {:>11}  {:>13.3f}  {:>9.3f}  {:>14.2f}\n", "even", even.on_previous, even.on_itself, even.distance);
  std::vector<HeadWeights> heads;
  for (int64_t l = 0; l < c.n_layers; ++l)
    for (int64_t h = 0; h < c.n_heads; ++h) {
      heads.push_back(head_weights(model, l, h));
      const HeadWeights& s = heads.back();
      fmt::print("  {:>5}  {:>4}  {:>13.3f}  {:>9.3f}  {:>14.2f}\n", l, h, s.on_previous, s.on_itself, s.distance);
    }
  // The two heads drawn: the one that reads the previous character most,
  // and, among the others, the one whose weight sits furthest back.
  const auto previous = std::max_element(heads.begin(), heads.end(), [](const auto& a, const auto& b) {
    return a.on_previous < b.on_previous;
  });
  const HeadWeights* far = nullptr;
  for (const HeadWeights& h : heads)
    if (&h != &*previous && (!far || h.distance > far->distance)) far = &h;
  std::string text = fmt::format(
      "The row \"even\" is a head that weighs every character it sees alike. Layer {} head {} puts {:.0f}% of its "
      "weight on the previous character on average, against {:.0f}% for even weights{}.",
      previous->layer, previous->head, 100 * previous->on_previous, 100 * even.on_previous,
      far ? fmt::format("; layer {} head {} reads furthest back, {:.1f} characters on average against {:.1f}",
                        far->layer, far->head, far->distance, even.distance)
          : "");
  // What the numbers show depends on how long the model trained.
  if (previous->on_previous < 1.5 * even.on_previous)
    text += " No head stands out yet: after this much training they still spread their weight almost evenly.";
  say(text);
  std::vector<std::string> labels;
  for (char ch : verse) labels.push_back(label(ch));
  figures.draw("trained_heads.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (const HeadWeights* h : std::vector<const HeadWeights*>{&*previous, far}) {
      if (!h) continue;
      plot::Heatmap p = plot::weights_heatmap(
          fmt::format("layer {} head {}: {:.0f}% on the previous character, {:.1f} back on average", h->layer,
                      h->head, 100 * h->on_previous, h->distance),
          h->W, labels);
      p.cblabel = "weight";
      p.annotate = false;
      panels.push_back(p);
    }
    return plot::heatmap_grid(path, "Two trained heads of the GPT over Genesis 1:1 (query rows, key columns; _ is a space)",
                              1, int(panels.size()), panels, 640);
  });
}

}  // namespace sa::ch9
