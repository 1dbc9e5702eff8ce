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

// The first verse of the Bible, in the training text: its 54 characters
// fit the default context of 64.
constexpr std::string_view kVerse = "In the beginning God created the heaven and the earth.";

struct HeadWeights {
  int64_t layer = 0, head = 0;
  Matrix W;                 // (n, n), row i the weights of query i, 0 above the diagonal
  double on_previous = 0;   // mean weight on the character just before (queries 1 to n-1)
  double on_itself = 0;     // mean weight on the query's own position
  double distance = 0;      // mean number of characters back the weight sits, Σ_j w_ij (i - j)
  double on_word_start = 0; // mean weight on the last space before the query: where its word began
};

// The four means of `h.W`, which holds the weights over `text`. The word
// start's is over the queries that have a space before them (not the
// first word's).
void measure(HeadWeights& h, const std::string& text) {
  const int64_t n = h.W.rows();
  int64_t after_space = 0, last_space = -1;
  for (int64_t i = 1; i < n; ++i) {
    h.on_previous += h.W(i, i - 1) / double(n - 1);
    h.on_itself += h.W(i, i) / double(n - 1);
    for (int64_t j = 0; j <= i; ++j) h.distance += h.W(i, j) * double(i - j) / double(n - 1);
    if (text[size_t(i - 1)] == ' ') last_space = i - 1;
    if (last_space >= 0) {
      h.on_word_start += h.W(i, last_space);
      ++after_space;
    }
  }
  if (after_space) h.on_word_start /= double(after_space);
}

HeadWeights head_weights(const Gpt& model, const std::string& text, int64_t layer, int64_t head) {
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
  measure(h, text);
  return h;
}

std::string label(char c) { return c == ' ' ? "␣" : std::string(1, c); }

// The verse as far as the model's context reaches.
std::string_view verse_in(const GptConfig& c) {
  return kVerse.substr(0, size_t(std::min<int64_t>(int64_t(kVerse.size()), c.seq_len)));
}

}  // namespace

std::string heads_title(const GptConfig& c) {
  if (c.n_layers * c.n_heads == 1) return "What the trained head reads in a verse";
  // The second head drawn is the word start's reader: none without a
  // character after a space.
  const std::string_view verse = verse_in(c);
  const size_t space = verse.find(' ');
  return space != std::string_view::npos && space + 1 < verse.size() ? "What two trained heads read in a verse"
                                                                     : "What the trained heads read in a verse";
}

