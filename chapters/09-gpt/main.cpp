// Chapter 9: a small GPT trained on a real book.
//
// The pieces a language model needs beyond chapters 1 to 8, each on real
// data: the King James Bible from Debian's bible-kjv packages, prepared into
// build/data/; a character tokenizer; the learning-rate schedule, gradient
// clipping and AdamW; sampling the next character with a temperature and
// top-k. Then the GPT itself (chapter 7's blocks, chapter 8's tiled
// attention, a tied embedding), trained on the text with nanoGPT's
// character-level recipe for a CPU, saved (with --resume to continue), the
// text it writes with chapter 8's key/value cache, and what two of its
// heads read in a verse. The steps live in steps_*.cpp; ./book generate
// (generate.cpp) writes from the saved model, ./book bench 9 (bench.cpp)
// times it against PyTorch.
#include "09-gpt/steps.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <string>

using namespace sa;
using namespace sa::ch9;

namespace {

void run(int argc, char** argv) {
  Options o;
  Cli cli("09-gpt",
          "Chapter 9: a small GPT trained on a real book. The text (the King James Bible, prepared into "
          "--data-dir), the character vocabulary, the learning-rate schedule, gradient clipping, AdamW and sampling "
          "with a temperature and top-k; then a GPT trained on the text (nanoGPT's shakespeare_char recipe for a "
          "CPU: 2000 iterations, a few minutes on one core; --quick: 200 iterations) and the text it writes.");
  cli.add("--data-dir", &o.data_dir, "folder of the prepared text (kjv.txt, train.txt, val.txt), made on the first run",
          "a folder");
  cli.add("--temperature", &o.temperature, "step 6's second temperature (the first is 1), and step 11's",
          RealRange{kMinTemperature, 100});
  cli.add("--top-k", &o.top_k, "characters kept when sampling in steps 6 and 11 (63: all of them)",
          IntRange{1, kVocabSize});
  cli.add("--sample-chars", &o.sample_chars, "characters sampled at each temperature in step 6", IntRange{1, 2000});
  cli.add_flag("--quick", &o.quick,
               fmt::format("a short run of the same model: --iters {}, --eval-interval {}, --eval-iters {} unless "
                           "given",
                           Options::kQuickIters, Options::kQuickEvalInterval, Options::kQuickEvalIters));
  cli.add("--iters", &o.iters, "training iterations (nanoGPT's max_iters; the schedule decays over all of them)",
          IntRange{1, 1000000});
  cli.add("--batch", &o.batch, "sequences in a training batch", IntRange{1, kMaxBatch});
  cli.add("--seq-len", &o.seq_len, "the context: characters a sequence holds, and rows of the position table",
          IntRange{1, 4096});
  cli.add("--d-model", &o.d_model, "the model's width", IntRange{1, 4096});
  cli.add("--n-heads", &o.n_heads, "attention heads (d_model must be divisible by it)", IntRange{1, 4096});
  cli.add("--n-layers", &o.n_layers, "transformer blocks", IntRange{1, 64});
  cli.add("--lr", &o.lr, "the peak learning rate (min_lr is a tenth of it)", RealRange{0, 1, true, false});
  cli.add("--dropout", &o.dropout,
          "dropout probability in training, on the embedding and on each residual branch (chapter 6's dropout)",
          RealRange{0, 1, false, true});
  cli.add("--eval-interval", &o.eval_interval, "iterations between validation losses", IntRange{1, 1000000});
  cli.add("--eval-iters", &o.eval_iters, "batches of each validation loss", IntRange{1, 10000});
  cli.add("--gen-chars", &o.gen_chars, "characters the trained model writes in step 11", IntRange{1, 100000});
  cli.add("--prompt", &o.prompt, "the text step 11 continues (characters of the vocabulary)",
          "at least one character of the training text");
  cli.add("--checkpoint", &o.checkpoint,
          fmt::format("the file step 10's model is saved to, with AdamW's state and the training generator's, and "
                      "--resume reads (with --quick: {} in the same folder)",
                      kGptQuickCheckpointName),
          "a file");
  cli.add_flag("--resume", &o.resume,
               "continue training the model of --checkpoint from its iteration to --iters (above it), with its "
               "AdamW state and training generator; --seq-len, --d-model, --n-heads, --n-layers, --batch, --lr, "
               "--dropout and --seed are taken from it (given, they must be its own)");
  cli.parse(argc, argv);
  // Every refusal comes before the first line is printed (check_run).
  auto [text, prompt, resumed] = check_run(o, cli);

  Figures figures(cli);
  chapter_title("Chapter 9: a small GPT trained on a real book");
  fmt::print("seed {}; sampling: temperature {}, top-k {}, {} at each temperature in step 6, {} after {} "
             "in step 11\n",
             cli.seed, o.temperature, o.top_k, count_of(o.sample_chars, "character"),
             count_of(o.gen_chars, "character"), quoted_prompt(o.prompt, prompt.size()));
  fmt::print("model: {}, {}, d_model {}, seq_len {}; training: {} of batch {}{}{}\n", count_of(o.n_layers, "layer"),
             count_of(o.n_heads, "head"), o.d_model, o.seq_len, count_of(o.iters, "iteration"), o.batch,
             o.quick ? " (--quick)" : "",
             resumed ? fmt::format(", resumed from iteration {} ({})", o.start_iteration, shown_path(o.checkpoint))
                     : "");

  step(1, "The text: the King James Bible, prepared once");
  text_demo(text);

  step(2, "The vocabulary: every character of the training text");
  const CharVocab vocab = vocabulary_demo(text);

  step(3, "A verse encoded and decoded");
  encoding_demo(vocab);

  step(4, "The learning-rate schedule: warm-up, then cosine decay");
  schedule_demo(o.schedule(), o.start_iteration, figures);

  step(5, "Gradient clipping and AdamW");
  optimizer_demo();

  step(6, "Sampling the next character: temperature and top-k");
  sampling_demo(text, vocab, o, cli.seed);

  // The GPT's weights, then its training batches, from one generator: the
  // twin draws both from torch.manual_seed(seed) in the same order.
  Generator gen(cli.seed);
  TokenData data{encode(vocab, text.train), encode(vocab, text.val)};
  step(7, "The GPT: chapter 7's blocks, chapter 8's attention, one tied embedding");
  Gpt model(o.model_config(), gen);
  model.set_dropout(o.dropout, &gen);  // its masks from the same generator, as nanoGPT's global one
  model_demo(model);
  if (resumed) resume_demo(model, gen, *resumed, o);

  if (resumed) {
    step(8, "The loss of the model read back");
    loaded_loss_demo(model, data, o, cli.seed);
  } else {
    step(8, "The loss before training: about ln(vocab_size)");
    initial_loss_demo(model, data, o, cli.seed);
  }

  step(9, "One training step: the shapes on the way");
  one_step_demo(model, data, o, cli.seed);

  step(10, "Training on the Bible");
  const OptimizerState trained =
      training_run(model, vocab, data, o, cli.seed, gen, figures, resumed ? &*resumed : nullptr);
  save_run_checkpoint(o, model, trained, gen, vocab, cli.seed);
  resumed.reset();  // (its moments are in the optimizer's state now)

  step(11, "The trained model writes");
  generation_demo(model, vocab, o, cli.seed);

  step(12, heads_title(model.config()));
  heads_demo(model, vocab, figures);

  figures.summary();
}

}  // namespace

int main(int argc, char** argv) {
  flush_subnormals_to_zero();  // exp(-inf) of a masked score is 0, not a slow subnormal (tensor.hpp)
  return run_program("09-gpt", [&] { run(argc, argv); });
}
