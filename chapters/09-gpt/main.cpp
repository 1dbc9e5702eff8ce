// Chapter 9: a small GPT trained on a real book.
//
// The pieces a language model needs beyond chapters 1 to 8, each on real
// data: the King James Bible from Debian's bible-kjv packages, prepared into
// build/data/; a character tokenizer; the learning-rate schedule, gradient
// clipping and AdamW that its training will use; and sampling the next
// character with a temperature and top-k. The GPT itself and its training
// are not written yet: the program says so at the end. The steps live in
// steps_*.cpp.
#include "09-gpt/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <filesystem>

using namespace sa;
using namespace sa::ch9;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("09-gpt",
          "Chapter 9: a small GPT trained on a real book. So far: the text (the King James Bible, prepared into "
          "--data-dir), the character vocabulary, the learning-rate schedule, gradient clipping, AdamW and sampling "
          "with a temperature and top-k. The model and its training come next.");
  cli.add("--data-dir", &o.data_dir, "folder of the prepared text (kjv.txt, train.txt, val.txt), made on the first run",
          "a folder");
  cli.add("--temperature", &o.temperature, "step 6's second temperature (the first is 1)",
          RealRange{0, 100, true, false});
  cli.add("--top-k", &o.top_k, "characters kept when sampling in step 6 (63: all of them)", IntRange{1, kVocabSize});
  cli.add("--sample-chars", &o.sample_chars, "characters sampled at each temperature in step 6", IntRange{1, 2000});
  // Every option is bounded by its range: the longest run samples 2 x 2000
  // characters from a distribution of 63, in milliseconds.
  cli.without_budget();
  cli.parse(argc, argv);
  // The default folder is made on the first run; a folder the reader names
  // must exist, so that a typo never leaves 8 MB of text somewhere else.
  if (cli.given("--data-dir") && !o.data_dir.empty() && !std::filesystem::is_directory(o.data_dir))
    throw UsageError(fmt::format("--data-dir '{}' is not a folder (create it, or leave --data-dir out for {})",
                                 o.data_dir, shown_path(Options{}.data_dir)));
  require_writable_dir("--data-dir", o.data_dir, 16.0 * 1024 * 1024);
  // The text is read (or prepared) and checked before anything is printed:
  // a missing package or a damaged file is one line on stderr.
  const Text text = load_text(o.data_dir);

  Figures figures(cli);
  chapter_title("Chapter 9: a small GPT trained on a real book");
  fmt::print("seed {}, temperature {}, top-k {}, sample-chars {}\n", cli.seed, o.temperature, o.top_k,
             o.sample_chars);

  step(1, "The text: the King James Bible, prepared once");
  text_demo(text);

  step(2, "The vocabulary: every character of the training text");
  const CharVocab vocab = vocabulary_demo(text);

  step(3, "A verse encoded and decoded");
  encoding_demo(vocab);

  step(4, "The learning-rate schedule: warm-up, then cosine decay");
  schedule_demo(figures);

  step(5, "Gradient clipping and AdamW");
  optimizer_demo();

  step(6, "Sampling the next character: temperature and top-k");
  sampling_demo(text, vocab, o, cli.seed);

  gap();
  say("Not written yet: the GPT itself (pre-norm blocks with chapter 8's tiled attention, weight tying), its "
      "training on train.txt and its validation loss, generation from a prompt with the key/value cache, and the "
      "PyTorch twin that checks it. They come next; nothing above was trained.");
  figures.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("09-gpt", [&] { run(argc, argv); });
}
