// The steps of chapter 9's program (main.cpp lists them in order). Each
// prints its values and draws its figures.
//   steps_text.cpp      steps 1 to 3: the text, its vocabulary, a verse encoded and back
//   steps_training.cpp  steps 4 and 5: the learning-rate schedule; clipping and AdamW
//   steps_sampling.cpp  step 6: sampling the next character, temperature and top-k
#pragma once

#include "09-gpt/data.hpp"
#include "09-gpt/gpt.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/paths.hpp"

#include <cstdint>
#include <string>

namespace sa::ch9 {

// The vocabulary of the prepared text's training part. Fixed by the text's
// SHA-256, so options that depend on it (--top-k) are checked before any
// work.
inline constexpr int64_t kVocabSize = 63;

struct Options {
  std::string data_dir = (binary_dir() / "data").string();
  double temperature = 0.5;   // step 6's second temperature (the first is 1)
  int64_t top_k = kVocabSize; // step 6: every character
  int64_t sample_chars = 80;  // characters sampled at each temperature in step 6
};

// Step 1: where the text came from, its size, SHA-256 and split.
void text_demo(const Text& t);
// Step 2: the vocabulary of the training part.
CharVocab vocabulary_demo(const Text& text);
// Step 3: a verse through encode and decode, and the refusals.
void encoding_demo(const CharVocab& vocab);
// Step 4: learning_rate at a few iterations of the default run, and its figure.
void schedule_demo(Figures& figures);
// Step 5: clip_grad_norm and adamw_step on two small tensors.
void optimizer_demo();
// Step 6: the training text's character frequencies as a fixed
// distribution, sampled at temperature 1 and o.temperature.
void sampling_demo(const Text& text, const CharVocab& vocab, const Options& o, uint64_t seed);

}  // namespace sa::ch9