void heads_demo(Gpt& model, const CharVocab& vocab, Figures& figures) {
  const GptConfig& c = model.config();
  const std::string verse(verse_in(c));
  if (verse.size() < 2) {
    say("With a context of one character a head has nothing to choose among: each puts all its weight on the "
        "character itself. Train with --seq-len 2 or more to see what the heads read.");
    return;
  }
  model.evaluate(encode(vocab, verse), 1);
  say(fmt::format("The trained model reads \"{}\" (Genesis 1:1{}). Chapter 8's tiled attention kept only each "
                  "query's log-sum-exp; every weight comes back as exp(score - lse). For each head: the mean "
                  "weight a character puts on the one just before it, on itself, on the space its word began with "
                  "(the last space before it), and how many characters back its weight sits on average (over the "
                  "{} after the first).",
                  verse, verse.size() < kVerse.size() ? ", its first characters: the model knows fewer positions" : "",
                  count_of(int64_t(verse.size()) - 1, "character")));
  fmt::print("  {:>5}  {:>4}  {:>13}  {:>9}  {:>10}  {:>14}\n", "layer", "head", "on previous", "on itself",
             "word start", "distance back");
  // The yardstick: a head that weighs every key it sees alike, 1 / (i + 1).
  HeadWeights even{-1, -1, Matrix::Zero(int64_t(verse.size()), int64_t(verse.size()))};
  for (int64_t i = 0; i < even.W.rows(); ++i) even.W.row(i).head(i + 1).setConstant(1.0f / float(i + 1));
  measure(even, verse);
  fmt::print("  {:>11}  {:>13.3f}  {:>9.3f}  {:>10.3f}  {:>14.2f}\n", "even", even.on_previous, even.on_itself,
             even.on_word_start, even.distance);
  std::vector<HeadWeights> heads;
  for (int64_t l = 0; l < c.n_layers; ++l)
    for (int64_t h = 0; h < c.n_heads; ++h) {
      heads.push_back(head_weights(model, verse, l, h));
      const HeadWeights& s = heads.back();
      fmt::print("  {:>5}  {:>4}  {:>13.3f}  {:>9.3f}  {:>10.3f}  {:>14.2f}\n", l, h, s.on_previous, s.on_itself,
                 s.on_word_start, s.distance);
    }
  // The two heads drawn: the one that reads the previous character most,
  // and, among the others, the one that reads the start of the word most.
  const auto previous = std::max_element(heads.begin(), heads.end(), [](const auto& a, const auto& b) {
    return a.on_previous < b.on_previous;
  });
  // (None when no character of the verse has a space before it.)
  const HeadWeights* word_start = nullptr;
  for (const HeadWeights& h : heads)
    if (even.on_word_start > 0 && &h != &*previous && (!word_start || h.on_word_start > word_start->on_word_start))
      word_start = &h;
  double nearest = heads.front().distance, farthest = nearest;
  for (const HeadWeights& h : heads) {
    nearest = std::min(nearest, h.distance);
    farthest = std::max(farthest, h.distance);
  }
  const bool one = heads.size() == 1;
  std::string text = fmt::format(
      "The row \"even\" is a head that weighs every character it sees alike. Layer {} head {} puts {:.0f}% of its "
      "weight on the previous character on average, against {:.0f}% for even weights{}. {} weight sits "
      "{} characters back on average, against {:.1f} for even weights.",
      previous->layer, previous->head, 100 * previous->on_previous, 100 * even.on_previous,
      word_start ? fmt::format("; layer {} head {} puts {:.0f}% on the space its word began with, against {:.0f}%",
                           word_start->layer, word_start->head, 100 * word_start->on_word_start, 100 * even.on_word_start)
             : "",
      one ? "The head's" : "The heads'",
      // (one number when the range rounds to one)
      fmt::format("{:.1f}", nearest) == fmt::format("{:.1f}", farthest)
          ? fmt::format("{:.1f}", nearest)
          : fmt::format("{:.1f} to {:.1f}", nearest, farthest),
      even.distance);
  // What the numbers show depends on how long the model trained. A head
  // stands out when it puts at least 1.5 times even weights' share on the
  // previous character or on its word's start.
  // (A verse too short for a word start gives even weights and every head
  // 0 there: no ratio, and no head stands out by it.)
  std::vector<std::string> standing_out;
  if (even.on_previous > 0 && previous->on_previous >= 1.5 * even.on_previous)
    standing_out.push_back(fmt::format("layer {} head {}, with {:.1f} times their share on the previous character",
                                       previous->layer, previous->head, previous->on_previous / even.on_previous));
  // (A model of one head has no other head to be the word-start one: its
  // one head is measured on both.)
  const HeadWeights* word_reader = word_start ? word_start : one ? &*previous : nullptr;
  if (word_reader && even.on_word_start > 0 && word_reader->on_word_start >= 1.5 * even.on_word_start)
    standing_out.push_back(fmt::format("layer {} head {}, with {:.1f} times their share on its word's start",
                                       word_reader->layer, word_reader->head,
                                       word_reader->on_word_start / even.on_word_start));
  const bool stands_out = !standing_out.empty();
  // "Almost evenly" only when it is so: the two measures above can miss a
  // head that has moved far from even weights elsewhere (all on the first
  // character, say). 0.1: a tenth of the whole weight of a row.
  double off_even = 0;
  for (const HeadWeights& h : heads) off_even = std::max(off_even, double((h.W - even.W).cwiseAbs().maxCoeff()));
  const std::string criterion =
      fmt::format("1.5 times even weights' share on the previous character{}", even.on_word_start > 0
                                                                                  ? " or on its word's start"
                                                                                  : "");
  if (!stands_out && off_even <= 0.1)
    text += one ? " The head does not stand out yet: after this much training it still spreads its weight almost "
                  "evenly."
                : " No head stands out yet: after this much training they still spread their weight almost evenly.";
  else if (!stands_out)
    text += fmt::format(" {} {}, but the weights are not even: a weight differs from even weights' by up to "
                        "{:.2f}, so {} something else (compare the columns with the row \"even\").",
                        one ? "The head does not put" : "No head puts", criterion, off_even,
                        one ? "it reads" : "the heads read");
  else
    text += fmt::format(" Standing out from even weights: {}{}.", standing_out.front(),
                        standing_out.size() > 1 ? ", and " + standing_out.back() : "");
  if (stands_out && farthest < even.distance)
    text += fmt::format(" {} nearer than even weights would: of the context, the last few characters say the most "
                        "about the next one.",
                        one ? "The head reads" : "Every head reads");
  say(text);
  // The figure labels every character, which fits 32 of them to a panel:
  // it draws the weights of the verse's first 32 queries over their keys
  // (whole rows: a query sees no key after it). The numbers in the panels'
  // titles are the whole verse's, as in the table.
  const int64_t shown = std::min<int64_t>(int64_t(verse.size()), 32);
  std::vector<std::string> labels;
  for (char ch : verse.substr(0, size_t(shown))) labels.push_back(label(ch));
  figures.draw("trained_heads.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (const HeadWeights* h : std::vector<const HeadWeights*>{&*previous, word_start}) {
      if (!h) continue;
      plot::Heatmap p = plot::weights_heatmap(
          // (against even weights' numbers: 8% on the previous character
          // means nothing to a reader who does not know even is 7%)
          // (over the whole verse when the panel shows only its start)
          fmt::format("layer {} head {}{} {:.0f}% on the previous character, {:.0f}% on the word's start "
                      "(even weights: {:.0f}%, {:.0f}%)",
                      h->layer, h->head, shown < int64_t(verse.size()) ? "; over the whole verse," : ":",
                      100 * h->on_previous,
                      100 * h->on_word_start, 100 * even.on_previous, 100 * even.on_word_start),
          h->W.topLeftCorner(shown, shown), labels);
      p.cblabel = "weight";
      p.annotate = false;
      panels.push_back(p);
    }
    const std::string over =
        shown < int64_t(kVerse.size()) ? fmt::format("the first {} characters of Genesis 1:1", shown) : "Genesis 1:1";
    return plot::heatmap_grid(path,
                              fmt::format("{} of the GPT over {} (query rows, key columns; ␣ is a space){}",
                                          panels.size() > 1 ? "Two trained heads" : "A trained head", over,
                                          stands_out ? "" : ": none stands out from even weights yet"),
                              1, int(panels.size()), panels, 640);
  });
}

}  // namespace sa::ch9
