// Chapter 9, step 6: sampling the next character with a temperature and
// top-k, from a fixed distribution: the training text's character
// frequencies, what a model that ignores the context would predict.
#include "09-gpt/steps.hpp"

#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
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
    const size_t shown = size_t(std::min<int64_t>(5, kept));
    fmt::print("  temperature {}, top-k {}: {} possible; the {} most likely:", temperature, o.top_k,
               count_of(kept, "character"), std::array{"one", "two", "three", "four", "five"}[shown - 1]);
    for (size_t r = 0; r < shown; ++r)
      fmt::print(" {} {:.4f}", shown_char(vocab.chars[size_t(order[r])]), probs(order[r]));
    fmt::print("\n");
    // A generator of its own for each temperature, seeded with --seed: the
    // same characters as torch.manual_seed(seed) and torch.multinomial.
    Generator gen(seed);
    std::vector<int64_t> drawn;
    for (int64_t i = 0; i < o.sample_chars; ++i) drawn.push_back(sample_token(probs, gen));
    std::string s = decode(vocab, drawn);
    std::replace(s.begin(), s.end(), '\n', '/');
    fmt::print("    {} drawn (newline shown as /): \"{}\"\n", count_of(o.sample_chars, "character"), s);
  }
  // What the two lines show depends on the options: said only where true.
  const bool all_kept = o.top_k >= vocab.size();
  std::string why;
  if (o.top_k == 1) {
    say("With top-k 1 only the likeliest character is left: every draw picks it, at any temperature. Neither "
        "line knows any word: that needs the context, which only the model brings.");
    return;
  }
  if (o.temperature == 1.0)
    why = "Both lines are the same: the second temperature is 1 too, and the draws are the same. ";
  else
    why = fmt::format(
        "Both lines come from the same draws (two generators seeded alike), so where they differ the {} "
        "temperature picked a {} character. ",
        o.temperature < 1 ? "lower" : "higher", o.temperature < 1 ? "likelier" : "less likely");
  // What the second temperature does: below 1, above 1, or 1 itself.
  struct Effect {
    const char *below, *above, *at_one;
  };
  const Effect effect =
      all_kept ? Effect{"below 1 the likely characters (space, e, t) take more of the mass and the rare ones all but "
                        "vanish. ",
                        "above 1 the mass spreads towards the rare characters, and the text gets noisier. ",
                        "a temperature below 1 would sharpen them, one above 1 flatten them. "}
               : Effect{"a temperature below 1 gives the likeliest of them still more of it. ",
                        "a temperature above 1 spreads it more evenly among them. ",
                        "a temperature below 1 would sharpen their shares, one above 1 flatten them. "};
  why += all_kept ? std::string("At temperature 1 the draws follow the text's own frequencies; ")
                  : fmt::format("Top-k keeps the {} likeliest characters and shares their mass among them; ", o.top_k);
  why += o.temperature < 1 ? effect.below : o.temperature > 1 ? effect.above : effect.at_one;
  say(why + "Neither line knows any word: that needs the context, which only the model brings.");
}

}  // namespace sa::ch9
