// Chapter 9, step 6: sampling the next character with a temperature and
// top-k, from a fixed distribution: the training text's character
// frequencies, what a model that ignores the context would predict.
#include "09-gpt/steps.hpp"

#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace sa::ch9 {

namespace {

std::string shown_char(char32_t c) { return c == '\n' ? "\\n" : c == ' ' ? "' '" : std::string(1, char(c)); }

}  // namespace

void sampling_demo(const Text& text, const CharVocab& vocab, const Options& o, uint64_t seed) {
  // Logits = log of each character's count in the training text: softmax
  // gives back its frequency. A trained model produces such a row for
  // every position; this one is the same whatever came before.
  std::vector<double> counts(size_t(vocab.size()), 0.0);
  const std::vector<int64_t> ids = encode(vocab, text.train);
  for (int64_t id : ids) counts[size_t(id)] += 1;
  RowVector logits(vocab.size());
  for (int64_t i = 0; i < vocab.size(); ++i) logits(i) = float(std::log(counts[size_t(i)]));

  say("A language model ends with logits over the vocabulary for the next character. Sampling turns them "
      "into a distribution (sampling_probs: divide by the temperature, keep the top-k, softmax) and draws one "
      "token from it (sample_token: torch.multinomial's draws, so PyTorch with the same seed picks the same "
      "characters). Here the logits are the log of each character's count in train.txt: the distribution of a "
      "model that ignores the context.");
  std::vector<int64_t> order(size_t(vocab.size()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logits(a) > logits(b); });

  for (const double temperature : {1.0, o.temperature}) {
    const RowVector probs = sampling_probs(logits, temperature, o.top_k);
    int64_t kept = 0;
    for (int64_t i = 0; i < probs.size(); ++i) kept += probs(i) > 0;
    fmt::print("  temperature {}, top-k {}: {} characters possible; the five most likely:", temperature, o.top_k,
               kept);
    for (size_t r = 0; r < 5; ++r)
      fmt::print(" {} {:.4f}", shown_char(vocab.chars[size_t(order[r])]), probs(order[r]));
    fmt::print("\n");
    // A generator of its own for each temperature, seeded with --seed: the
    // same characters as torch.manual_seed(seed) and torch.multinomial.
    Generator gen(seed);
    std::vector<int64_t> drawn;
    for (int64_t i = 0; i < o.sample_chars; ++i) drawn.push_back(sample_token(probs, gen));
    std::string s = decode(vocab, drawn);
    std::replace(s.begin(), s.end(), '\n', '/');
    fmt::print("    {} characters drawn (newline shown as /): \"{}\"\n", o.sample_chars, s);
  }
  say("Both lines come from the same draws (one generator, seeded alike), so where they differ the lower "
      "temperature picked a likelier character. At temperature 1 the draws follow the text's own frequencies; "
      "below 1 the likely characters (space, e, t) take more of the mass and the rare ones all but vanish. "
      "Neither knows any word: that needs the context, which only the model brings.");
}

}  // namespace sa::ch9
